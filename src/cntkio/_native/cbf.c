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
 *
 * sparse_fill does a sparse stream's walk and its CSR assembly in one pass over the blocks: as it
 * steps from block to block it copies the values, the row indices (checked against dim) and the
 * per-sample counts (checked >= 0, summing to the block's nnz, as an int64 indptr). One pass
 * reads each byte once and in file order (the walk alone steps block to block, a dependent load
 * per block, and three gathers then read the same bytes again). It is exact or nothing: on any
 * count or index the layout does not allow it returns None, and the caller takes the walk and
 * the NumPy assembly, which name the sequence, the sample and the field in their error
 * (cntkio/deserializers/cbf/deserializer.py, _sparse: the tested twin).
 */
#include <stdlib.h>
#include <string.h>
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdint.h>
#include "cbf_core.h"

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
    const int64_t total = (int64_t)(view.len / 4);
    if (cbf_max_sequences(total, pos, sparse) < (int64_t)n) {   /* more blocks than the chunk holds */
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
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
    int64_t *s = (int64_t *)PyArray_DATA(starts), *k = (int64_t *)PyArray_DATA(counts);
    int64_t *z = sparse ? (int64_t *)PyArray_DATA(nnz) : NULL;
    int64_t end = 0;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = cbf_walk(words, total, (int64_t)pos, (int64_t)n, sparse, (int64_t)w, s, k, z, &end);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!ok) {
        Py_DECREF(starts); Py_DECREF(counts); Py_XDECREF(nnz);
        Py_RETURN_NONE;
    }
    PyObject *nz_obj = sparse ? (PyObject *)nnz : Py_None;
    if (!sparse)
        Py_INCREF(Py_None);
    return Py_BuildValue("(NNNL)", starts, counts, nz_obj, (long long)end);
}


/* A small pool of the output buffers of earlier chunks. Fresh memory costs a page fault and the
 * kernel zeroing each page on first touch, which cost more than the copying itself (a 17 MB
 * stream of sparse.cbf: 8 ms from fresh memory, 2 ms into memory touched before). A buffer whose
 * arrays are released comes back here (up to POOL_N buffers, POOL_BYTES in all; beyond that it is
 * freed) and serves a later chunk needing no more than its capacity (and not under half of it). Every pool operation runs
 * with the GIL held (before the fill releases it, and in the capsule destructor). */
#define POOL_N 16
#define POOL_BYTES ((size_t)512 << 20)
static struct { void *p; size_t cap; } pool[POOL_N];
static size_t pool_bytes;

static void *pool_get(size_t need, size_t *cap)
{
    int best = -1;
    for (int i = 0; i < POOL_N; i++)
        if (pool[i].p && pool[i].cap >= need && pool[i].cap <= 2 * need + ((size_t)1 << 20) &&
            (best < 0 || pool[i].cap < pool[best].cap))
            best = i;
    if (best >= 0) {
        void *p = pool[best].p;
        *cap = pool[best].cap;
        pool_bytes -= pool[best].cap;
        pool[best].p = NULL;
        return p;
    }
    *cap = need ? need : 1;
    return malloc(*cap);
}

static void pool_put(void *p, size_t cap)
{
    if (!p)
        return;
    if (pool_bytes + cap <= POOL_BYTES)
        for (int i = 0; i < POOL_N; i++)
            if (!pool[i].p) {
                pool[i].p = p;
                pool[i].cap = cap;
                pool_bytes += cap;
                return;
            }
    free(p);
}

static void release_capsule(PyObject *cap)
{
    pool_put(PyCapsule_GetPointer(cap, NULL), (size_t)(uintptr_t)PyCapsule_GetContext(cap));
}

/* A 1-D array of n items of `type` over a pooled buffer of capacity `cap` bytes, which goes back
 * to the pool with the array (through a capsule base). */
static PyObject *own_array(void *mem, size_t capacity, npy_intp n, int type)
{
    PyObject *cap = PyCapsule_New(mem, NULL, release_capsule);
    if (!cap) {
        pool_put(mem, capacity);
        return NULL;
    }
    if (PyCapsule_SetContext(cap, (void *)(uintptr_t)capacity) < 0) {
        Py_DECREF(cap);
        return NULL;
    }
    npy_intp dims[1] = {n};
    PyObject *arr = PyArray_SimpleNewFromData(1, dims, type, mem);
    if (!arr) {
        Py_DECREF(cap);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* sparse_fill(words, pos, lengths, w, dim)
 *   -> (starts, counts, nnz, end, data_words, indices, indptr) | None
 * words: the chunk as uint32 words; pos: the stream's first block; lengths: int64 per-sequence
 * sample counts of the chunk (a stream's count may not exceed them); w: words per value (1 float32,
 * 2 float64); dim: the stream's dimension. data_words is uint32 (view it as the stream's dtype),
 * indices int32, indptr int64 (samples + 1 entries, from 0). */
static PyObject *py_sparse_fill(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view, lview;
    Py_ssize_t pos;
    long long w, dim;
    if (!PyArg_ParseTuple(args, "y*ny*LL", &view, &pos, &lview, &w, &dim))
        return NULL;
    if (pos < 0 || w < 1 || w > 2 || dim < 1 || dim > 0x7FFFFFFFLL || view.len % 4 ||
        lview.len % 8) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&lview);
        PyErr_SetString(PyExc_ValueError, "sparse_fill: bad arguments");
        return NULL;
    }
    const Py_ssize_t n = lview.len / 8;
    const int64_t *lengths = (const int64_t *)lview.buf;
    const uint32_t *words = (const uint32_t *)view.buf;
    const int64_t total = (int64_t)(view.len / 4);
    if (cbf_max_sequences(total, pos, 1) < (int64_t)n) {      /* more blocks than the chunk holds */
        PyBuffer_Release(&view);
        PyBuffer_Release(&lview);
        Py_RETURN_NONE;
    }
    /* capacities from the chunk's size: every non-zero takes w + 1 words, every sample one */
    int64_t cap_nz, cap_samples;
    cbf_sparse_capacity(total, pos, lengths, n, w, &cap_nz, &cap_samples);
    npy_intp dims[1] = {n};
    PyArrayObject *starts = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    PyArrayObject *counts = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    PyArrayObject *nnz = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    size_t dcap, icap, pcap;  /* capacities in bytes (pooled buffers may be larger) */
    uint32_t *data = pool_get((size_t)(cap_nz * w) * 4, &dcap);
    int32_t *indices = pool_get((size_t)cap_nz * 4, &icap);
    int64_t *indptr = pool_get((size_t)(cap_samples + 1) * 8, &pcap);
    if (!starts || !counts || !nnz || !data || !indices || !indptr) {
        Py_XDECREF(starts); Py_XDECREF(counts); Py_XDECREF(nnz);
        pool_put(data, dcap); pool_put(indices, icap); pool_put(indptr, pcap);
        PyBuffer_Release(&view);
        PyBuffer_Release(&lview);
        return PyErr_NoMemory();
    }
    int64_t *s = (int64_t *)PyArray_DATA(starts), *k = (int64_t *)PyArray_DATA(counts);
    int64_t *z = (int64_t *)PyArray_DATA(nnz);
    int64_t p = 0, dn = 0, sn = 0;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = cbf_sparse_fill(words, total, (int64_t)pos, lengths, (int64_t)n, (int64_t)w, (int64_t)dim, cap_nz,
                         cap_samples, s, k, z, data, indices, indptr, &p, &dn, &sn);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyBuffer_Release(&lview);
    if (!ok) {
        Py_DECREF(starts); Py_DECREF(counts); Py_DECREF(nnz);
        pool_put(data, dcap); pool_put(indices, icap); pool_put(indptr, pcap);
        Py_RETURN_NONE;
    }
    PyObject *d_obj = own_array(data, dcap, (npy_intp)(dn * w), NPY_UINT32);
    PyObject *i_obj = d_obj ? own_array(indices, icap, (npy_intp)dn, NPY_INT32)
                            : (pool_put(indices, icap), NULL);
    PyObject *p_obj = i_obj ? own_array(indptr, pcap, (npy_intp)(sn + 1), NPY_INT64)
                            : (pool_put(indptr, pcap), NULL);
    if (!p_obj) {
        Py_XDECREF(d_obj); Py_XDECREF(i_obj);
        Py_DECREF(starts); Py_DECREF(counts); Py_DECREF(nnz);
        return NULL;
    }
    return Py_BuildValue("(NNNLNNN)", starts, counts, nnz, (long long)p, d_obj, i_obj, p_obj);
}

/* sparse_emit(out, starts, values, indices, indptr, offsets, w) -> None
 * The writer's twin of sparse_fill: lays out one sparse stream's blocks into `out` (uint32 words)
 * in one pass: per sequence i (samples offsets[i]..offsets[i+1] of the CSR), at word starts[i]:
 * the sample count, the nnz, the values (w words each, from `values` as uint32 words), the row
 * indices (from `indices`, int32) and the per-sample counts (indptr differences, as int32). Every
 * range is checked before anything is written; a bad argument raises ValueError. */
static PyObject *py_sparse_emit(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer ob, sb, vb, ib, pb, fb;
    long long w;
    if (!PyArg_ParseTuple(args, "w*y*y*y*y*y*L", &ob, &sb, &vb, &ib, &pb, &fb, &w))
        return NULL;
    const char *err = NULL;
    const Py_ssize_t n = sb.len / 8;
    if (w < 1 || w > 2 || ob.len % 4 || sb.len % 8 || vb.len % 4 || ib.len % 4 || pb.len % 8 ||
        fb.len % 8 || fb.len / 8 != n + 1)
        err = "sparse_emit: bad arguments";
    uint32_t *out = (uint32_t *)ob.buf;
    const int64_t *starts = (const int64_t *)sb.buf, *indptr = (const int64_t *)pb.buf;
    const int64_t *off = (const int64_t *)fb.buf;
    const uint32_t *vals = (const uint32_t *)vb.buf, *rows = (const uint32_t *)ib.buf;
    /* check every range first (GIL held, cheap: two reads per sequence) */
    if (!err)
        err = cbf_emit_check(n, starts, off, indptr, pb.len / 8, ob.len / 4, vb.len / 4, ib.len / 4, w);
    if (!err) {
        Py_BEGIN_ALLOW_THREADS
        cbf_sparse_emit(out, n, starts, off, indptr, vals, rows, w);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&ob); PyBuffer_Release(&sb); PyBuffer_Release(&vb);
    PyBuffer_Release(&ib); PyBuffer_Release(&pb); PyBuffer_Release(&fb);
    if (err) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* pooled(nbytes) -> uint8[nbytes]: an uninitialized array over a buffer of the pool above (one
 * an earlier array released, when one fits: no fresh page to fault in and zero), which goes back
 * to the pool when the array and every view of it are gone. For chunk reads (ranges.py). */
static PyObject *py_pooled(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "pooled: nbytes must be >= 0");
        return NULL;
    }
    size_t cap;
    void *mem = pool_get((size_t)n, &cap);
    if (!mem)
        return PyErr_NoMemory();
    return own_array(mem, cap, (npy_intp)n, NPY_UINT8);
}

static PyMethodDef methods[] = {
    {"pooled", py_pooled, METH_VARARGS,
     "pooled(nbytes) -> uint8 array: memory from the module's pool of released buffers (back to it "
     "when the array and its views are gone)."},
    {"walk", py_walk, METH_VARARGS,
     "walk(words, pos, n, sparse, w) -> (starts, counts, nnz or None, end), or None when a count "
     "runs past the chunk (the caller's Python walk then names the error)."},
    {"sparse_fill", py_sparse_fill, METH_VARARGS,
     "sparse_fill(words, pos, lengths, w, dim) -> (starts, counts, nnz, end, data_words, indices, "
     "indptr), a sparse stream's walk and CSR in one pass, or None on any count or index the "
     "layout does not allow (the caller's walk and NumPy assembly then name the error)."},
    {"sparse_emit", py_sparse_emit, METH_VARARGS,
     "sparse_emit(out, starts, values, indices, indptr, offsets, w): a sparse stream's blocks laid "
     "out into out in one pass (the writer's twin of sparse_fill); ValueError on a bad range."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_cbf", "The CBF chunk walk and sparse assembly in C (GIL released).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cbf(void)
{
    import_array();
    return PyModule_Create(&moduledef);
}
