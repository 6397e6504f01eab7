/* Fuzz target of the randomizer core (src/cntkio/_native/rand_core.h): an input describes chunks
 * (their sequence counts), their randomization windows and a seed, or, as raw int32/int64 words,
 * windows, starts, owners, a step's state and segments that may be anything.
 *
 * Whatever the check functions accept must run inside its arrays and finish: the shuffles give
 * permutations; swap_sequences gives a permutation whose every sequence stays in its window; the
 * rolling sweep (rand_roll_swaps over every chunk) gives the same result as swap_sequences, and so
 * does the same sweep run step by step through one ring (as rolling_swap_step runs it), also when
 * the ring is handed garbage (then it must refuse). Segment copies are checked against their
 * bounds first.
 *
 * Built with libFuzzer (clang -fsanitize=fuzzer,address,undefined) or with tests/fuzz/fuzz_driver.c
 * (gcc); see tests/fuzz/run_fuzz.py and `make asan-test`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rand_core.h"

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz_rand: check failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                        \
            abort();                                                                  \
        }                                                                             \
    } while (0)

#define MAXC 32
#define MAXN (MAXC * 8)

static void check_perm(const int64_t *p, int64_t n)
{
    unsigned char seen[MAXN + 1] = {0};
    for (int64_t i = 0; i < n; i++) {
        CHECK(p[i] >= 0 && p[i] < n && !seen[p[i]]);
        seen[p[i]] = 1;
    }
}

static void sweeps(uint64_t seed, int64_t c, const int32_t *b, const int32_t *e, const int64_t *st,
                   const int32_t *ow, const uint8_t *raw, size_t nraw)
{
    const int64_t n = st[c];
    int what = 0;
    int64_t perm[MAXN + 1];
    int32_t src[MAXN + 1];
    const int64_t bad = rand_check_swap(n, c, ow, b, e, st, &what);
    if (bad < 0) {
        rand_swap_sequences(seed, n, ow, b, e, st, perm, src);
        check_perm(perm, n);
        for (int64_t t = 0; t < n; t++)
            CHECK(src[t] >= b[ow[t]] && src[t] < e[ow[t]] && perm[t] >= st[src[t]] && perm[t] < st[src[t] + 1]);
    }
    int64_t cap = 0;
    if (rand_check_rolling(c, b, e, st, n, &cap, &what) >= 0)
        return;
    /* what the rolling sweep accepts, swap_sequences accepts with each position's own chunk as owner */
    int32_t own[MAXN + 1];
    for (int64_t k = 0; k < c; k++)
        for (int64_t t = st[k]; t < st[k + 1]; t++)
            own[t] = (int32_t)k;
    CHECK(rand_check_swap(n, c, own, b, e, st, &what) < 0);
    rand_swap_sequences(seed, n, own, b, e, st, perm, src);
    int64_t pow2 = 1;
    while (pow2 < cap)
        pow2 <<= 1;
    cap = cap ? pow2 : 0;
    int64_t *rp = malloc((size_t)(cap ? cap : 1) * 8);
    int32_t *rs = malloc((size_t)(cap ? cap : 1) * 4), *ro = malloc((size_t)(cap ? cap : 1) * 4);
    int32_t idx[MAXN + 1], idx2[MAXN + 1], s32[MAXN + 1];
    int16_t s16[MAXN + 1];
    mt64_t r;
    mt64_seed(&r, seed);
    rand_roll cur = {0, 0, 0};
    CHECK(rand_roll_swaps(&r, b, e, st, c, cap, rp, rs, ro, 0, c, &cur, -1, 0, idx, s16, NULL, n) == 0);
    for (int64_t t = 0; t < n; t++)
        CHECK(s16[t] == src[t] && idx[t] == perm[t] - st[src[t]]);
    /* step by step through one ring, as rolling_swap_step */
    if (c > 0 && rand_check_step(c, b, e, st, cap, 0, c) < 0) {
        mt64_seed(&r, seed);
        rand_roll s = {0, 0, 0};
        for (int64_t ct = 0; ct < c; ct++) {
            CHECK(rand_check_step(c, b, e, st, cap, ct, ct + 1) < 0);
            const int64_t flush_to = ct + 1 < c ? st[b[ct + 1]] : st[c], lo0 = s.lo;
            CHECK(flush_to >= lo0);
            if (nraw > 8 && raw[ct % nraw] == 0x5A && cap) {      /* garbage in the ring: refused or harmless */
                memset(rs, raw[(ct + 1) % nraw], (size_t)cap * 4);
                rand_roll g = s;
                mt64_t r2 = r;
                (void)rand_roll_swaps(&r2, b, e, st, c, cap, rp, rs, ro, ct, ct + 1, &g, flush_to, lo0, idx2 + lo0,
                                      NULL, s32, flush_to - lo0);
                free(rp); free(rs); free(ro);
                return;
            }
            CHECK(rand_roll_swaps(&r, b, e, st, c, cap, rp, rs, ro, ct, ct + 1, &s, flush_to, lo0, idx2 + lo0, NULL,
                                  s32 + lo0, flush_to - lo0) == 0);
            CHECK(s.lo == flush_to);
        }
        for (int64_t t = 0; t < n; t++)
            CHECK(s32[t] == src[t] && idx2[t] == idx[t]);
    }
    free(rp);
    free(rs);
    free(ro);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 10)
        return 0;
    uint64_t seed;
    memcpy(&seed, data, 8);
    const uint8_t mode = data[8];
    const uint8_t *d = data + 9;
    const size_t nd = size - 9;
    int64_t shuffled[MAXN + 1];
    const int64_t ns = (int64_t)(nd % (MAXN + 1));
    rand_shuffle(shuffled, ns, seed, mode & 1);
    check_perm(shuffled, ns);
    int32_t b[MAXC + 1], e[MAXC + 1], ow[MAXN + 1];
    int64_t st[MAXC + 2];
    int64_t c = 1 + (int64_t)(d[0] % MAXC);
    if ((size_t)c + 1 > nd)
        c = (int64_t)nd - 1;
    if (c < 1)
        return 0;
    if (mode & 2) {                           /* raw: windows, starts and owners as the bytes say */
        for (int64_t k = 0; k < c; k++) {
            b[k] = (int32_t)(int8_t)d[1 + k] % (int32_t)(c + 2);
            e[k] = (int32_t)(d[1 + (k + 3) % (nd - 1)] % (c + 2));
        }
        st[0] = 0;
        for (int64_t k = 1; k <= c; k++)
            st[k] = st[k - 1] + (int64_t)(int8_t)d[(k * 7) % nd] % 9;
        if (mode & 4)
            st[c / 2] = (mode & 8) ? INT64_MAX : INT64_MIN;
        const int64_t n = st[c] >= 0 && st[c] <= MAXN ? st[c] : 0;
        for (int64_t t = 0; t < n; t++)
            ow[t] = (int32_t)(d[(t * 5) % nd] % (c + 1));
        if (st[c] >= 0 && st[c] <= MAXN)
            sweeps(seed, c, b, e, st, ow, d, nd);
        int what;
        int64_t cap;
        (void)rand_check_rolling(c, b, e, st, st[c], &cap, &what);
        (void)rand_check_step(c, b, e, st, MAXN, (int64_t)(int8_t)d[0], (int64_t)(int8_t)d[1 % nd]);
    } else {                                  /* chunks of 0..7 sequences, windows of w chunks each side */
        const int64_t w = d[1 % nd] % 6;
        st[0] = 0;
        for (int64_t k = 0; k < c; k++) {
            st[k + 1] = st[k] + d[(2 + k) % nd] % 8;
            b[k] = (int32_t)(k - w < 0 ? 0 : k - w);
            e[k] = (int32_t)(k + 1 + w > c ? c : k + 1 + w);
            for (int64_t t = st[k]; t < st[k + 1]; t++)
                ow[t] = (int32_t)k;
        }
        sweeps(seed, c, b, e, st, ow, d, nd);
    }
    /* segments */
    int64_t src[16], dst[16], a[4], bb[4], l[4], h[4];
    for (int i = 0; i < 16; i++)
        src[i] = (int64_t)((uint64_t)d[i % nd] << (d[(i + 1) % nd] % 60));
    for (int i = 0; i < 4; i++) {
        int64_t v[3];
        for (int j = 0; j < 3; j++) {
            const uint8_t x = d[(3 * i + j + 5) % nd];
            v[j] = x < 240 ? (int64_t)(x % 20) - 2 : (x & 1 ? INT64_MAX - (x & 7) : INT64_MIN + (x & 7));
        }
        a[i] = v[0];
        bb[i] = v[1];
        l[i] = v[2];
        h[i] = (int64_t)((uint64_t)src[i] * 0x9E3779B97F4A7C15ULL);
    }
    if (rand_check_segments(4, a, bb, l, 16, 16) < 0)
        rand_copy_segments((char *)dst, (const char *)src, 8, 4, a, bb, l, (mode & 16) ? h : NULL);
    return 0;
}
