/* cntkio._native._gather: the packer's gathers straight into the output's memory.
 *
 * gather_rows: whole sequences' rows from a chunk array whose rows are each contiguous but lie at
 * any stride (a CBF chunk of one-sample sequences is a strided view of the mapped file: the
 * samples sit between their blocks' headers), into consecutive rows of the output; one memcpy per
 * row (or per segment when the rows are packed), no index array. Every bound is checked before
 * the first copy, and the copies run without the GIL.
 *
 * gather_ids: one-hot sparse sequences (CSR in their chunk) straight into the padded int64
 * token-id rows of a tensor-ready batch, one pass, checking each sample is one-hot on the way.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

/* The bytes of one row of ``a`` (its dims after the first), when they are contiguous; -1 if not. */
static npy_intp contiguous_row_bytes(PyArrayObject *a)
{
    npy_intp row = PyArray_ITEMSIZE(a);
    for (int d = PyArray_NDIM(a) - 1; d >= 1; d--) {
        if (PyArray_DIM(a, d) > 1 && PyArray_STRIDE(a, d) != row)
            return -1;
        row *= PyArray_DIM(a, d);
    }
    return row;
}

/* gather_rows(src, src_starts int64[n], dst, dst_starts int64[n], lengths int64[n]) -> None
 *
 * dst[dst_starts[i] : + lengths[i]] = src[src_starts[i] : + lengths[i]] along the first axis, for
 * src whose rows are contiguous at any non-negative first-axis stride, dst C-contiguous. */
static PyObject *py_gather_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *src_o, *ss_o, *dst_o, *ds_o, *len_o;
    if (!PyArg_ParseTuple(args, "OOOOO", &src_o, &ss_o, &dst_o, &ds_o, &len_o))
        return NULL;
    if (!PyArray_Check(src_o) || !PyArray_Check(dst_o)) {
        PyErr_SetString(PyExc_TypeError, "gather_rows: src and dst must be numpy arrays");
        return NULL;
    }
    PyArrayObject *src = (PyArrayObject *)src_o, *dst = (PyArrayObject *)dst_o;
    if (!PyArray_IS_C_CONTIGUOUS(dst) || !PyArray_ISWRITEABLE(dst) || PyArray_NDIM(src) < 1 ||
        PyArray_NDIM(src) != PyArray_NDIM(dst) || !PyArray_EquivTypes(PyArray_DESCR(src), PyArray_DESCR(dst))) {
        PyErr_SetString(PyExc_ValueError, "gather_rows: dst must be a writeable C-contiguous array of src's "
                        "dtype and rank");
        return NULL;
    }
    for (int d = 1; d < PyArray_NDIM(src); d++) {
        if (PyArray_DIM(src, d) != PyArray_DIM(dst, d)) {
            PyErr_SetString(PyExc_ValueError, "gather_rows: src and dst rows differ in shape");
            return NULL;
        }
    }
    npy_intp row = contiguous_row_bytes(src);
    npy_intp stride = PyArray_STRIDE(src, 0);
    if (row < 0 || (PyArray_DIM(src, 0) > 1 && stride < row)) {
        PyErr_SetString(PyExc_ValueError, "gather_rows: src rows must be contiguous and must not overlap");
        return NULL;
    }
    PyArrayObject *ss = (PyArrayObject *)PyArray_FROMANY(ss_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *ds = ss ? (PyArrayObject *)PyArray_FROMANY(ds_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyArrayObject *ln = ds ? (PyArrayObject *)PyArray_FROMANY(len_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyObject *result = NULL;
    if (!ln)
        goto done;
    npy_intp n = PyArray_DIM(ln, 0);
    if (PyArray_DIM(ss, 0) != n || PyArray_DIM(ds, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "gather_rows: starts and lengths differ in size");
        goto done;
    }
    const int64_t *a = (const int64_t *)PyArray_DATA(ss);
    const int64_t *b = (const int64_t *)PyArray_DATA(ds);
    const int64_t *l = (const int64_t *)PyArray_DATA(ln);
    npy_intp ns = PyArray_DIM(src, 0), nd = PyArray_DIM(dst, 0);
    for (npy_intp i = 0; i < n; i++) {
        if (l[i] < 0 || a[i] < 0 || b[i] < 0 || a[i] > ns - l[i] || b[i] > nd - l[i]) {
            PyErr_Format(PyExc_IndexError, "gather_rows: segment %zd (src %lld, dst %lld, length %lld) is "
                         "outside src (%zd rows) or dst (%zd rows)", (Py_ssize_t)i, (long long)a[i],
                         (long long)b[i], (long long)l[i], (Py_ssize_t)ns, (Py_ssize_t)nd);
            goto done;
        }
    }
    const char *sp = (const char *)PyArray_DATA(src);
    char *dp = (char *)PyArray_DATA(dst);
    Py_BEGIN_ALLOW_THREADS
    if (stride == row) {
        for (npy_intp i = 0; i < n; i++)
            if (l[i])
                memcpy(dp + b[i] * row, sp + a[i] * row, (size_t)(l[i] * row));
    } else {
        for (npy_intp i = 0; i < n; i++) {
            const char *s = sp + a[i] * stride;
            char *d = dp + b[i] * row;
            for (int64_t k = 0; k < l[i]; k++, s += stride, d += row)
                memcpy(d, s, (size_t)row);
        }
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(ss);
    Py_XDECREF(ds);
    Py_XDECREF(ln);
    return result;
}

/* gather_ids(indptr int64[], indices int32[], data float32|float64[], row0 int64[n], lens int64[n],
 *            out int64[], out_base int64[n], widths int64[n], pad) -> int
 *
 * One-hot sparse sequences straight into padded token-id rows: sequence i's samples are rows
 * row0[i] .. row0[i] + lens[i] of a CSR chunk stream; each must hold exactly one non-zero, of value
 * 1, whose column is its token id: out[out_base[i] + k] = that id, and the row is padded with
 * ``pad`` up to widths[i]. Returns -1, or the first sequence that is not one-hot (the caller then
 * takes the general path, which names the sample). Bounds are checked before the first write. */
static PyObject *py_gather_ids(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *ip_o, *ix_o, *dt_o, *r0_o, *ln_o, *out_o, *ob_o, *w_o;
    long long pad;
    if (!PyArg_ParseTuple(args, "OOOOOOOOL", &ip_o, &ix_o, &dt_o, &r0_o, &ln_o, &out_o, &ob_o, &w_o, &pad))
        return NULL;
    if (!PyArray_Check(dt_o) || (PyArray_TYPE((PyArrayObject *)dt_o) != NPY_FLOAT32 &&
                                 PyArray_TYPE((PyArrayObject *)dt_o) != NPY_FLOAT64)) {
        PyErr_SetString(PyExc_TypeError, "gather_ids: data must be a float32 or float64 array");
        return NULL;
    }
    if (!PyArray_Check(out_o) || PyArray_TYPE((PyArrayObject *)out_o) != NPY_INT64 ||
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)out_o) || !PyArray_ISWRITEABLE((PyArrayObject *)out_o)) {
        PyErr_SetString(PyExc_TypeError, "gather_ids: out must be a writeable C-contiguous int64 array");
        return NULL;
    }
    PyArrayObject *ip = (PyArrayObject *)PyArray_FROMANY(ip_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *ix = ip ? (PyArrayObject *)PyArray_FROMANY(ix_o, NPY_INT32, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyArrayObject *dt = ix ? (PyArrayObject *)PyArray_FROMANY(dt_o, PyArray_TYPE((PyArrayObject *)dt_o), 1, 1,
                                                              NPY_ARRAY_IN_ARRAY) : NULL;
    PyArrayObject *r0 = dt ? (PyArrayObject *)PyArray_FROMANY(r0_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyArrayObject *ln = r0 ? (PyArrayObject *)PyArray_FROMANY(ln_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyArrayObject *ob = ln ? (PyArrayObject *)PyArray_FROMANY(ob_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyArrayObject *wd = ob ? (PyArrayObject *)PyArray_FROMANY(w_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyObject *result = NULL;
    if (!wd)
        goto done;
    npy_intp n = PyArray_DIM(ln, 0);
    if (PyArray_DIM(r0, 0) != n || PyArray_DIM(ob, 0) != n || PyArray_DIM(wd, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "gather_ids: row0, lens, out_base and widths differ in size");
        goto done;
    }
    const int64_t *p = (const int64_t *)PyArray_DATA(ip);
    const int32_t *x = (const int32_t *)PyArray_DATA(ix);
    const int64_t *a = (const int64_t *)PyArray_DATA(r0), *l = (const int64_t *)PyArray_DATA(ln);
    const int64_t *b = (const int64_t *)PyArray_DATA(ob), *w = (const int64_t *)PyArray_DATA(wd);
    npy_intp rows = PyArray_DIM(ip, 0) - 1, nnz = PyArray_DIM(ix, 0), nout = PyArray_SIZE((PyArrayObject *)out_o);
    if (PyArray_DIM(dt, 0) != nnz || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "gather_ids: indices and data differ in size");
        goto done;
    }
    for (npy_intp i = 0; i < n; i++) {
        if (l[i] < 0 || a[i] < 0 || a[i] > rows - l[i] || w[i] < l[i] || b[i] < 0 || b[i] > nout - w[i]) {
            PyErr_Format(PyExc_IndexError, "gather_ids: sequence %zd (rows %lld + %lld, out %lld + %lld) is outside "
                         "the stream (%zd rows) or out (%zd cells)", (Py_ssize_t)i, (long long)a[i],
                         (long long)l[i], (long long)b[i], (long long)w[i], (Py_ssize_t)rows, (Py_ssize_t)nout);
            goto done;
        }
        if (l[i] && (p[a[i]] < 0 || p[a[i] + l[i]] > nnz || p[a[i] + l[i]] < p[a[i]])) {
            PyErr_Format(PyExc_IndexError, "gather_ids: sequence %zd's non-zeros are outside the stream's %zd",
                         (Py_ssize_t)i, (Py_ssize_t)nnz);
            goto done;
        }
    }
    int64_t *o = (int64_t *)PyArray_DATA((PyArrayObject *)out_o);
    int f64 = PyArray_TYPE(dt) == NPY_FLOAT64;
    const float *d32 = (const float *)PyArray_DATA(dt);
    const double *d64 = (const double *)PyArray_DATA(dt);
    npy_intp bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < n && bad < 0; i++) {
        int64_t *row = o + b[i];
        const int64_t *pp = p + a[i];
        const int64_t end = pp[l[i]];      /* checked above: within [pp[0], nnz] */
        for (int64_t k = 0; k < l[i]; k++) {
            int64_t e = pp[k];
            if (e < pp[0] || e >= end || pp[k + 1] - e != 1 || (f64 ? d64[e] != 1.0 : d32[e] != 1.0f)) {
                bad = i;
                break;
            }
            row[k] = x[e];
        }
        for (int64_t k = l[i]; k < w[i]; k++)
            row[k] = (int64_t)pad;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(bad);
done:
    Py_XDECREF(ip);
    Py_XDECREF(ix);
    Py_XDECREF(dt);
    Py_XDECREF(r0);
    Py_XDECREF(ln);
    Py_XDECREF(ob);
    Py_XDECREF(wd);
    return result;
}

static PyMethodDef methods[] = {
    {"gather_rows", py_gather_rows, METH_VARARGS,
     "gather_rows(src, src_starts, dst, dst_starts, lengths): row-segment gather from rows at any stride."},
    {"gather_ids", py_gather_ids, METH_VARARGS,
     "gather_ids(indptr, indices, data, row0, lens, out, out_base, widths, pad) -> -1 or the first sequence "
     "that is not one-hot: one-hot CSR sequences as padded int64 token-id rows."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_gather", "The packer's gathers into the output's memory (GIL released).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__gather(void)
{
    import_array();
    return PyModule_Create(&moduledef);
}
