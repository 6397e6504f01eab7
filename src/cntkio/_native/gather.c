/* cntkio._native._gather: the packer's gathers straight into the output's memory.
 *
 * gather_rows: whole sequences' rows from a chunk array whose rows are each contiguous but lie at
 * any stride (a CBF chunk of one-sample sequences is a strided view of the mapped file: the
 * samples sit between their blocks' headers), into consecutive rows of the output; one memcpy per
 * row (or per segment when the rows are packed), no index array. Every bound is checked before
 * the first copy, and the copies run without the GIL.
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

static PyMethodDef methods[] = {
    {"gather_rows", py_gather_rows, METH_VARARGS,
     "gather_rows(src, src_starts, dst, dst_starts, lengths): row-segment gather from rows at any stride."},
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
