/* cntkio._native._rand: the randomizer's and packer's hot loops in C (cntk-io-semantics 2.5, 2.7).
 *
 * std::mt19937_64 (the standard 64-bit Mersenne Twister), CNTK's two shuffles built on it
 * (the full-range swap of RandomShuffleMT and the window shuffle of the local-timeline
 * randomizer) and the BlockRandomizer's in-window sequence swap loop with its acceptance rule.
 * Every function releases the GIL while it loops. The pure-Python twins live in
 * cntkio/engine/randomizer.py and must give the same numbers (tests/engine/test_engine_randomizer.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "rand_core.h"

static int parse_seed(PyObject *obj, uint64_t *seed)
{
    /* Any Python int, reduced modulo 2**64 (std::mt19937_64 takes a 64-bit seed). */
    PyObject *idx = PyNumber_Index(obj);
    if (!idx)
        return -1;
    unsigned long long v = PyLong_AsUnsignedLongLongMask(idx);
    Py_DECREF(idx);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *seed = (uint64_t)v;
    return 0;
}

/* Parses (seed, n) with n >= 0 for the function `name`; -1 with an exception set otherwise. */
static int parse_seed_n(PyObject *args, const char *name, uint64_t *seed, Py_ssize_t *n)
{
    PyObject *seed_obj;
    if (!PyArg_ParseTuple(args, "On", &seed_obj, n) || parse_seed(seed_obj, seed) < 0)
        return -1;
    if (*n < 0) {
        PyErr_Format(PyExc_ValueError, "%s: n must be >= 0, got %zd", name, *n);
        return -1;
    }
    return 0;
}

/* draws(seed, n) -> uint64[n]: the first n outputs of mt19937_64(seed). */
static PyObject *py_draws(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_ssize_t n;
    uint64_t seed;
    if (parse_seed_n(args, "draws", &seed, &n) < 0)
        return NULL;
    npy_intp dims[1] = {n};
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_UINT64);
    if (!out)
        return NULL;
    uint64_t *o = (uint64_t *)PyArray_DATA(out);
    Py_BEGIN_ALLOW_THREADS
    mt64_t r;
    mt64_seed(&r, seed);
    for (Py_ssize_t i = 0; i < n; i++)
        o[i] = mt64_next(&r);
    Py_END_ALLOW_THREADS
    return (PyObject *)out;
}

/* 0..n-1 shuffled with mt19937_64 seeded with `seed`: for i = 0..n-1 swap i with
 * next64() % n (full_range: CNTK's RandomShuffleMT over a whole vector, not Fisher-Yates) or with
 * i + next64() % (n - i) (the local-timeline randomizer's window shuffle). */
static PyObject *shuffle(PyObject *args, const char *name, int full_range)
{
    Py_ssize_t n;
    uint64_t seed;
    if (parse_seed_n(args, name, &seed, &n) < 0)
        return NULL;
    npy_intp dims[1] = {n};
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!out)
        return NULL;
    int64_t *o = (int64_t *)PyArray_DATA(out);
    Py_BEGIN_ALLOW_THREADS
    rand_shuffle(o, (int64_t)n, seed, full_range);
    Py_END_ALLOW_THREADS
    return (PyObject *)out;
}

/* full_range_shuffle(seed, n) -> int64[n] */
static PyObject *py_full_range_shuffle(PyObject *Py_UNUSED(self), PyObject *args)
{
    return shuffle(args, "full_range_shuffle", 1);
}

/* window_shuffle(seed, n) -> int64[n] */
static PyObject *py_window_shuffle(PyObject *Py_UNUSED(self), PyObject *args)
{
    return shuffle(args, "window_shuffle", 0);
}

static PyArrayObject *as_array(PyObject *obj, int type, const char *name)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, type, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!a)
        PyErr_Format(PyExc_TypeError, "swap_sequences: %s must be a 1-d integer array", name);
    return a;
}

/* swap_sequences(seed, owner int32[N], win_begin int32[C], win_end int32[C], seq_start int64[C+1])
 *   -> (perm int64[N], source int32[N])
 *
 * The in-window sequence shuffle of CNTK's BlockRandomizer. Positions t = 0..N-1 hold sequences
 * in randomized-chunk order; owner[t] is the randomized chunk of position t, window [b, e) of a
 * randomized chunk is win_begin/win_end, and seq_start[c] the first position of chunk c. For each
 * t a draw j = P0 + next64() % (P1 - P0) over t's window is accepted when the sequence at j comes
 * from a chunk inside t's window and the one at t from a chunk inside j's window; then the two
 * swap. perm[t] is the index (in randomized-chunk order) of the sequence ending at t, source[t]
 * its source randomized chunk id. */
static PyObject *py_swap_sequences(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *seed_obj, *owner_o, *wb_o, *we_o, *ss_o;
    uint64_t seed;
    if (!PyArg_ParseTuple(args, "OOOOO", &seed_obj, &owner_o, &wb_o, &we_o, &ss_o) ||
        parse_seed(seed_obj, &seed) < 0)
        return NULL;
    PyArrayObject *owner = NULL, *wb = NULL, *we = NULL, *ss = NULL, *perm = NULL, *src = NULL;
    PyObject *result = NULL;
    owner = as_array(owner_o, NPY_INT32, "owner");
    wb = owner ? as_array(wb_o, NPY_INT32, "win_begin") : NULL;
    we = wb ? as_array(we_o, NPY_INT32, "win_end") : NULL;
    ss = we ? as_array(ss_o, NPY_INT64, "seq_start") : NULL;
    if (!ss)
        goto done;
    npy_intp n = PyArray_DIM(owner, 0), c = PyArray_DIM(wb, 0);
    if (PyArray_DIM(we, 0) != c || PyArray_DIM(ss, 0) != c + 1) {
        PyErr_SetString(PyExc_ValueError, "swap_sequences: win_begin/win_end need C entries, seq_start C+1");
        goto done;
    }
    const int32_t *ow = (const int32_t *)PyArray_DATA(owner);
    const int32_t *b = (const int32_t *)PyArray_DATA(wb);
    const int32_t *e = (const int32_t *)PyArray_DATA(we);
    const int64_t *st = (const int64_t *)PyArray_DATA(ss);
    /* validate once so the loop cannot read out of bounds nor draw forever */
    int what = 0;
    int64_t bad = rand_check_swap(n, c, ow, b, e, st, &what);
    if (bad >= 0) {
        if (what == 1)
            PyErr_Format(PyExc_ValueError, "swap_sequences: window of chunk %lld is [%d, %d), "
                         "expected b <= chunk < e <= %lld", (long long)bad, b[bad], e[bad], (long long)c);
        else if (what == 2)
            PyErr_SetString(PyExc_ValueError, "swap_sequences: seq_start must run from 0 to N, never decreasing");
        else
            PyErr_Format(PyExc_ValueError, "swap_sequences: owner[%lld] = %d is not the chunk holding "
                         "position %lld", (long long)bad, ow[bad], (long long)bad);
        goto done;
    }
    npy_intp dims[1] = {n};
    perm = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    src = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT32);
    if (!perm || !src)
        goto done;
    int64_t *p = (int64_t *)PyArray_DATA(perm);
    int32_t *s = (int32_t *)PyArray_DATA(src);
    Py_BEGIN_ALLOW_THREADS
    rand_swap_sequences(seed, (int64_t)n, ow, b, e, st, p, s);
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, (PyObject *)perm, (PyObject *)src);
done:
    Py_XDECREF(owner);
    Py_XDECREF(wb);
    Py_XDECREF(we);
    Py_XDECREF(ss);
    Py_XDECREF(perm);
    Py_XDECREF(src);
    return result;
}

/* swap_sequences_rolling(seed, win_begin int32[C], win_end int32[C], seq_start int64[C+1],
 *                        index_out int32[N], source_out int16[N] or int32[N]) -> None
 *
 * The same swaps as swap_sequences, drawn in the same order from the same stream, keeping only
 * the positions of the current window: the windows' begins and ends never decrease, so when the
 * positions of randomized chunk ct are swapped, every position before seq_start[win_begin[ct]]
 * is final (no later draw reaches it) and is written out, and a position enters the working set
 * when the first window that reaches it does. The working set is a ring of
 * max_c(seq_start[win_end[c]] - seq_start[win_begin[c]]) entries rounded up to a power of two
 * (16 bytes each), not one entry per position of the sweep. Written out for every position t: index_out[t] = perm[t] -
 * seq_start[source[t]] (the index in its randomized chunk) and source_out[t] = source[t]. */
static PyObject *py_swap_sequences_rolling(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *seed_obj, *wb_o, *we_o, *ss_o, *ix_o, *so_o;
    uint64_t seed;
    if (!PyArg_ParseTuple(args, "OOOOOO", &seed_obj, &wb_o, &we_o, &ss_o, &ix_o, &so_o) ||
        parse_seed(seed_obj, &seed) < 0)
        return NULL;
    if (!PyArray_Check(ix_o) || !PyArray_Check(so_o)) {
        PyErr_SetString(PyExc_TypeError, "swap_sequences_rolling: index_out and source_out must be arrays");
        return NULL;
    }
    PyArrayObject *ix = (PyArrayObject *)ix_o, *so = (PyArrayObject *)so_o;
    int so_type = PyArray_TYPE(so);
    if (PyArray_TYPE(ix) != NPY_INT32 || (so_type != NPY_INT16 && so_type != NPY_INT32) ||
        PyArray_NDIM(ix) != 1 || PyArray_NDIM(so) != 1 || !PyArray_IS_C_CONTIGUOUS(ix) ||
        !PyArray_IS_C_CONTIGUOUS(so) || !PyArray_ISWRITEABLE(ix) || !PyArray_ISWRITEABLE(so)) {
        PyErr_SetString(PyExc_TypeError, "swap_sequences_rolling: index_out must be a writable contiguous "
                        "int32 vector, source_out int16 or int32");
        return NULL;
    }
    PyArrayObject *wb = NULL, *we = NULL, *ss = NULL;
    PyObject *result = NULL;
    int64_t *rp = NULL;
    int32_t *rs = NULL, *ro = NULL;
    wb = as_array(wb_o, NPY_INT32, "win_begin");
    we = wb ? as_array(we_o, NPY_INT32, "win_end") : NULL;
    ss = we ? as_array(ss_o, NPY_INT64, "seq_start") : NULL;
    if (!ss)
        goto done;
    npy_intp c = PyArray_DIM(wb, 0);
    npy_intp n = PyArray_DIM(ix, 0);
    if (PyArray_DIM(we, 0) != c || PyArray_DIM(ss, 0) != c + 1 || PyArray_DIM(so, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "swap_sequences_rolling: win_begin/win_end need C entries, "
                        "seq_start C+1, index_out and source_out N");
        goto done;
    }
    const int32_t *b = (const int32_t *)PyArray_DATA(wb);
    const int32_t *e = (const int32_t *)PyArray_DATA(we);
    const int64_t *st = (const int64_t *)PyArray_DATA(ss);
    if (so_type == NPY_INT16 && c > 32767) {
        PyErr_SetString(PyExc_ValueError, "swap_sequences_rolling: more than 32767 chunks need an int32 source_out");
        goto done;
    }
    int64_t cap = 0;
    int what = 0;
    int64_t bad = rand_check_rolling(c, b, e, st, n, &cap, &what);
    if (bad >= 0) {
        if (what == 2)
            PyErr_SetString(PyExc_ValueError, "swap_sequences_rolling: seq_start must run from 0 to N, never "
                            "decreasing");
        else
            PyErr_Format(PyExc_ValueError, "swap_sequences_rolling: window of chunk %lld is [%d, %d); expected "
                         "b <= chunk < e <= %lld, never decreasing, and chunks of under 2^31 sequences",
                         (long long)bad, b[bad], e[bad], (long long)c);
        goto done;
    }
    if (cap > 0) {
        int64_t pow2 = 1;       /* a power of two: the ring index is a mask, not a division */
        while (pow2 < cap)
            pow2 <<= 1;
        cap = pow2;
        rp = (int64_t *)malloc((size_t)cap * sizeof(int64_t));
        rs = (int32_t *)malloc((size_t)cap * sizeof(int32_t));
        ro = (int32_t *)malloc((size_t)cap * sizeof(int32_t));
        if (!rp || !rs || !ro) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int32_t *out_i = (int32_t *)PyArray_DATA(ix);
    int16_t *out_s16 = so_type == NPY_INT16 ? (int16_t *)PyArray_DATA(so) : NULL;
    int32_t *out_s32 = so_type == NPY_INT32 ? (int32_t *)PyArray_DATA(so) : NULL;
    int failed;
    Py_BEGIN_ALLOW_THREADS
    mt64_t r;
    mt64_seed(&r, seed);
    rand_roll cur = {0, 0, 0};    /* positions < lo are written out, < hi have entered; oc: hi's chunk */
    failed = rand_roll_swaps(&r, b, e, st, (int64_t)c, cap, rp, rs, ro, 0, (int64_t)c, &cur, -1, 0, out_i, out_s16,
                             out_s32, (int64_t)n) < 0;
    Py_END_ALLOW_THREADS
    if (failed) {     /* cannot happen after the checks above; kept as the loop's own guard */
        PyErr_SetString(PyExc_ValueError, "swap_sequences_rolling: inconsistent windows");
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    free(rp);
    free(rs);
    free(ro);
    Py_XDECREF(wb);
    Py_XDECREF(we);
    Py_XDECREF(ss);
    return result;
}

/* rolling_swap_step(seed, state uint64[320], ring_pos int64[cap], ring_src int32[cap],
 *                   ring_own int32[cap], win_begin int32[C], win_end int32[C], seq_start int64[C+1],
 *                   ct_end, index_out int32[m], source_out int16[m] or int32[m]) -> None
 *
 * swap_sequences_rolling run in pieces: the same swaps, drawn in the same order, with the
 * generator and the window's positions carried in ``state`` and the three rings between calls.
 * One call swaps the positions of randomized chunks state[CT] .. ct_end - 1 and writes out the
 * positions that are then final, from state[LO] to F = seq_start[win_begin[ct_end]] (ct_end < C)
 * or N (ct_end == C): index_out[q - state[LO]] and source_out[...] for q in [state[LO], F), so
 * m = F - state[LO]. ``state`` starts all zero (the generator is seeded on the first call); cap
 * is a power of two, at least every window's span in positions. Memory: the rings (the window),
 * never a table per position of the sweep. */
enum { RS_IDX = 312, RS_CT, RS_LO, RS_HI, RS_OC, RS_SEEDED, RS_N = 320 };

static PyObject *py_rolling_swap_step(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *seed_obj, *st_o, *rp_o, *rs_o, *ro_o, *wb_o, *we_o, *ss_o, *ix_o, *so_o;
    Py_ssize_t ct_end;
    uint64_t seed;
    if (!PyArg_ParseTuple(args, "OOOOOOOOnOO", &seed_obj, &st_o, &rp_o, &rs_o, &ro_o, &wb_o, &we_o, &ss_o,
                          &ct_end, &ix_o, &so_o) || parse_seed(seed_obj, &seed) < 0)
        return NULL;
    PyObject *arrs[6] = {st_o, rp_o, rs_o, ro_o, ix_o, so_o};
    int types[6] = {NPY_UINT64, NPY_INT64, NPY_INT32, NPY_INT32, NPY_INT32, -1};
    for (int k = 0; k < 6; k++) {
        if (!PyArray_Check(arrs[k])) {
            PyErr_SetString(PyExc_TypeError, "rolling_swap_step: state, rings and outputs must be numpy arrays");
            return NULL;
        }
        PyArrayObject *a = (PyArrayObject *)arrs[k];
        int t = PyArray_TYPE(a);
        if ((types[k] >= 0 ? t != types[k] : (t != NPY_INT16 && t != NPY_INT32)) || PyArray_NDIM(a) != 1 ||
            !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISWRITEABLE(a)) {
            PyErr_SetString(PyExc_TypeError, "rolling_swap_step: state uint64, ring_pos int64, ring_src/ring_own "
                            "int32, index_out int32, source_out int16/int32, all writable contiguous vectors");
            return NULL;
        }
    }
    PyArrayObject *sta = (PyArrayObject *)st_o, *ix = (PyArrayObject *)ix_o, *so = (PyArrayObject *)so_o;
    npy_intp cap = PyArray_DIM((PyArrayObject *)rp_o, 0);
    if (PyArray_DIM(sta, 0) != RS_N || PyArray_DIM((PyArrayObject *)rs_o, 0) != cap ||
        PyArray_DIM((PyArrayObject *)ro_o, 0) != cap || (cap & (cap - 1)) != 0 ||
        PyArray_DIM(ix, 0) != PyArray_DIM(so, 0)) {
        PyErr_SetString(PyExc_ValueError, "rolling_swap_step: state needs 320 entries, the three rings one "
                        "power-of-two length, index_out and source_out one length");
        return NULL;
    }
    PyArrayObject *wb = NULL, *we = NULL, *ss = NULL;
    PyObject *result = NULL;
    wb = as_array(wb_o, NPY_INT32, "win_begin");
    we = wb ? as_array(we_o, NPY_INT32, "win_end") : NULL;
    ss = we ? as_array(ss_o, NPY_INT64, "seq_start") : NULL;
    if (!ss)
        goto done;
    npy_intp c = PyArray_DIM(wb, 0);
    const int32_t *b = (const int32_t *)PyArray_DATA(wb);
    const int32_t *e = (const int32_t *)PyArray_DATA(we);
    const int64_t *st = (const int64_t *)PyArray_DATA(ss);
    uint64_t *S = (uint64_t *)PyArray_DATA(sta);
    int64_t ct0 = (int64_t)S[RS_CT], lo0 = (int64_t)S[RS_LO];
    if (PyArray_DIM(we, 0) != c || PyArray_DIM(ss, 0) != c + 1 || ct_end < ct0 || ct_end > c || c == 0) {
        PyErr_SetString(PyExc_ValueError, "rolling_swap_step: win_begin/win_end need C > 0 entries, seq_start "
                        "C+1, and ct_end must lie between the state's chunk and C");
        goto done;
    }
    if (so && PyArray_TYPE(so) == NPY_INT16 && c > 32767) {
        PyErr_SetString(PyExc_ValueError, "rolling_swap_step: more than 32767 chunks need an int32 source_out");
        goto done;
    }
    int64_t bad = rand_check_step(c, b, e, st, (int64_t)cap, ct0, (int64_t)ct_end);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "rolling_swap_step: window of chunk %lld is [%d, %d); expected "
                     "b <= chunk < e <= %lld, never decreasing, chunks of under 2^31 sequences and spans "
                     "within the ring", (long long)bad, bad < c ? b[bad] : -1, bad < c ? e[bad] : -1, (long long)c);
        goto done;
    }
    int64_t flush_to = ct_end < c ? st[b[ct_end]] : st[c];
    const int64_t hi0 = (int64_t)S[RS_HI], oc0 = (int64_t)S[RS_OC];
    if (lo0 < 0 || flush_to < lo0 || PyArray_DIM(ix, 0) != flush_to - lo0 || hi0 < lo0 || oc0 < 0 || oc0 >= c ||
        (S[RS_SEEDED] && S[RS_IDX] > MT_N)) {
        PyErr_Format(PyExc_ValueError, "rolling_swap_step: the outputs need %lld entries (positions %lld to %lld), "
                     "and the state must be one an earlier step left", (long long)(flush_to - lo0), (long long)lo0,
                     (long long)flush_to);
        goto done;
    }
    {
        int64_t *rp = (int64_t *)PyArray_DATA((PyArrayObject *)rp_o);
        int32_t *rs = (int32_t *)PyArray_DATA((PyArrayObject *)rs_o);
        int32_t *ro = (int32_t *)PyArray_DATA((PyArrayObject *)ro_o);
        int32_t *out_i = (int32_t *)PyArray_DATA(ix);
        int16_t *out_s16 = PyArray_TYPE(so) == NPY_INT16 ? (int16_t *)PyArray_DATA(so) : NULL;
        int32_t *out_s32 = PyArray_TYPE(so) == NPY_INT32 ? (int32_t *)PyArray_DATA(so) : NULL;
        int failed;
        Py_BEGIN_ALLOW_THREADS
        mt64_t r;
        if (!S[RS_SEEDED]) {
            mt64_seed(&r, seed);
            S[RS_SEEDED] = 1;
        } else {
            memcpy(r.mt, S, sizeof(r.mt));
            r.idx = (int)S[RS_IDX];
        }
        rand_roll cur = {lo0, hi0, (int32_t)oc0};
        failed = rand_roll_swaps(&r, b, e, st, (int64_t)c, (int64_t)cap, rp, rs, ro, ct0, (int64_t)ct_end, &cur,
                                 flush_to, lo0, out_i, out_s16, out_s32, (int64_t)PyArray_DIM(ix, 0)) < 0;
        if (!failed) {
            memcpy(S, r.mt, sizeof(r.mt));
            S[RS_IDX] = (uint64_t)r.idx;
            S[RS_CT] = (uint64_t)ct_end;
            S[RS_LO] = (uint64_t)cur.lo;
            S[RS_HI] = (uint64_t)cur.hi;
            S[RS_OC] = (uint64_t)cur.oc;
        }
        Py_END_ALLOW_THREADS
        if (failed) {
            PyErr_SetString(PyExc_ValueError, "rolling_swap_step: the state or the rings are not those an earlier "
                            "step left");
            goto done;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(wb);
    Py_XDECREF(we);
    Py_XDECREF(ss);
    return result;
}

/* copy_segments(src, src_starts int64[n], dst, dst_starts int64[n], lengths int64[n][, shift int64[n]])
 *   -> None
 *
 * dst[dst_starts[i] : dst_starts[i] + lengths[i]] = src[src_starts[i] : ... + lengths[i]] for every i,
 * along the first axis of two C-contiguous arrays of the same dtype and row shape: the packer's
 * gather of whole sequences (dense rows, sparse indices/values) as memcpy, without index arrays.
 * With shift (src and dst 1-d int64), shift[i] is added to every element of segment i: the
 * gather of sparse row pointers, rebased to where the segment's non-zeros land in dst.
 * Bounds are checked before copying; the copies run without the GIL. */
static PyObject *py_copy_segments(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *src_o, *ss_o, *dst_o, *ds_o, *len_o, *sh_o = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOO|O", &src_o, &ss_o, &dst_o, &ds_o, &len_o, &sh_o))
        return NULL;
    if (!PyArray_Check(src_o) || !PyArray_Check(dst_o)) {
        PyErr_SetString(PyExc_TypeError, "copy_segments: src and dst must be numpy arrays");
        return NULL;
    }
    PyArrayObject *src = (PyArrayObject *)src_o, *dst = (PyArrayObject *)dst_o;
    if (!PyArray_IS_C_CONTIGUOUS(src) || !PyArray_IS_C_CONTIGUOUS(dst) || !PyArray_ISWRITEABLE(dst) ||
        PyArray_NDIM(src) < 1 || PyArray_NDIM(src) != PyArray_NDIM(dst) ||
        !PyArray_EquivTypes(PyArray_DESCR(src), PyArray_DESCR(dst))) {
        PyErr_SetString(PyExc_ValueError, "copy_segments: src and dst must be C-contiguous arrays of one "
                        "dtype and rank (dst writeable)");
        return NULL;
    }
    npy_intp row = PyArray_ITEMSIZE(src);
    for (int d = 1; d < PyArray_NDIM(src); d++) {
        if (PyArray_DIM(src, d) != PyArray_DIM(dst, d)) {
            PyErr_SetString(PyExc_ValueError, "copy_segments: src and dst rows differ in shape");
            return NULL;
        }
        row *= PyArray_DIM(src, d);
    }
    if (sh_o != Py_None && (PyArray_NDIM(src) != 1 || PyArray_TYPE(src) != NPY_INT64)) {
        PyErr_SetString(PyExc_ValueError, "copy_segments: a shift needs 1-d int64 src and dst");
        return NULL;
    }
    PyArrayObject *ss = NULL, *ds = NULL, *ln = NULL, *sh = NULL;
    PyObject *result = NULL;
    ss = (PyArrayObject *)PyArray_FROMANY(ss_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    ds = ss ? (PyArrayObject *)PyArray_FROMANY(ds_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    ln = ds ? (PyArrayObject *)PyArray_FROMANY(len_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    if (ln && sh_o != Py_None)
        sh = (PyArrayObject *)PyArray_FROMANY(sh_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!ln || (sh_o != Py_None && !sh))
        goto done;
    npy_intp n = PyArray_DIM(ln, 0);
    if (PyArray_DIM(ss, 0) != n || PyArray_DIM(ds, 0) != n || (sh && PyArray_DIM(sh, 0) != n)) {
        PyErr_SetString(PyExc_ValueError, "copy_segments: starts, lengths and shifts differ in size");
        goto done;
    }
    const int64_t *a = (const int64_t *)PyArray_DATA(ss);
    const int64_t *b = (const int64_t *)PyArray_DATA(ds);
    const int64_t *l = (const int64_t *)PyArray_DATA(ln);
    npy_intp ns = PyArray_DIM(src, 0), nd = PyArray_DIM(dst, 0);
    int64_t bad = rand_check_segments(n, a, b, l, ns, nd);
    if (bad >= 0) {
        PyErr_Format(PyExc_IndexError, "copy_segments: segment %lld (src %lld, dst %lld, length %lld) "
                     "is outside src (%zd rows) or dst (%zd rows)", (long long)bad, (long long)a[bad],
                     (long long)b[bad], (long long)l[bad], (Py_ssize_t)ns, (Py_ssize_t)nd);
        goto done;
    }
    const char *sp = (const char *)PyArray_DATA(src);
    char *dp = (char *)PyArray_DATA(dst);
    const int64_t *h = sh ? (const int64_t *)PyArray_DATA(sh) : NULL;
    Py_BEGIN_ALLOW_THREADS
    rand_copy_segments(dp, sp, (int64_t)row, (int64_t)n, a, b, l, h);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(ss);
    Py_XDECREF(ds);
    Py_XDECREF(ln);
    Py_XDECREF(sh);
    return result;
}

/* index_shuffle(keys uint64[6], half, n, positions int64[k], out int64[k]): the Feistel bijection of
 * cntkio.engine.index_shuffle.IndexShuffle (its NumPy twin is the reference): six rounds over
 * 2 * half bits, each round's function splitmix64's finalizer of (right + key) masked to half bits,
 * and cycle walking until the value falls below n. Positions are checked to lie in [0, n). */
static inline uint64_t feistel(uint64_t x, const uint64_t *keys, int nkeys, unsigned half, uint64_t mask)
{
    uint64_t left = x >> half, right = x & mask;
    for (int r = 0; r < nkeys; r++) {
        uint64_t z = right + keys[r];
        z ^= z >> 30;
        z *= 0xBF58476D1CE4E5B9ULL;
        z ^= z >> 27;
        z *= 0x94D049BB133111EBULL;
        z ^= z >> 31;
        uint64_t t = left ^ (z & mask);
        left = right;
        right = t;
    }
    return (left << half) | right;
}

static PyObject *py_index_shuffle(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *keys_o, *pos_o, *out_o;
    unsigned int half;
    long long n;
    if (!PyArg_ParseTuple(args, "OILOO", &keys_o, &half, &n, &pos_o, &out_o))
        return NULL;
    if (half < 1 || half > 31 || n < 0 || (unsigned long long)n > (1ULL << (2 * half))) {
        PyErr_SetString(PyExc_ValueError, "index_shuffle: half must be in [1, 31] and n in [0, 4^half]");
        return NULL;
    }
    PyArrayObject *keys = (PyArrayObject *)PyArray_FROMANY(keys_o, NPY_UINT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *pos = keys ? (PyArrayObject *)PyArray_FROMANY(pos_o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY) : NULL;
    PyObject *result = NULL;
    if (!pos)
        goto done;
    if (!PyArray_Check(out_o) || PyArray_TYPE((PyArrayObject *)out_o) != NPY_INT64 ||
        PyArray_NDIM((PyArrayObject *)out_o) != 1 || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)out_o) ||
        !PyArray_ISWRITEABLE((PyArrayObject *)out_o) ||
        PyArray_DIM((PyArrayObject *)out_o, 0) != PyArray_DIM(pos, 0) || PyArray_DIM(keys, 0) > 64) {
        PyErr_SetString(PyExc_ValueError, "index_shuffle: out must be a writeable int64 array as long as "
                        "positions, and at most 64 keys");
        goto done;
    }
    npy_intp k = PyArray_DIM(pos, 0);
    const int64_t *p = (const int64_t *)PyArray_DATA(pos);
    for (npy_intp i = 0; i < k; i++) {
        if (p[i] < 0 || p[i] >= n) {
            PyErr_Format(PyExc_IndexError, "IndexShuffle: position %lld is outside [0, %lld)",
                         (long long)p[i], n);
            goto done;
        }
    }
    int nkeys = (int)PyArray_DIM(keys, 0);
    uint64_t kv[64];
    memcpy(kv, PyArray_DATA(keys), sizeof(uint64_t) * (size_t)nkeys);
    int64_t *o = (int64_t *)PyArray_DATA((PyArrayObject *)out_o);
    uint64_t mask = (1ULL << half) - 1, un = (uint64_t)n;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < k; i++) {
        uint64_t y = feistel((uint64_t)p[i], kv, nkeys, half, mask);
        while (y >= un)
            y = feistel(y, kv, nkeys, half, mask);
        o[i] = (int64_t)y;
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(keys);
    Py_XDECREF(pos);
    return result;
}

static PyMethodDef methods[] = {
    {"draws", py_draws, METH_VARARGS, "draws(seed, n) -> uint64[n]: first n outputs of mt19937_64(seed)."},
    {"full_range_shuffle", py_full_range_shuffle, METH_VARARGS,
     "full_range_shuffle(seed, n) -> int64[n]: CNTK's RandomShuffleMT of 0..n-1 (swap i, next64() % n)."},
    {"window_shuffle", py_window_shuffle, METH_VARARGS,
     "window_shuffle(seed, n) -> int64[n]: swap i with i + next64() % (n - i), i = 0..n-1."},
    {"swap_sequences", py_swap_sequences, METH_VARARGS,
     "swap_sequences(seed, owner, win_begin, win_end, seq_start) -> (perm, source): "
     "the BlockRandomizer's in-window sequence swaps."},
    {"swap_sequences_rolling", py_swap_sequences_rolling, METH_VARARGS,
     "swap_sequences_rolling(seed, win_begin, win_end, seq_start, index_out, source_out): the same swaps "
     "keeping only the window's positions; writes each position's index in its chunk and source chunk."},
    {"rolling_swap_step", py_rolling_swap_step, METH_VARARGS,
     "rolling_swap_step(seed, state, ring_pos, ring_src, ring_own, win_begin, win_end, seq_start, ct_end, "
     "index_out, source_out): swap_sequences_rolling in pieces, its state carried between calls."},
    {"copy_segments", py_copy_segments, METH_VARARGS,
     "copy_segments(src, src_starts, dst, dst_starts, lengths[, shift]): row-segment memcpy gather "
     "(shift: added to each int64 segment)."},
    {"index_shuffle", py_index_shuffle, METH_VARARGS,
     "index_shuffle(keys, half, n, positions, out): the keyed Feistel bijection of [0, n) with cycle walking "
     "(cntkio.engine.index_shuffle)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_rand",
    "mt19937_64 and CNTK's randomizer loops in C (GIL released).", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rand(void)
{
    import_array();
    return PyModule_Create(&moduledef);
}
