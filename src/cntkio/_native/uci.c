/* UCIFastReader text: one record per line, space- or tab-delimited columns, no names.
 *
 * Two entry points, both working on a buffer (mmap or bytes) and releasing the GIL:
 *
 *   index_records(buf, records_per_chunk, bytes_per_chunk)
 *       -> (begin int64[C], end int64[C], count int64[C], first_line int64[C])
 *       Chunks of whole lines: `records_per_chunk` records each when > 0, else about
 *       `bytes_per_chunk` bytes. Blank lines (only spaces, tabs, CR) are not records.
 *
 *   parse_records(buf, begin, end, first_line, colmap int32[K], values (tuple of float32/64
 *                 [N, V_i] arrays, one dtype), spans int64[N, L, 2], bad uint8[N])
 *       -> (records, list of (record, line, column, code))
 *       Parses the records of [begin, end): column j < K goes to values[colmap[j] >> 16][:,
 *       colmap[j] & 0xFFFF] when colmap[j] >= 0, its token's byte span to spans[:, -2 -
 *       colmap[j]] when colmap[j] <= -2, and is skipped (still checked to be a token) when -1.
 *       Columns past K are ignored.
 *       A record with an error is flagged in `bad` and reported: code 1 = too few columns
 *       (column = the number found), 2 = not a number (column = the 0-based column).
 *
 * Numbers go through the CTF parser's correctly rounded conversion (ctf_number.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include "uci_core.h"

static PyObject *to_array(uci_i64vec *a) {
    npy_intp dims[1] = {(npy_intp)a->n};
    PyObject *arr = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (arr && a->n) memcpy(PyArray_DATA((PyArrayObject *)arr), a->v, (size_t)a->n * sizeof(int64_t));
    free(a->v);
    a->v = NULL;
    return arr;
}

static PyObject *py_index_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long per_chunk, bytes_per_chunk;
    if (!PyArg_ParseTuple(args, "y*LL", &view, &per_chunk, &bytes_per_chunk)) return NULL;
    uci_i64vec v[4] = {{0}, {0}, {0}, {0}};
    int oom;
    Py_BEGIN_ALLOW_THREADS
    oom = uci_index(view.buf, (int64_t)view.len, per_chunk, bytes_per_chunk, v);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (oom) {
        for (int k = 0; k < 4; k++) free(v[k].v);
        return PyErr_NoMemory();
    }
    PyObject *ab = to_array(&v[0]), *ae = to_array(&v[1]), *ac = to_array(&v[2]), *al = to_array(&v[3]);
    if (!ab || !ae || !ac || !al) {
        Py_XDECREF(ab); Py_XDECREF(ae); Py_XDECREF(ac); Py_XDECREF(al);
        return NULL;
    }
    return Py_BuildValue("NNNN", ab, ae, ac, al);
}

static int writable_c(PyArrayObject *a) {
    return PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISWRITEABLE(a);
}

static PyObject *py_parse_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long begin, end_off, first_line;
    PyArrayObject *colmap_o, *spans_o, *bad_o;
    PyObject *values_t;
    if (!PyArg_ParseTuple(args, "y*LLLO!O!O!O!", &view, &begin, &end_off, &first_line,
                          &PyArray_Type, &colmap_o, &PyTuple_Type, &values_t,
                          &PyArray_Type, &spans_o, &PyArray_Type, &bad_o))
        return NULL;
    uci_outputs o;
    memset(&o, 0, sizeof o);
    o.nout = PyTuple_GET_SIZE(values_t);
    o.nrec = PyArray_NDIM(bad_o) == 1 ? PyArray_DIM(bad_o, 0) : -1;
    o.is32 = 1;
    const char *err = NULL;
    if (!(PyArray_TYPE(colmap_o) == NPY_INT32 && PyArray_NDIM(colmap_o) == 1 && PyArray_IS_C_CONTIGUOUS(colmap_o) &&
          PyArray_TYPE(spans_o) == NPY_INT64 && PyArray_NDIM(spans_o) == 3 && writable_c(spans_o) &&
          PyArray_DIM(spans_o, 2) == 2 && PyArray_TYPE(bad_o) == NPY_UINT8 && writable_c(bad_o) && o.nrec >= 0 &&
          PyArray_DIM(spans_o, 0) == o.nrec && o.nout <= UCI_MAX_OUT))
        err = "parse_records: bad argument types, shapes or range";
    for (Py_ssize_t i = 0; !err && i < o.nout; i++) {
        PyObject *v = PyTuple_GET_ITEM(values_t, i);
        if (!PyArray_Check(v)) { err = "parse_records: bad argument types, shapes or range"; break; }
        PyArrayObject *a = (PyArrayObject *)v;
        int t = PyArray_TYPE(a);
        if (i == 0) o.is32 = t == NPY_FLOAT32;
        if (!((t == NPY_FLOAT32 || t == NPY_FLOAT64) && (t == NPY_FLOAT32) == o.is32 &&
              PyArray_NDIM(a) == 2 && writable_c(a) && PyArray_DIM(a, 0) == o.nrec))
            err = "parse_records: bad argument types, shapes or range";
        o.vdata[i] = PyArray_DATA(a);
        o.vcols[i] = PyArray_NDIM(a) == 2 ? PyArray_DIM(a, 1) : -1;
    }
    if (!err) {
        o.colmap = PyArray_DATA(colmap_o);
        o.ncols = PyArray_DIM(colmap_o, 0);
        o.nspan = PyArray_DIM(spans_o, 1);
        o.spans = PyArray_DATA(spans_o);
        o.bad = PyArray_DATA(bad_o);
        err = uci_check_args(&o, (int64_t)view.len, begin, end_off, first_line);
    }
    if (err) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    uci_err *errs = NULL;
    int64_t nerr = 0, rec;
    Py_BEGIN_ALLOW_THREADS
    rec = uci_parse(view.buf, begin, end_off, first_line, &o, &errs, &nerr);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (rec < 0) { free(errs); return PyErr_NoMemory(); }
    PyObject *list = PyList_New((Py_ssize_t)nerr);
    if (!list) { free(errs); return NULL; }
    for (int64_t i = 0; i < nerr; i++) {
        PyObject *tup = Py_BuildValue("LLLL", (long long)errs[i].record, (long long)errs[i].line,
                                      (long long)errs[i].column, (long long)errs[i].code);
        if (!tup) { Py_DECREF(list); free(errs); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, tup);
    }
    free(errs);
    return Py_BuildValue("nN", (Py_ssize_t)rec, list);
}

static PyMethodDef methods[] = {
    {"index_records", py_index_records, METH_VARARGS,
     "index_records(buf, records_per_chunk, bytes_per_chunk) -> (begin, end, count, first_line)"},
    {"parse_records", py_parse_records, METH_VARARGS,
     "parse_records(buf, begin, end, first_line, colmap, values, spans, bad) -> (records, errors)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_uci",
                                    "UCIFastReader text indexing and parsing", -1, methods};

PyMODINIT_FUNC PyInit__uci(void) {
    import_array();
    if (ctf_number_init() != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot create the C locale for number parsing");
        return NULL;
    }
    return PyModule_Create(&moddef);
}
