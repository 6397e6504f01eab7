/* The CBF chunk walk, sparse assembly and sparse layout in plain C (no Python): the core of
 * cntkio._native._cbf (cbf.c holds the Python glue), also built alone under AddressSanitizer and
 * UndefinedBehaviorSanitizer by the fuzz harness (tests/fuzz/fuzz_cbf.c).
 *
 * Every count comes from the file, and every argument may be anything a caller passes: each
 * bound is checked by subtraction or division from what is known to be in range (never by a sum
 * or product that could overflow first), before anything is read or written. A chunk of
 * `total` 32-bit words is the only memory read; outputs are sized by the cbf_*_capacity helpers
 * from the chunk's own size, so a count the file claims never sizes an allocation.
 */
#ifndef CNTKIO_CBF_CORE_H
#define CNTKIO_CBF_CORE_H

#include <stdint.h>
#include <string.h>

/* The most sequences a walk from word pos of a chunk of total words can find (dense blocks take
 * at least one word, sparse ones two): output arrays of that many entries always suffice, and a
 * larger n is a count that runs past the chunk. -1 for a pos outside [0, total]. */
static inline int64_t cbf_max_sequences(int64_t total, int64_t pos, int sparse)
{
    if (total < 0 || pos < 0 || pos > total)
        return -1;
    return sparse ? (total - pos) / 2 : total - pos;
}

/* Locate n blocks of one stream from word pos of words[0:total): s[i] the block's first word,
 * k[i] its sample count, z[i] its nnz (sparse; z unused when dense), *end the word after the
 * last block. 1 on success, 0 when a count runs past total, a nnz is negative or an argument is
 * out of range (n < 0, pos outside [0, total], w < 0): then the caller's readable twin names
 * the error. w: words per dense sample, or words per sparse value. */
static int cbf_walk(const uint32_t *words, int64_t total, int64_t pos, int64_t n, int sparse, int64_t w,
                    int64_t *s, int64_t *k, int64_t *z, int64_t *end)
{
    if (n < 0 || w < 0 || cbf_max_sequences(total, pos, sparse) < n)
        return 0;
    int64_t p = pos;
    for (int64_t i = 0; i < n; i++) {
        if (!sparse) {
            if (p >= total)
                return 0;
            const int64_t cnt = words[p], rem = total - p - 1;   /* words after the count */
            if (cnt && w && cnt > rem / w)
                return 0;
            s[i] = p;
            k[i] = cnt;
            p += 1 + cnt * w;                                    /* <= total: no overflow */
        } else {
            if (total - p < 2)
                return 0;
            const int64_t cnt = words[p];
            const uint32_t nz = words[p + 1];
            int64_t rem = total - p - 2;
            if (nz >= 0x80000000u || cnt > rem)
                return 0;
            rem -= cnt;
            if (nz && (w >= rem || (int64_t)nz > rem / (w + 1)))
                return 0;
            s[i] = p;
            k[i] = cnt;
            z[i] = nz;
            p += 2 + cnt + (nz ? (int64_t)nz * (w + 1) : 0);    /* w + 1 only where checked above */
        }
    }
    *end = p;
    return 1;
}

/* Capacities of a sparse stream's CSR arrays for cbf_sparse_fill over words[pos:total): every
 * non-zero takes w + 1 words and every sample one word, and no sequence may hold more samples
 * than lengths[i] (clamped: a negative length counts 0, and the sum stops at what fits). */
static void cbf_sparse_capacity(int64_t total, int64_t pos, const int64_t *lengths, int64_t n, int64_t w,
                                int64_t *cap_nz, int64_t *cap_samples)
{
    const int64_t room = pos >= 0 && total > pos ? total - pos : 0;
    int64_t samples = 0;
    *cap_nz = w >= 1 ? room / (w + 1) : 0;
    for (int64_t i = 0; i < n && samples < room; i++)
        if (lengths[i] > 0)
            samples += lengths[i] < room - samples ? lengths[i] : room - samples;
    *cap_samples = samples;
}

/* A sparse stream's walk and CSR assembly in one pass (see cbf.c, sparse_fill): data (cap_nz * w
 * words), indices (cap_nz) and indptr (cap_samples + 1) receive the values, the row indices
 * (checked < dim) and the running per-sample counts (checked >= 0, summing to each block's nnz).
 * 1 on success with *end, *dn (non-zeros) and *sn (samples); 0 on any count, index or argument
 * the layout does not allow (w must be 1 or 2, dim in [1, 2^31 - 1]). The capacities must come
 * from cbf_sparse_capacity for the same words, pos, lengths and w. */
static int cbf_sparse_fill(const uint32_t *words, int64_t total, int64_t pos, const int64_t *lengths, int64_t n,
                           int64_t w, int64_t dim, int64_t cap_nz, int64_t cap_samples,
                           int64_t *s, int64_t *k, int64_t *z, uint32_t *data, int32_t *indices, int64_t *indptr,
                           int64_t *end, int64_t *dn_out, int64_t *sn_out)
{
    if (w < 1 || w > 2 || dim < 1 || dim > 0x7FFFFFFFLL || n < 0 || cbf_max_sequences(total, pos, 1) < n)
        return 0;
    int64_t p = pos, dn = 0, sn = 0;
    const uint32_t udim = (uint32_t)dim;
    indptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        if (total - p < 2)
            return 0;
        const int64_t cnt = words[p];
        const uint32_t nz = words[p + 1];
        if (nz >= 0x80000000u || cnt > lengths[i] || cnt > total - p - 2)
            return 0;
        const int64_t rem = total - p - 2 - cnt;
        if ((int64_t)nz > rem / (w + 1) || cnt > cap_samples - sn || (int64_t)nz > cap_nz - dn)
            return 0;
        s[i] = p;
        k[i] = cnt;
        z[i] = nz;
        const uint32_t *v = words + p + 2;
        memcpy(data + dn * w, v, (size_t)nz * (size_t)w * 4);
        const uint32_t *r = v + (int64_t)nz * w;
        uint32_t bad = 0;
        int32_t *out = indices + dn;
        for (uint32_t j = 0; j < nz; j++) {   /* an index < 0 reads as >= 2^31 > dim - 1 */
            const uint32_t x = r[j];
            bad |= (uint32_t)(x >= udim);
            out[j] = (int32_t)x;
        }
        const uint32_t *c = r + nz;
        int64_t acc = 0, base = indptr[sn];
        for (int64_t j = 0; j < cnt; j++) {
            const uint32_t x = c[j];
            bad |= x >> 31;                   /* a negative per-sample count */
            acc += x;                         /* < 2^31 * 2^32: no overflow */
            indptr[sn + j + 1] = base + acc;
        }
        if (bad || acc != (int64_t)nz)
            return 0;
        dn += nz;
        sn += cnt;
        p += 2 + cnt + (int64_t)nz * (w + 1);
    }
    *end = p;
    *dn_out = dn;
    *sn_out = sn;
    return 1;
}

/* Checks of cbf_sparse_emit's arguments: per sequence i (CSR samples off[i]..off[i+1]), its block
 * at word starts[i] of out (nout words) holds 2 + nz * (w + 1) + samples words, the values
 * vals[e0 * w ...] (nvals words) and rows[e0 ...] (nrows) with e0 = indptr[off[i]]. NULL when
 * every range is inside its buffer, else the message. No arithmetic on the arguments can
 * overflow before it is checked. */
static const char *cbf_emit_check(int64_t n, const int64_t *starts, const int64_t *off, const int64_t *indptr,
                                  int64_t nptr, int64_t nout, int64_t nvals, int64_t nrows, int64_t w)
{
    if (w < 1 || w > 2 || n < 0 || nout < 0 || nvals < 0 || nrows < 0 || nptr < 0)
        return "sparse_emit: bad arguments";
    for (int64_t i = 0; i < n; i++) {
        const int64_t a = off[i], b = off[i + 1];
        if (a < 0 || b < a || b >= nptr)
            return "sparse_emit: offsets outside indptr";
        const int64_t e0 = indptr[a], e1 = indptr[b];
        if (e0 < 0 || e1 < e0 || e1 > nrows || e1 > nvals / w || e1 - e0 > 0x7FFFFFFF || b - a > 0xFFFFFFFFLL)
            return "sparse_emit: indptr outside the values";
        const int64_t nz = e1 - e0, st = starts[i];
        if (st < 0 || st > nout || nout - st < 2)
            return "sparse_emit: block outside out";
        const int64_t rem = nout - st - 2;          /* nz * (w + 1) < 2^31 * 3: no overflow */
        if (nz * (w + 1) > rem || b - a > rem - nz * (w + 1))
            return "sparse_emit: block outside out";
    }
    return NULL;
}

/* Lay out the blocks checked by cbf_emit_check (the writer's twin of cbf_sparse_fill). */
static void cbf_sparse_emit(uint32_t *out, int64_t n, const int64_t *starts, const int64_t *off,
                            const int64_t *indptr, const uint32_t *vals, const uint32_t *rows, int64_t w)
{
    for (int64_t i = 0; i < n; i++) {
        const int64_t a = off[i], b = off[i + 1];
        const int64_t e0 = indptr[a], nz = indptr[b] - e0;
        uint32_t *o = out + starts[i];
        o[0] = (uint32_t)(b - a);
        o[1] = (uint32_t)nz;
        memcpy(o + 2, vals + e0 * w, (size_t)(nz * w) * 4);
        memcpy(o + 2 + nz * w, rows + e0, (size_t)nz * 4);
        uint32_t *c = o + 2 + nz * (w + 1);
        for (int64_t j = a; j < b; j++)   /* the low 32 bits, as NumPy's astype("<i4") */
            c[j - a] = (uint32_t)((uint64_t)indptr[j + 1] - (uint64_t)indptr[j]);
    }
}

#endif /* CNTKIO_CBF_CORE_H */
