/* Fuzz target of the HTK core (src/cntkio/_native/htk_core.h): an input is an HTK feature file,
 * and the same bytes are also MLF text.
 *
 * As a feature file: its 12-byte header (either byte order, as htkfile.read_header takes it)
 * gives frames and frame size; frame ranges are drawn from the input (a generator seeded by its
 * bytes) and also taken raw from it (int64 offsets and counts, as a hostile SCP range would give
 * them) and from the edges of int64. Every range htk_check_copies accepts is copied from a block
 * of exactly the file's size into one of exactly the destination's size (byte-swapped or not),
 * and a swapped copy must equal the bytes reversed. Rows of context windows over the copied
 * frames go through htk_check_rows and htk_gather_rows (float32 and float64 outputs), and uint16
 * lookups through htk_check_u16. As MLF text: its lines (and raw or edge ranges) go through
 * htk_check_lines and htk_mlf_tokens, whose tokens must lie inside their line.
 *
 * Built with libFuzzer (clang -fsanitize=fuzzer,address,undefined) or with tests/fuzz/fuzz_driver.c
 * (gcc); see tests/fuzz/run_fuzz.py and `make asan-test`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htk_core.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz_htk: check failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                       \
            abort();                                                                 \
        }                                                                            \
    } while (0)

static uint64_t g;
static uint64_t rnd(void)
{
    g ^= g << 13;
    g ^= g >> 7;
    g ^= g << 17;
    return g;
}

static const int64_t EDGES[] = {-1, 0, 1, 3, 4, 0x7FFFFFFF, 0xFFFFFFFFLL, ((int64_t)1 << 61), ((int64_t)1 << 62),
                                INT64_MAX / 4 + 1, INT64_MAX - 3, INT64_MAX, INT64_MIN};
#define NEDGES (sizeof EDGES / sizeof EDGES[0])

static int64_t pick(const uint8_t *d, size_t n, int64_t range)
{
    switch (rnd() % 8) {
    case 0: return EDGES[rnd() % NEDGES];
    case 1: {                                   /* eight raw bytes of the input */
        int64_t v = 0;
        if (n >= 8) memcpy(&v, d + rnd() % (n - 7), 8);
        return v;
    }
    default: return range > 0 ? (int64_t)(rnd() % (uint64_t)range) : 0;
    }
}

static void features(const uint8_t *d, size_t n)
{
    if (n < 12)
        return;
    const int big = (rnd() & 1);
    const uint8_t *h = d;
    int32_t nsamp = big ? (int32_t)((uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3])
                        : (int32_t)((uint32_t)h[3] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[1] << 8 | h[0]);
    int16_t ssize = big ? (int16_t)((uint16_t)h[8] << 8 | h[9]) : (int16_t)((uint16_t)h[9] << 8 | h[8]);
    int64_t dim = ssize > 0 && ssize % 4 == 0 ? ssize / 4 : 1 + (int64_t)(rnd() % 8);
    int64_t frames = nsamp > 0 ? nsamp : 0;
    if (frames > (int64_t)(n - 12) / (4 * dim))
        frames = (int64_t)(n - 12) / (4 * dim);        /* the frames the file holds */
    const int64_t src_len = (int64_t)n - 12;
    char *src = malloc((size_t)src_len + 1);            /* exactly the frames' bytes */
    memcpy(src, d + 12, (size_t)src_len);
    /* a chunk: utterances copied one after another, as _raw lays them out */
    const int64_t nutt = 1 + (int64_t)(rnd() % 6);
    int64_t d_off[8], s_off[8], count[8], dst_n = 0;
    for (int64_t k = 0; k < nutt; k++) {
        int64_t first = frames ? (int64_t)(rnd() % (uint64_t)frames) : 0;
        int64_t len = frames - first ? 1 + (int64_t)(rnd() % (uint64_t)(frames - first)) : 0;
        d_off[k] = dst_n;
        s_off[k] = first * 4 * dim;
        count[k] = len * dim;
        dst_n += count[k];
    }
    const int hostile = rnd() % 3 == 0;
    if (hostile) {                                      /* a hostile range */
        int64_t k = (int64_t)(rnd() % (uint64_t)nutt);
        d_off[k] = pick(d, n, dst_n + 1);
        s_off[k] = pick(d, n, src_len + 1);
        count[k] = pick(d, n, dst_n + 1);
    }
    float *dst = malloc((size_t)(dst_n > 0 ? dst_n : 1) * 4);
    const int swap = (int)(rnd() & 1);
    const int64_t bad = htk_check_copies(nutt, d_off, s_off, count, dst_n, src_len);
    const int64_t bad_pread = htk_check_copies(nutt, d_off, s_off, count, dst_n, -1);
    CHECK(bad >= 0 || bad_pread < 0);       /* the pread check (no source buffer) is the weaker */
    if (bad < 0) {
        htk_swap_copy(dst, src, nutt, d_off, s_off, count, swap);
        for (int64_t k = 0; !hostile && k < nutt; k++)      /* (a hostile range may overlap another) */
            for (int64_t j = 0; j < count[k] && j < 4; j++) {
                const unsigned char *in = (const unsigned char *)src + s_off[k] + 4 * j;
                unsigned char out[4];
                memcpy(out, dst + d_off[k] + j, 4);
                for (int b = 0; b < 4; b++)
                    CHECK(out[b] == in[swap ? 3 - b : b]);
            }
        htk_swap_in_place((uint32_t *)dst, dst_n);
        /* context windows over the copied frames */
        const int64_t rows_total = dim ? dst_n / dim : 0;
        const int64_t left = (int64_t)(rnd() % 3), right = (int64_t)(rnd() % 3);
        const int64_t width = dim * (left + 1 + right);
        const int64_t nsel = (int64_t)(rnd() % 9);
        int64_t which[8], rows[8], lens[2] = {dst_n, (int64_t)(n / 4)};
        const float *bases[2] = {dst, (const float *)src};
        for (int64_t i = 0; i < nsel && i < 8; i++) {
            which[i] = (rnd() % 5) ? 0 : 1;
            rows[i] = rows_total > left + right ? (int64_t)(rnd() % (uint64_t)(rows_total - left - right)) : 0;
        }
        if (nsel && rnd() % 3 == 0) {
            int64_t i = (int64_t)(rnd() % (uint64_t)(nsel < 8 ? nsel : 8));
            which[i] = pick(d, n, 2);
            rows[i] = pick(d, n, rows_total);
        }
        const int64_t m = nsel < 8 ? nsel : 8;
        const int out_double = (int)(rnd() & 1);
        const int64_t esz = out_double ? 8 : 4;
        const int64_t out_len = rnd() % 4 == 0 ? pick(d, n, m * width * esz + 1) : m * width * esz;
        if (out_len >= 0 && out_len <= ((int64_t)1 << 24)) {
            char *out = malloc((size_t)out_len + 1);
            lens[1] = src_len / 4;
            int64_t r = htk_check_rows(m, which, rows, dim, width, 2, lens, out_len, esz);
            if (r == -1)
                htk_gather_rows(out, bases, m, which, rows, dim, width, out_double);
            free(out);
        }
        for (size_t e = 0; e < NEDGES; e++) {                  /* rows at the edges are refused */
            int64_t w1 = 0, r1 = EDGES[e];
            if (r1 < 0 || r1 > rows_total)
                CHECK(htk_check_rows(1, &w1, &r1, dim, width, 2, lens, width * 8, 8) != -1);
        }
        /* frame -> utterance lookups in uint16 maps */
        const uint16_t *u16[1] = {(const uint16_t *)src};
        int64_t ulen[1] = {src_len / 2}, uw[4], ui[4];
        for (int i = 0; i < 4; i++) {
            uw[i] = (rnd() % 7) ? 0 : pick(d, n, 1);
            ui[i] = pick(d, n, ulen[0]);
        }
        int64_t sum = 0;
        if (htk_check_u16(4, uw, ui, 1, ulen) < 0)
            for (int i = 0; i < 4; i++)
                sum += u16[uw[i]][ui[i]];
        (void)sum;
    }
    for (size_t e = 0; e < NEDGES; e++) {               /* ranges at the edges are refused */
        int64_t a = 0, b = EDGES[e], c = 1;
        if (b < 0 || b > src_len - 4)
            CHECK(htk_check_copies(1, &a, &b, &c, 1, src_len) >= 0);
        int64_t c2 = EDGES[e];
        if (c2 < 0 || c2 > dst_n)
            CHECK(htk_check_copies(1, &a, &a, &c2, dst_n, src_len) >= 0);
    }
    free(dst);
    free(src);
}

static void mlf(const uint8_t *d, size_t n)
{
    int64_t A[64], B[64], m = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n && m < 64; i++) {
        if (i == n || d[i] == '\n') {
            size_t a = start;
            while (a < i && d[a] == ' ') a++;       /* stripped, as the caller's lines */
            A[m] = (int64_t)a;
            B[m] = (int64_t)i;
            m++;
            start = i + 1;
        }
    }
    if (m && rnd() % 4 == 0) {
        int64_t i = (int64_t)(rnd() % (uint64_t)m);
        A[i] = pick(d, n, (int64_t)n + 1);
        B[i] = pick(d, n, (int64_t)n + 1);
    }
    if (htk_check_lines(m, A, B, (int64_t)n) >= 0)
        return;
    int64_t ntok[64], v0[64], v1[64], ok[64], la[64], lb[64];
    uint64_t lh[64];
    htk_mlf_tokens(d, m, A, B, ntok, v0, v1, ok, la, lb, lh);
    for (int64_t i = 0; i < m; i++) {
        CHECK(ntok[i] >= 0 && ntok[i] <= B[i] - A[i]);
        if (ntok[i] >= 3)
            CHECK(la[i] >= A[i] && la[i] < lb[i] && lb[i] <= B[i]);
        if (ok[i])
            CHECK(v0[i] >= 0 && v1[i] >= 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < size && i < 64; i++)
        g = (g ^ data[i]) * 0x100000001B3ULL;
    g |= 1;
    for (int round = 0; round < 4; round++)
        features(data, size);
    mlf(data, size);
    return 0;
}
