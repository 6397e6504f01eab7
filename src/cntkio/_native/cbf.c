/* cntkio._native._cbf: the walk over a CBF chunk's sequence blocks, in C.
 *
 * A CBF chunk holds, per stream, one block per sequence; a block's size depends on the counts at
 * its start (dense: u32 samples, then samples * sample_words words; sparse: u32 samples, i32 nnz,
 * then nnz * (value_words + 1) + samples words), so finding the blocks is a walk. This does the
 * walk without the GIL and without a Python object per sequence. It only locates: on any count
 * that runs past the chunk's end (or a negative nnz) it returns None, and the caller repeats the
 * walk in Python (cntkio/deserializers/cbf/layout.py, the readable twin), which names the
 * sequence and the field in its error. The two must agree on every valid chunk
 * (tests/deserializers/cbf/test_cbf_format.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdint.h>

/* walk(words, pos, n, sparse, w) -> (starts, counts, nnz or None, end) | None
 * words: the chunk as uint32 words (any contiguous buffer); pos: the first block's word;
 * n: sequences; sparse: 0/1; w: dense sample words, or sparse value words. */
static PyObject *py_walk(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t pos, n;
    int sparse;
    long long w;
    if (!PyArg_ParseTuple(args, "y*nnpL", &view, &pos, &n, &sparse, &w))
        return NULL;
    if (n < 0 || pos < 0 || w < 0 || view.len % 4) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "walk: bad arguments");
        return NULL;
    }
    npy_intp dims[1] = {n};
    PyArrayObject *starts = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    PyArrayObject *counts = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    PyArrayObject *nnz = sparse ? (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64) : NULL;
    if (!starts || !counts || (sparse && !nnz)) {
        Py_XDECREF(starts); Py_XDECREF(counts); Py_XDECREF(nnz);
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint32_t *words = (const uint32_t *)view.buf;
    const int64_t total = (int64_t)(view.len / 4);
    int64_t *s = (int64_t *)PyArray_DATA(starts), *k = (int64_t *)PyArray_DATA(counts);
    int64_t *z = sparse ? (int64_t *)PyArray_DATA(nnz) : NULL;
    int64_t p = (int64_t)pos;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!sparse) {
            if (p >= total) { ok = 0; break; }
            const int64_t cnt = words[p];
            const int64_t next = p + 1 + cnt * (int64_t)w;  /* cnt < 2^32, w < 2^31: no overflow */
            if (next > total) { ok = 0; break; }
            s[i] = p; k[i] = cnt; p = next;
        } else {
            if (p + 2 > total) { ok = 0; break; }
            const int64_t cnt = words[p];
            const uint32_t nz = words[p + 1];
            if (nz >= 0x80000000u) { ok = 0; break; }
            const int64_t next = p + 2 + (int64_t)nz * ((int64_t)w + 1) + cnt;
            if (next > total) { ok = 0; break; }
            s[i] = p; k[i] = cnt; z[i] = nz; p = next;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!ok) {
        Py_DECREF(starts); Py_DECREF(counts); Py_XDECREF(nnz);
        Py_RETURN_NONE;
    }
    PyObject *nz_obj = sparse ? (PyObject *)nnz : Py_None;
    if (!sparse)
        Py_INCREF(Py_None);
    return Py_BuildValue("(NNNL)", starts, counts, nz_obj, (long long)p);
}

static PyMethodDef methods[] = {
    {"walk", py_walk, METH_VARARGS,
     "walk(words, pos, n, sparse, w) -> (starts, counts, nnz or None, end), or None when a count "
     "runs past the chunk (the caller's Python walk then names the error)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_cbf", "The CBF chunk walk in C (GIL released).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cbf(void)
{
    import_array();
    return PyModule_Create(&moduledef);
}
