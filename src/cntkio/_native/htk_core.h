/* The HTK frame copies, row gathers and MLF token scan in plain C (no Python): the core of
 * cntkio._native._htk (htk.c holds the Python glue and the pread loop), also built alone under
 * AddressSanitizer and UndefinedBehaviorSanitizer by the fuzz harness (tests/fuzz/fuzz_htk.c).
 *
 * Offsets and counts are computed from HTK headers and SCP ranges, so any int64 may arrive: each
 * check compares by subtraction or division from values already known to be in range, never by a
 * sum or product that could overflow before it is compared. A check returns the index of the
 * first range out of bounds, or -1 when every range is inside its buffer.
 */
#ifndef CNTKIO_HTK_CORE_H
#define CNTKIO_HTK_CORE_H

#include <stdint.h>
#include <string.h>

/* counts[k] floats to element d_off[k] of a buffer of dst_n floats, from byte s_off[k] of a buffer
 * of src_len bytes (src_len < 0: no source buffer; the byte range must then stay below 2^63). */
static int64_t htk_check_copies(int64_t n, const int64_t *d_off, const int64_t *s_off, const int64_t *count,
                                int64_t dst_n, int64_t src_len)
{
    for (int64_t k = 0; k < n; k++) {
        const int64_t c = count[k], d = d_off[k], s = s_off[k];
        if (c < 0 || d < 0 || s < 0 || d > dst_n || c > dst_n - d)
            return k;
        if (src_len >= 0 ? (s > src_len || c > (src_len - s) / 4) : c > (INT64_MAX - s) / 4)
            return k;
    }
    return -1;
}

/* n 4-byte words from in (any alignment) to out, byte-reversed; written so that the compiler
   vectorizes it (byte shuffles) */
static void htk_swap_words(uint32_t *restrict out, const unsigned char *restrict in, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        const unsigned char *b = in + 4 * j;
        out[j] = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | (uint32_t)b[3];
    }
}

static void htk_swap_in_place(uint32_t *w, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        w[j] = __builtin_bswap32(w[j]);
}

/* The copies checked by htk_check_copies (with a source buffer), byte-swapped when swap. */
static void htk_swap_copy(float *dst, const char *src, int64_t n, const int64_t *d_off, const int64_t *s_off,
                          const int64_t *count, int swap)
{
    for (int64_t k = 0; k < n; k++) {
        float *o = dst + d_off[k];
        const char *in = src + s_off[k];
        if (!swap)
            memcpy(o, in, (size_t)count[k] * 4);
        else
            htk_swap_words((uint32_t *)o, (const unsigned char *)in, count[k]);
    }
}

/* Row i of out (width values) is the width floats from element rows[i] * row_floats of source
 * which[i] (ns sources, len[j] floats each); out holds out_len bytes of elem_size-byte values.
 * -2 when the sizes do not agree (n rows of width values do not fit in out). */
static int64_t htk_check_rows(int64_t n, const int64_t *which, const int64_t *rows, int64_t row_floats,
                              int64_t width, int64_t ns, const int64_t *len, int64_t out_len, int64_t elem_size)
{
    if (n < 0 || width < 0 || row_floats < 0 || out_len < 0 || elem_size < 1)
        return -2;
    if (width && n > out_len / elem_size / width)
        return -2;
    for (int64_t i = 0; i < n; i++) {
        const int64_t j = which[i], r = rows[i];
        if (j < 0 || j >= ns || r < 0 || width > len[j])
            return i;
        if (row_floats && r > (len[j] - width) / row_floats)
            return i;
    }
    return -1;
}

static void htk_gather_rows(char *out, const float *const *base, int64_t n, const int64_t *w, const int64_t *r,
                            int64_t row_floats, int64_t width, int out_double)
{
    if (!out_double && width == 1) {      /* one 4-byte value a row (labels): no memcpy call */
        uint32_t *o32 = (uint32_t *)out;
        for (int64_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, base[w[i]] + r[i] * row_floats, 4);
            o32[i] = v;
        }
    } else if (!out_double) {
        for (int64_t i = 0; i < n; i++)
            memcpy(out + (size_t)i * (size_t)width * 4, base[w[i]] + r[i] * row_floats, (size_t)width * 4);
    } else {
        for (int64_t i = 0; i < n; i++) {
            double *od = (double *)out + (size_t)i * (size_t)width;
            const float *in = base[w[i]] + r[i] * row_floats;
            for (int64_t j = 0; j < width; j++)
                od[j] = in[j];
        }
    }
}

/* out[i] = element idx[i] of uint16 source which[i] (ns sources of len[j] elements). */
static int64_t htk_check_u16(int64_t n, const int64_t *which, const int64_t *idx, int64_t ns, const int64_t *len)
{
    for (int64_t i = 0; i < n; i++)
        if (which[i] < 0 || which[i] >= ns || idx[i] < 0 || idx[i] >= len[which[i]])
            return i;
    return -1;
}

static int htk_decimal(const unsigned char *p, int64_t n, int64_t *out)
{
    int64_t v = 0;
    if (n < 1 || n > 18)
        return 0;
    for (int64_t j = 0; j < n; j++) {
        if (p[j] < '0' || p[j] > '9')
            return 0;
        v = v * 10 + (p[j] - '0');
    }
    *out = v;
    return 1;
}

/* Lines [A[i], B[i]) of data (len bytes): -1 when each is inside, else the first that is not. */
static int64_t htk_check_lines(int64_t n, const int64_t *A, const int64_t *B, int64_t len)
{
    for (int64_t i = 0; i < n; i++)
        if (A[i] < 0 || B[i] < A[i] || B[i] > len)
            return i;
    return -1;
}

/* The MLF segment-line token scan (see htk.c, mlf_tokens) of lines checked by htk_check_lines. */
static void htk_mlf_tokens(const unsigned char *d, int64_t n, const int64_t *A, const int64_t *B, int64_t *ntok,
                           int64_t *v0, int64_t *v1, int64_t *ok, int64_t *la, int64_t *lb, uint64_t *lh)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t ts[3] = {0, 0, 0}, te[3] = {0, 0, 0}, count = 0;
        int64_t p = A[i], e = B[i];
        while (p < e) {
            while (p < e && d[p] == ' ')
                p++;
            if (p >= e)
                break;
            int64_t q = p;
            while (q < e && d[q] != ' ')
                q++;
            if (count < 3) {
                ts[count] = p;
                te[count] = q;
            }
            count++;
            p = q;
        }
        ntok[i] = count;
        v0[i] = v1[i] = 0;
        ok[i] = 0;
        la[i] = lb[i] = 0;
        lh[i] = 0;
        if (count >= 3) {
            int64_t x = 0, y = 0;
            int a_ok = htk_decimal(d + ts[0], te[0] - ts[0], &x), b_ok = htk_decimal(d + ts[1], te[1] - ts[1], &y);
            v0[i] = a_ok ? x : 0;
            v1[i] = b_ok ? y : 0;
            ok[i] = a_ok && b_ok;
            la[i] = ts[2];
            lb[i] = te[2];
            uint64_t h = 0xCBF29CE484222325ULL;
            for (int64_t j = ts[2]; j < te[2]; j++)
                h = (h ^ d[j]) * 0x100000001B3ULL;
            lh[i] = h;
        }
    }
}

#endif /* CNTKIO_HTK_CORE_H */
