/* UCIFastReader text indexing and record parsing in plain C (no Python): the core of
 * cntkio._native._uci (uci.c holds the Python glue), also built alone under AddressSanitizer and
 * UndefinedBehaviorSanitizer by the fuzz harness (tests/fuzz/fuzz_uci.c).
 *
 * Reads only [begin, end) of the buffer and writes only the outputs' declared shapes; every
 * argument is checked by uci_check_args before a parse, without arithmetic that could overflow.
 * Memory grows with what is found (chunks, bad records), never with a number read from the text.
 */
#ifndef CNTKIO_UCI_CORE_H
#define CNTKIO_UCI_CORE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ctf_number.h"

#define UCI_MAX_OUT 64

static inline int uci_is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* the end of the line starting at p (pointer to '\n' or end) */
static inline const char *uci_eol(const char *p, const char *end)
{
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return q ? q : end;
}

static inline int uci_blank(const char *p, const char *e)
{
    for (; p < e; p++)
        if (!uci_is_space(*p))
            return 0;
    return 1;
}

typedef struct { int64_t *v; int64_t n, cap; } uci_i64vec;

static int uci_push(uci_i64vec *a, int64_t x)
{
    if (a->n == a->cap) {
        int64_t cap = a->cap ? a->cap * 2 : 64;
        int64_t *nv = realloc(a->v, (size_t)cap * sizeof(int64_t));
        if (!nv)
            return -1;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Chunks of whole lines of base[0:len): out[0..3] receive begin, end, record count and first line
 * per chunk. -1 when memory ran out (the vectors hold what was pushed; the caller frees them). */
static int uci_index(const char *base, int64_t len, long long per_chunk, long long bytes_per_chunk,
                     uci_i64vec out[4])
{
    const char *p = base, *end = base + len;
    int64_t line = 1, count = 0, chunk_begin = 0, chunk_line = 1;
    int oom = 0;
    while (p < end && !oom) {
        const char *q = uci_eol(p, end);
        if (!uci_blank(p, q)) {
            if (count == 0) {
                chunk_begin = p - base;
                chunk_line = line;
            }
            count++;
        }
        p = q < end ? q + 1 : end;
        line++;
        if (count && ((per_chunk > 0 && count >= per_chunk) ||
                      (per_chunk <= 0 && (p - base) - chunk_begin >= bytes_per_chunk))) {
            oom |= uci_push(&out[0], chunk_begin) | uci_push(&out[1], p - base) | uci_push(&out[2], count) |
                   uci_push(&out[3], chunk_line);
            count = 0;
        }
    }
    if (count && !oom)
        oom |= uci_push(&out[0], chunk_begin) | uci_push(&out[1], end - base) | uci_push(&out[2], count) |
               uci_push(&out[3], chunk_line);
    return oom ? -1 : 0;
}

typedef struct { int64_t record, line, column, code; } uci_err;

/* What a parse writes to: nout value arrays (vdata[k], nrec x vcols[k], float32 when is32 else
 * float64), spans (nrec x nspan x 2 int64), bad (nrec bytes); colmap has ncols entries. */
typedef struct {
    const int32_t *colmap;
    int64_t ncols, nout, nrec, nspan;
    char *vdata[UCI_MAX_OUT];
    int64_t vcols[UCI_MAX_OUT];
    int is32;
    int64_t *spans;
    uint8_t *bad;
} uci_outputs;

/* NULL when a parse of base[begin:end) (len bytes) from line first_line may run, else what is
 * wrong: the range inside the buffer, line numbers that stay below 2^62 (a line takes at least
 * a byte), each column mapped to an output that exists. */
static const char *uci_check_args(const uci_outputs *o, int64_t len, int64_t begin, int64_t end,
                                  int64_t first_line)
{
    if (o->nout < 0 || o->nout > UCI_MAX_OUT || o->nrec < 0 || o->nspan < 0 || o->ncols < 0)
        return "parse_records: bad argument types, shapes or range";
    if (begin < 0 || end < begin || end > len || first_line < 0 || first_line > ((int64_t)1 << 62) - len)
        return "parse_records: bad argument types, shapes or range";
    for (int64_t k = 0; k < o->nout; k++)
        if (o->vcols[k] < 0)
            return "parse_records: bad argument types, shapes or range";
    for (int64_t j = 0; j < o->ncols; j++) {
        const int32_t m = o->colmap[j];
        if ((m >= 0 && ((m >> 16) >= o->nout || (m & 0xFFFF) >= o->vcols[m >> 16])) ||
            (m <= -2 && -2 - (int64_t)m >= o->nspan))
            return "parse_records: colmap names an output out of range";
    }
    return NULL;
}

/* a short plain integer ("0", "255", "-3"): its value, without the general number parser */
static inline int uci_small_int(const char *s, const char *e, double *out)
{
    int neg = 0;
    if (s < e && *s == '-') {
        neg = 1;
        s++;
    }
    if (e - s < 1 || e - s > 9)
        return 0;
    int64_t v = 0;
    for (; s < e; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9u)
            return 0;
        v = v * 10 + d;
    }
    *out = neg ? -(double)v : (double)v;
    return 1;
}

/* Parse the records of base[begin:end) (arguments checked by uci_check_args) into o: at most
 * o->nrec records. *errs (realloc'd, *nerr entries; the caller frees it) lists the bad records.
 * The number of records parsed, or -1 when memory ran out. */
static int64_t uci_parse(const char *base, int64_t begin, int64_t end_off, int64_t first_line,
                         const uci_outputs *o, uci_err **errs, int64_t *nerr)
{
    const ctf_numfmt fmt = {1, 1};
    const char *p = base + begin, *end = base + end_off;
    int64_t line = first_line, rec = 0, caperr = 0;
    *errs = NULL;
    *nerr = 0;
    for (; p < end && rec < o->nrec; line++) {
        const char *q = uci_eol(p, end);
        if (uci_blank(p, q)) {
            p = q < end ? q + 1 : end;
            continue;
        }
        const char *t = p;
        int64_t col = 0;
        int code = 0;
        while (col < o->ncols) {
            while (t < q && uci_is_space(*t))
                t++;
            if (t >= q) {
                code = 1;
                break;
            }
            const char *s = t;
            while (t < q && !uci_is_space(*t))
                t++;
            const int32_t m = o->colmap[col];
            if (m >= 0) {
                double x;
                if (!uci_small_int(s, t, &x)) {
                    const char *ne = ctf_parse_number(s, t, &fmt, &x);
                    if (ne != t) {
                        code = 2;
                        break;
                    }
                }
                const int k = m >> 16;
                const int64_t c = m & 0xFFFF;
                if (o->is32)
                    ((float *)o->vdata[k])[rec * o->vcols[k] + c] = (float)x;
                else
                    ((double *)o->vdata[k])[rec * o->vcols[k] + c] = x;
            } else if (m <= -2) {
                int64_t *sp = o->spans + (rec * o->nspan + (-2 - (int64_t)m)) * 2;
                sp[0] = s - base;
                sp[1] = t - base;
            }
            col++;
        }
        o->bad[rec] = (uint8_t)(code != 0);
        if (code) {
            if (*nerr == caperr) {
                int64_t cap = caperr ? caperr * 2 : 16;
                uci_err *ne = realloc(*errs, (size_t)cap * sizeof(uci_err));
                if (!ne)
                    return -1;
                *errs = ne;
                caperr = cap;
            }
            (*errs)[*nerr].record = rec;
            (*errs)[*nerr].line = line;
            (*errs)[*nerr].column = col;
            (*errs)[*nerr].code = code;
            (*nerr)++;
        }
        rec++;
        p = q < end ? q + 1 : end;
    }
    return rec;
}

#endif /* CNTKIO_UCI_CORE_H */
