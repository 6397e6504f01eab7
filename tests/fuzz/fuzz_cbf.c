/* Fuzz target of the CBF core (src/cntkio/_native/cbf_core.h): an input is a CBF file.
 *
 * Its header and chunk table are read as cntkio/deserializers/cbf/layout.py reads them (an input
 * they would reject is not walked: that is the Python's own code, not the C core's). Each chunk's
 * words are copied into a heap block of exactly their size, then every stream is walked as
 * walk_chunk walks it: dense streams by cbf_walk, sparse ones by cbf_walk and by cbf_sparse_fill
 * into buffers of exactly the capacities cbf_sparse_capacity gives, and the two must agree. A
 * filled sparse stream is checked (indices below dim, indptr ascending and summing to the
 * non-zeros) and laid out again by cbf_sparse_emit, which must give back the chunk's words. The
 * walks are also asked for positions, counts and sample sizes at the edges of int64 (and taken
 * from the file's last bytes), which must be refused, never read outside the chunk.
 *
 * Built with libFuzzer (clang -fsanitize=fuzzer,address,undefined) or with tests/fuzz/fuzz_driver.c
 * (gcc); see tests/fuzz/run_fuzz.py and `make asan-test`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf_core.h"

#define MAGIC 0x636E746B5F62696EULL
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz_cbf: check failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                       \
            abort();                                                                 \
        }                                                                            \
    } while (0)

typedef struct { int sparse, etype; int64_t dim; } stream_t;

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static const int64_t EDGES[] = {-1, 0, 1, 2, 0x7FFFFFFF, 0x80000000LL, 0xFFFFFFFFLL, 0x100000000LL,
                                ((int64_t)1 << 62), INT64_MAX - 2, INT64_MAX - 1, INT64_MAX, INT64_MIN};
#define NEDGES (sizeof EDGES / sizeof EDGES[0])

/* walks with arguments at the edges: refused or inside the chunk, never outside */
static void edge_walks(const uint32_t *words, int64_t total, int64_t a, int64_t b, int64_t c)
{
    int64_t s[4], k[4], z[4], end = -1;
    const int64_t lengths[4] = {a, b, c, INT64_MAX};
    for (size_t i = 0; i < NEDGES; i++) {
        const int64_t e = EDGES[i];
        for (int sparse = 0; sparse < 2; sparse++) {
            const int64_t args[][3] = {{e, 1, 1}, {0, 1, e}, {a, 1, e}, {e, 1, b}, {c & 0xFF, 1, e}};
            for (size_t j = 0; j < sizeof args / sizeof args[0]; j++) {
                int64_t n = args[j][1];
                if (cbf_max_sequences(total, args[j][0], sparse) < n)
                    continue;                     /* the glue returns before allocating */
                if (cbf_walk(words, total, args[j][0], n, sparse, args[j][2], s, k, z, &end))
                    CHECK(end >= args[j][0] && end <= total);
            }
        }
        int64_t cap_nz, cap_s, pos = (e >= 0 && e <= total) ? e : 0;
        int64_t n = cbf_max_sequences(total, pos, 1);
        if (n > 4)
            n = 4;
        cbf_sparse_capacity(total, pos, lengths, n, 1 + (i & 1), &cap_nz, &cap_s);
        CHECK(cap_nz >= 0 && cap_s >= 0 && cap_nz <= total && cap_s <= total);
    }
}

static void check_fill(const uint32_t *words, int64_t total, int64_t pos, const int64_t *lengths, int64_t n,
                       const stream_t *st, const int64_t *ws, const int64_t *wk, const int64_t *wz, int64_t wend,
                       int walked)
{
    const int64_t w = st->etype ? 2 : 1;
    int64_t cap_nz, cap_s;
    cbf_sparse_capacity(total, pos, lengths, n, w, &cap_nz, &cap_s);
    uint32_t *data = malloc((size_t)(cap_nz * w) * 4 + 1);
    int32_t *indices = malloc((size_t)cap_nz * 4 + 1);
    int64_t *indptr = malloc((size_t)(cap_s + 1) * 8);
    int64_t *s = malloc((size_t)n * 8 + 1), *k = malloc((size_t)n * 8 + 1), *z = malloc((size_t)n * 8 + 1);
    int64_t end = 0, dn = 0, sn = 0;
    const int ok = cbf_sparse_fill(words, total, pos, lengths, n, w, st->dim, cap_nz, cap_s, s, k, z, data,
                                   indices, indptr, &end, &dn, &sn);
    if (ok) {
        CHECK(walked && end == wend);       /* whatever the fill accepts, the walk accepts */
        int64_t nz_sum = 0, k_sum = 0;
        for (int64_t i = 0; i < n; i++) {
            CHECK(s[i] == ws[i] && k[i] == wk[i] && z[i] == wz[i] && k[i] <= lengths[i]);
            nz_sum += z[i];
            k_sum += k[i];
        }
        CHECK(dn == nz_sum && sn == k_sum && dn <= cap_nz && sn <= cap_s && indptr[0] == 0 && indptr[sn] == dn);
        for (int64_t j = 0; j < sn; j++)
            CHECK(indptr[j] <= indptr[j + 1]);
        for (int64_t j = 0; j < dn; j++)
            CHECK(indices[j] >= 0 && indices[j] < st->dim);
        /* laid out again, the blocks are the chunk's words */
        int64_t *off = malloc((size_t)(n + 1) * 8), *rel = malloc((size_t)n * 8 + 1);
        off[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            off[i + 1] = off[i] + k[i];
            rel[i] = s[i] - pos;
        }
        const int64_t nout = end - pos;
        uint32_t *out = malloc((size_t)nout * 4 + 1);
        const char *err = cbf_emit_check(n, rel, off, indptr, sn + 1, nout, dn * w, dn, w);
        CHECK(err == NULL);
        cbf_sparse_emit(out, n, rel, off, indptr, data, (const uint32_t *)indices, w);
        CHECK(memcmp(out, words + pos, (size_t)nout * 4) == 0);
        /* and ranges past the buffers are refused */
        if (n > 0) {
            int64_t saved = rel[n - 1];
            rel[n - 1] = nout - 1;
            CHECK(cbf_emit_check(n, rel, off, indptr, sn + 1, nout, dn * w, dn, w) != NULL);
            rel[n - 1] = INT64_MAX - 1;
            CHECK(cbf_emit_check(n, rel, off, indptr, sn + 1, nout, dn * w, dn, w) != NULL);
            rel[n - 1] = saved;
            int64_t last = indptr[sn];
            indptr[sn] = INT64_MAX / 2 + 1;      /* e1 * w wrapped before */
            if (k[n - 1] > 0)
                CHECK(cbf_emit_check(n, rel, off, indptr, sn + 1, nout, dn * w, dn, w) != NULL);
            indptr[sn] = last;
        }
        free(out);
        free(off);
        free(rel);
    }
    free(data);
    free(indices);
    free(indptr);
    free(s);
    free(k);
    free(z);
}

static void walk_chunk(const uint8_t *file, int64_t off, int64_t end, int64_t nseq, const stream_t *streams,
                       int nstreams)
{
    const int64_t total = (end - off) / 4;
    uint32_t *words = malloc((size_t)total * 4 + (total == 0));     /* exactly the chunk */
    memcpy(words, file + off, (size_t)total * 4);
    int64_t *lengths = malloc((size_t)nseq * 8 + 1);
    for (int64_t i = 0; i < nseq; i++)
        lengths[i] = words[i];
    int64_t *s = malloc((size_t)nseq * 8 + 1), *k = malloc((size_t)nseq * 8 + 1), *z = malloc((size_t)nseq * 8 + 1);
    int64_t pos = nseq;
    for (int j = 0; j < nstreams; j++) {
        const stream_t *st = &streams[j];
        const int64_t ew = st->etype ? 2 : 1;
        int64_t wend = -1;
        if (cbf_max_sequences(total, pos, st->sparse) < nseq)
            break;                                  /* the glue returns None without a walk */
        const int walked = cbf_walk(words, total, pos, nseq, st->sparse, st->sparse ? ew : st->dim * ew, s, k, z,
                                    &wend);
        if (walked) {
            CHECK(wend >= pos && wend <= total);
            for (int64_t i = 0; i < nseq; i++)
                CHECK(s[i] >= pos && s[i] < wend && (i == 0 || s[i] > s[i - 1]));
        }
        if (st->sparse)
            check_fill(words, total, pos, lengths, nseq, st, s, k, z, wend, walked);
        if (!walked)
            break;
        pos = wend;
    }
    edge_walks(words, total, total ? words[0] : 0, total > 1 ? words[total - 1] : 0, nseq);
    free(s);
    free(k);
    free(z);
    free(lengths);
    free(words);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the file's start, header offset, header and chunk table as layout.read_header checks them */
    if (size < 36 || rd64(data) != MAGIC || rd32(data + 8) != 1)
        return 0;
    const int64_t limit = (int64_t)size - 8, hoff = (int64_t)rd64(data + size - 8);
    if (hoff < 12 || hoff > limit - 16 || rd64(data + hoff) != MAGIC)
        return 0;
    const int64_t nchunks = rd32(data + hoff + 8), nstreams = rd32(data + hoff + 12);
    int64_t p = hoff + 16;
    if (nstreams == 0 || nstreams > 64 || nstreams * 10 + nchunks * 16 > limit - p)
        return 0;
    stream_t streams[64];
    for (int64_t i = 0; i < nstreams; i++) {
        if (p + 5 > limit) return 0;
        const int storage = data[p];
        const int64_t nlen = rd32(data + p + 1);
        p += 5;
        if (storage > 1 || nlen < 1 || nlen > limit - p || limit - p - nlen < 5) return 0;
        p += nlen;
        const int etype = data[p];
        const int64_t dim = rd32(data + p + 1);
        p += 5;
        if (etype > 1 || dim == 0 || dim > 0x7FFFFFFF) return 0;
        streams[i].sparse = storage;
        streams[i].etype = etype;
        streams[i].dim = dim;
    }
    if (p + 16 * nchunks != limit)
        return 0;
    for (int64_t c = 0; c < nchunks; c++) {
        const uint8_t *e = data + p + 16 * c;
        const int64_t off = (int64_t)rd64(e), nseq = rd32(e + 8);
        const int64_t end = c + 1 < nchunks ? (int64_t)rd64(e + 16) : hoff;
        if (off < 12 || off > hoff || end < off || end > hoff || nseq * 4 > end - off)
            return 0;
        walk_chunk(data, off, end, nseq, streams, (int)nstreams);
    }
    return 0;
}
