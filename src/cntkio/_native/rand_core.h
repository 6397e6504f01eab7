/* The randomizer's and packer's loops in plain C (no Python): std::mt19937_64, CNTK's shuffles,
 * the BlockRandomizer's in-window sequence swaps (whole sweep, rolling, step-wise) and the
 * segment copies: the core of cntkio._native._rand (rand.c holds the Python glue and documents
 * each function), also built alone under AddressSanitizer and UndefinedBehaviorSanitizer by the
 * fuzz harness (tests/fuzz/fuzz_rand.c).
 *
 * The arrays come from chunk and sequence counts (of files, through the engine): each check
 * function returns the first chunk or position that breaks its rule (or -1), without arithmetic
 * that could overflow before the comparison, so that the loops after it can neither index outside
 * an array, divide by zero, nor draw forever.
 */
#ifndef CNTKIO_RAND_CORE_H
#define CNTKIO_RAND_CORE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MT_N 312
#define MT_M 156

typedef struct {
    uint64_t mt[MT_N];
    int idx;
} mt64_t;

static void mt64_seed(mt64_t *r, uint64_t seed)
{
    r->mt[0] = seed;
    for (int i = 1; i < MT_N; i++) {
        uint64_t prev = r->mt[i - 1];
        r->mt[i] = 6364136223846793005ULL * (prev ^ (prev >> 62)) + (uint64_t)i;
    }
    r->idx = MT_N;
}

static void mt64_twist(mt64_t *r)
{
    for (int i = 0; i < MT_N; i++) {
        uint64_t x = (r->mt[i] & 0xFFFFFFFF80000000ULL) | (r->mt[(i + 1) % MT_N] & 0x7FFFFFFFULL);
        uint64_t xa = (x >> 1) ^ ((x & 1ULL) ? 0xB5026F5AA96619E9ULL : 0ULL);
        r->mt[i] = r->mt[(i + MT_M) % MT_N] ^ xa;
    }
    r->idx = 0;
}

static inline uint64_t mt64_next(mt64_t *r)
{
    if (r->idx >= MT_N)
        mt64_twist(r);
    uint64_t y = r->mt[r->idx++];
    y ^= (y >> 29) & 0x5555555555555555ULL;
    y ^= (y << 17) & 0x71D67FFFEDA60000ULL;
    y ^= (y << 37) & 0xFFF7EEE000000000ULL;
    y ^= y >> 43;
    return y;
}

/* 0..n-1 shuffled (see rand.c, full_range_shuffle and window_shuffle) */
static void rand_shuffle(int64_t *o, int64_t n, uint64_t seed, int full_range)
{
    for (int64_t i = 0; i < n; i++)
        o[i] = i;
    mt64_t r;
    mt64_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) {
        uint64_t j = full_range ? mt64_next(&r) % (uint64_t)n : (uint64_t)i + mt64_next(&r) % (uint64_t)(n - i);
        int64_t t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
}

/* seq_start st[0..c]: from 0 to n, never decreasing. -1 when so, else the first k with st[k+1] < st[k]
 * (or 0 / c for the ends). */
static int64_t rand_check_starts(int64_t c, const int64_t *st, int64_t n)
{
    if (st[0] != 0)
        return 0;
    for (int64_t k = 0; k < c; k++)
        if (st[k + 1] < st[k])
            return k;
    return st[c] == n ? -1 : c;
}

/* window [b[k], e[k]) of chunk k: b <= k < e <= c (monotone: never below chunk k - 1's). */
static inline int rand_window_ok(int64_t k, const int32_t *b, const int32_t *e, int64_t c, int monotone)
{
    return b[k] >= 0 && e[k] <= c && b[k] <= k && k < e[k] &&
           (!monotone || k == 0 || (b[k] >= b[k - 1] && e[k] >= e[k - 1]));
}

/* swap_sequences' checks: -1 or the failing chunk (*what = 1: its window; 2: seq_start) or
 * position (*what = 3: its owner). */
static int64_t rand_check_swap(int64_t n, int64_t c, const int32_t *ow, const int32_t *b, const int32_t *e,
                               const int64_t *st, int *what)
{
    for (int64_t k = 0; k < c; k++)
        if (!rand_window_ok(k, b, e, c, 0)) {
            *what = 1;
            return k;
        }
    if (c > 0 || n > 0) {
        int64_t k = rand_check_starts(c, st, n);
        if (k >= 0) {
            *what = 2;
            return k;
        }
    }
    for (int64_t t = 0; t < n; t++)
        if (ow[t] < 0 || ow[t] >= c || t < st[ow[t]] || t >= st[ow[t] + 1]) {
            *what = 3;
            return t;
        }
    return -1;
}

/* The BlockRandomizer's in-window swaps over positions 0..n-1 (arguments checked by
 * rand_check_swap: each position t lies in its owner's sequences, so the draw j = t is always
 * accepted and every draw stays inside t's window). */
static void rand_swap_sequences(uint64_t seed, int64_t n, const int32_t *ow, const int32_t *b, const int32_t *e,
                                const int64_t *st, int64_t *p, int32_t *s)
{
    for (int64_t t = 0; t < n; t++) {
        p[t] = t;
        s[t] = ow[t];
    }
    mt64_t r;
    mt64_seed(&r, seed);
    for (int64_t t = 0; t < n; t++) {
        int32_t ct = ow[t];
        int32_t tb = b[ct], te = e[ct];
        int64_t p0 = st[tb], p1 = st[te];
        uint64_t span = (uint64_t)(p1 - p0);
        for (;;) {
            int64_t j = p0 + (int64_t)(mt64_next(&r) % span);
            int32_t cj = ow[j];
            if (s[j] < tb || s[j] >= te)
                continue;
            if (s[t] < b[cj] || s[t] >= e[cj])
                continue;
            int64_t tp = p[t]; p[t] = p[j]; p[j] = tp;
            int32_t ts = s[t]; s[t] = s[j]; s[j] = ts;
            break;
        }
    }
}

/* The rolling swaps' cursors: *lo (positions below it are written out), *hi (positions below it
 * have entered the rings), *oc (the chunk of position hi). */
typedef struct {
    int64_t lo, hi;
    int32_t oc;
} rand_roll;

/* The rolling window's in-window swaps over randomized chunks ct0 .. ct_end - 1 (see rand.c,
 * swap_sequences_rolling), then positions below flush_to (below hi when flush_to < 0) written
 * out to out_i and out_s16 or out_s32 at q - base. The rings rp, rs, ro (cap entries, a power of
 * two) may hold anything: every entry read is checked against what it must be. 0, or -1 when an
 * entry or a cursor is not (the outputs are then partly written). */
static int rand_roll_swaps(mt64_t *r, const int32_t *b, const int32_t *e, const int64_t *st, int64_t c,
                           int64_t cap, int64_t *rp, int32_t *rs, int32_t *ro, int64_t ct0, int64_t ct_end,
                           rand_roll *cur, int64_t flush_to, int64_t base, int32_t *out_i, int16_t *out_s16,
                           int32_t *out_s32, int64_t nout)
{
    int64_t lo = cur->lo, hi = cur->hi;
    int32_t oc = cur->oc;
    const int64_t n = st[c];
#define RING(j) ((j) & (cap - 1))
#define FLUSH(q)                                                                         \
    do {                                                                                 \
        int64_t q_ = (q), x_ = RING(q_);                                                 \
        int32_t s_ = rs[x_];                                                             \
        if (q_ - base < 0 || q_ - base >= nout || s_ < 0 || s_ >= c || rp[x_] < st[s_] || \
            rp[x_] - st[s_] > INT32_MAX)                                                 \
            return -1;                                                                   \
        out_i[q_ - base] = (int32_t)(rp[x_] - st[s_]);                                   \
        if (out_s16)                                                                     \
            out_s16[q_ - base] = (int16_t)s_;                                            \
        else                                                                             \
            out_s32[q_ - base] = s_;                                                     \
    } while (0)
    for (int64_t ct = ct0; ct < ct_end; ct++) {
        int32_t tb = b[ct], te = e[ct];
        int64_t p0 = st[tb], p1 = st[te];
        if (lo > p0 || p1 - p0 > cap || hi > p1 || p1 > n)
            return -1;
        for (; lo < p0; lo++)
            FLUSH(lo);
        for (; hi < p1; hi++) {
            while (oc + 1 < c && st[oc + 1] <= hi)
                oc++;
            int64_t x = RING(hi);
            rp[x] = hi;
            rs[x] = oc;
            ro[x] = oc;
        }
        uint64_t span = (uint64_t)(p1 - p0);
        for (int64_t t = st[ct]; t < st[ct + 1]; t++) {
            int64_t xt = RING(t);
            if (ro[xt] != ct || rs[xt] < tb || rs[xt] >= te)   /* then j = t is always accepted */
                return -1;
            for (;;) {
                int64_t j = p0 + (int64_t)(mt64_next(r) % span);
                int64_t xj = RING(j);
                int32_t cj = ro[xj];
                if (cj < 0 || cj >= c)
                    return -1;
                if (rs[xj] < tb || rs[xj] >= te)
                    continue;
                if (rs[xt] < b[cj] || rs[xt] >= e[cj])
                    continue;
                int64_t tp = rp[xt]; rp[xt] = rp[xj]; rp[xj] = tp;
                int32_t ts = rs[xt]; rs[xt] = rs[xj]; rs[xj] = ts;
                break;
            }
        }
    }
    if (flush_to < 0)
        flush_to = hi;
    if (flush_to > hi)
        return -1;
    for (; lo < flush_to; lo++)
        FLUSH(lo);
#undef FLUSH
#undef RING
    cur->lo = lo;
    cur->hi = hi;
    cur->oc = oc;
    return 0;
}

/* swap_sequences_rolling's checks: -1, or the failing chunk (*what = 1: its window or its
 * sequence count; 2: seq_start). *cap receives the widest window in positions. */
static int64_t rand_check_rolling(int64_t c, const int32_t *b, const int32_t *e, const int64_t *st, int64_t n,
                                  int64_t *cap, int *what)
{
    *cap = 0;
    if (c > 0 || n > 0) {
        int64_t k = rand_check_starts(c, st, n);
        if (k >= 0) {
            *what = 2;
            return k;
        }
    }
    for (int64_t k = 0; k < c; k++) {
        if (!rand_window_ok(k, b, e, c, 1) || st[k + 1] - st[k] > INT32_MAX) {
            *what = 1;
            return k;
        }
        int64_t span = st[e[k]] - st[b[k]];
        if (span > *cap)
            *cap = span;
    }
    return -1;
}

/* rolling_swap_step's checks (for the chunks the step touches): the windows of chunks ct0 ..
 * ct_end (ct_end - 1 at the last chunk) as rand_check_rolling's, seq_start never decreasing over
 * the windows' positions and from 0 to at most the last position, spans within the ring. -1 or the
 * failing chunk. */
static int64_t rand_check_step(int64_t c, const int32_t *b, const int32_t *e, const int64_t *st, int64_t cap,
                               int64_t ct0, int64_t ct_end)
{
    if (c <= 0 || ct0 < 0 || ct_end < ct0 || ct_end > c || st[0] != 0 || st[c] < 0)
        return ct0 < 0 ? 0 : ct0;
    const int64_t last = ct_end < c ? ct_end + 1 : c;
    for (int64_t k = ct0; k < last; k++) {
        if (!rand_window_ok(k, b, e, c, 1) || st[k + 1] < st[k] || st[k + 1] - st[k] > INT32_MAX)
            return k;
        for (int64_t j = b[k]; j < e[k]; j++)
            if (st[j + 1] < st[j] || st[j + 1] > st[c])
                return k;
        if (st[e[k]] - st[b[k]] > cap)
            return k;
    }
    return -1;
}

/* copy_segments' checks: segment i is rows [a[i], a[i] + l[i]) of src (ns rows) to rows from b[i]
 * of dst (nd rows). -1 or the failing segment. */
static int64_t rand_check_segments(int64_t n, const int64_t *a, const int64_t *b, const int64_t *l, int64_t ns,
                                   int64_t nd)
{
    for (int64_t i = 0; i < n; i++)
        if (l[i] < 0 || a[i] < 0 || b[i] < 0 || a[i] > ns - l[i] || b[i] > nd - l[i])
            return i;
    return -1;
}

/* The copies checked by rand_check_segments (rows of `row` bytes); with h, src and dst are int64
 * and h[i] is added to each element of segment i (modulo 2^64: never undefined). */
static void rand_copy_segments(char *dp, const char *sp, int64_t row, int64_t n, const int64_t *a, const int64_t *b,
                               const int64_t *l, const int64_t *h)
{
    if (h) {
        const int64_t *s64 = (const int64_t *)sp;
        int64_t *d64 = (int64_t *)dp;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < l[i]; k++)
                d64[b[i] + k] = (int64_t)((uint64_t)s64[a[i] + k] + (uint64_t)h[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (l[i])
                memcpy(dp + b[i] * row, sp + a[i] * row, (size_t)(l[i] * row));
    }
}

#endif /* CNTKIO_RAND_CORE_H */
