/* Correctly rounded decimal -> float64 conversion for the CTF parser (no Python, no numpy).
 *
 * The result is the value Python's float() gives for the same text: the nearest double, ties to
 * even. Short mantissas (<= 19 significant digits) with a decimal exponent in the range where the
 * power of ten is exact in double (|e| <= 22, or a little more when the mantissa has room) are
 * computed with one correctly rounded IEEE multiplication or division (Clinger's fast path);
 * everything else goes to the C library's strtod in the "C" locale, which is correctly rounded in
 * glibc and in macOS' libc. The grammar is checked here, so strtod only ever sees a validated
 * decimal literal (never hex, inf or nan).
 *
 * Kept free of the Python C API so that the sanitizer/fuzz harness can compile it alone.
 */
#ifndef CNTKIO_CTF_NUMBER_H
#define CNTKIO_CTF_NUMBER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <locale.h>
#include <stdio.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif

static const double ctf_pow10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static const uint64_t ctf_pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

#if defined(__GLIBC__) || defined(__APPLE__)
#define CTF_HAVE_STRTOD_L 1
static locale_t ctf_c_locale = (locale_t)0;
#endif

/* Call once before parsing (not thread-safe itself; the module init and the fuzz main call it). */
static int ctf_number_init(void) {
#ifdef CTF_HAVE_STRTOD_L
    if (ctf_c_locale == (locale_t)0) {
        ctf_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        if (ctf_c_locale == (locale_t)0) return -1;
    }
#endif
    return 0;
}

/* strtod in the "C" locale on a NUL-terminated decimal literal. */
static double ctf_strtod_c(const char *buf) {
#ifdef CTF_HAVE_STRTOD_L
    return strtod_l(buf, NULL, ctf_c_locale);
#else
    char tmp[CTF_CANON_MAX];
    const char *dp = localeconv()->decimal_point;
    if (dp[0] != '.' && dp[1] == '\0') {  /* the current locale's decimal point stands in for '.' */
        size_t n = strlen(buf);
        char *dot;
        memcpy(tmp, buf, n + 1);
        dot = memchr(tmp, '.', n);
        if (dot) *dot = dp[0];
        return strtod(tmp, NULL);
    }
    return strtod(buf, NULL);
#endif
}

/* Correctly rounded value of a validated literal [p, end) without a length limit: the mantissa is
 * rewritten as at most CTF_KEEP significant digits (plus one non-zero "sticky" digit when non-zero
 * digits were cut, which keeps every rounding decision: a double needs at most 768 significant
 * decimal digits to be decided) and an integer exponent, then handed to strtod. No allocation. */
#define CTF_KEEP 780
#define CTF_CANON_MAX (CTF_KEEP + 40)
static double ctf_slow_strtod(const char *p, const char *end) {
    char buf[CTF_CANON_MAX];
    size_t n = 0;
    int64_t kept_after_point = 0, cut_before_point = 0, ex = 0;
    size_t s0;  /* where the digits start in buf (after a '-') */
    int sticky = 0, seen_point = 0, eneg = 0;
    if (p < end && (*p == '-' || *p == '+')) { if (*p == '-') buf[n++] = '-'; p++; }
    s0 = n;
    for (; p < end; p++) {
        char c = *p;
        if (c == '.') { seen_point = 1; continue; }
        if ((unsigned)(c - '0') >= 10u) break;
        if (n == s0 && c == '0') {  /* leading zeros */
            if (seen_point) kept_after_point++;
            continue;
        }
        if (n - s0 < CTF_KEEP) {
            buf[n++] = c;
            if (seen_point) kept_after_point++;
        } else {
            if (c != '0') sticky = 1;
            if (!seen_point) cut_before_point++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '-' || *p == '+')) { eneg = (*p == '-'); p++; }
        for (; p < end && (unsigned)(*p - '0') < 10u; p++)
            if (ex < 100000000) ex = ex * 10 + (*p - '0');
        if (eneg) ex = -ex;
    }
    if (n == s0) buf[n++] = '0';
    if (sticky) { buf[n++] = '1'; cut_before_point--; }
    /* value = digits * 10^(ex + cut_before_point - kept_after_point) */
    n += (size_t)snprintf(buf + n, sizeof buf - n, "e%lld",
                          (long long)(ex + cut_before_point - kept_after_point));
    (void)n;
    return ctf_strtod_c(buf);
}

/* Grammar options (set by the caller from the reference parser's rules). */
typedef struct {
    int allow_leading_dot;   /* ".5" */
    int allow_trailing_dot;  /* "1." and "1.e5" */
} ctf_numfmt;

/* Parses one decimal literal starting at p, stopping at the first byte that cannot continue it.
 * On success returns the end pointer and stores the value; returns NULL when [p, ...) does not
 * start with a literal (no digits, or a dangling exponent like "1e" / "1e+"). The caller checks
 * that the byte at the end pointer is a delimiter ("1-2" stops at '-', which is not one).
 * grammar: [+-]? (digits ('.' digits*)? | '.' digits) ([eE] [+-]? digits)?  */
static inline const char *ctf_parse_number(const char *p, const char *end, const ctf_numfmt *fmt,
                                           double *out) {
    const char *start = p;
    int neg = 0;
    uint64_t mant = 0;
    int nsig = 0;          /* significant digits seen (after leading zeros) */
    int ndigits = 0;       /* all mantissa digits, to reject "" and "." */
    int32_t dropped = 0;   /* decimal exponent adjustment from the fraction */
    int64_t e10;
    if (p < end && (*p == '-' || *p == '+')) { neg = (*p == '-'); p++; }
    /* integer part */
    while (p < end && *p == '0') { p++; ndigits++; }
    while (p < end && (unsigned)(*p - '0') < 10u) {
        if (nsig < 19) mant = mant * 10u + (uint64_t)(*p - '0');
        else dropped++;  /* more than 19 significant digits: slow path below */
        nsig++; ndigits++; p++;
    }
    int int_digits = ndigits;
    if (p < end && *p == '.') {
        const char *dot = p;
        p++;
        int frac = 0;
        if (nsig == 0) {  /* leading zeros of the fraction are not significant */
            while (p < end && *p == '0') { p++; frac++; }
        }
        while (p < end && (unsigned)(*p - '0') < 10u) {
            if (nsig < 19) { mant = mant * 10u + (uint64_t)(*p - '0'); frac++; }
            nsig++; p++;
        }
        int fdigits = (int)(p - dot - 1);
        ndigits += fdigits;
        if (int_digits == 0 && (fdigits == 0 || !fmt->allow_leading_dot)) return NULL;
        if (fdigits == 0 && !fmt->allow_trailing_dot) return NULL;
        dropped -= frac;
    } else if (ndigits == 0) {
        return NULL;
    }
    int64_t ex = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        int eneg = 0;
        if (q < end && (*q == '-' || *q == '+')) { eneg = (*q == '-'); q++; }
        if (!(q < end && (unsigned)(*q - '0') < 10u)) return NULL;  /* "1e", "1e+" */
        while (q < end && (unsigned)(*q - '0') < 10u) {
            if (ex < 100000000) ex = ex * 10 + (*q - '0');
            q++;
        }
        if (eneg) ex = -ex;
        p = q;
    }
    if (mant == 0 && nsig == 0) { *out = neg ? -0.0 : 0.0; return p; }
    if (nsig <= 19) {
        e10 = ex + dropped;
        if (mant <= (1ull << 53)) {
            double m = (double)mant, v;
            if (e10 == 0) { *out = neg ? -m : m; return p; }
            if (e10 > 0 && e10 <= 22) { v = m * ctf_pow10[e10]; *out = neg ? -v : v; return p; }
            if (e10 < 0 && e10 >= -22) { v = m / ctf_pow10[-e10]; *out = neg ? -v : v; return p; }
            if (e10 > 22 && e10 <= 22 + 19) {  /* move exact powers of ten into the mantissa */
                int64_t k = e10 - 22;
                if (mant <= (1ull << 53) / ctf_pow10_u64[k]) {
                    v = (double)(mant * ctf_pow10_u64[k]) * 1e22;
                    *out = neg ? -v : v;
                    return p;
                }
            }
        }
    }
    *out = ctf_slow_strtod(start, p);
    return p;
}


/* ------------------------------------------------------------------------------------------ */
/* SWAR helpers for the parser's fast path (ctf_core.h, ctf_value): eight digit bytes examined
 * at once, so a fraction costs no data-dependent branch per digit. Little-endian only (elsewhere
 * the fast path is compiled out). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CTF_HAVE_SWAR 1
#if defined(__GNUC__)
#define CTF_SWAR_INLINE __attribute__((always_inline))
#else
#define CTF_SWAR_INLINE
#endif

static inline CTF_SWAR_INLINE uint64_t ctf_load8(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* Number of leading ASCII digits in the 8 bytes of x (byte 0 first), 0..8. */
static inline CTF_SWAR_INLINE int ctf_digit_run8(uint64_t x) {
    const uint64_t lo = 0x0F0F0F0F0F0F0F0FULL, hi = 0xF0F0F0F0F0F0F0F0ULL;
    uint64_t nd = ((x & hi) ^ 0x3030303030303030ULL) | (((x & lo) + 0x0606060606060606ULL) & 0x1010101010101010ULL);
    uint64_t m = (nd | ((nd & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL)) & 0x8080808080808080ULL;
    return m ? (__builtin_ctzll(m) >> 3) : 8;
}

/* Value of the first n (1..8) digit bytes of x. */
static inline CTF_SWAR_INLINE uint64_t ctf_digits_value8(uint64_t x, int n) {
    x <<= (unsigned)(8 - n) * 8u; /* leading bytes become 0, i.e. leading zero digits */
    x &= 0x0F0F0F0F0F0F0F0FULL;
    x = (x * 2561u) >> 8;
    x = ((x & 0x00FF00FF00FF00FFULL) * 6553601u) >> 16;
    return ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
}

#endif

#endif /* CNTKIO_CTF_NUMBER_H */
