/* The CTF parser core: index scan and chunk parse over a byte buffer. No Python, no numpy.
 *
 * The Python glue (ctf.c) and the sanitizer/fuzz harness (tests/fuzz/ctf_fuzz_main.c) both
 * include this header. Every function here runs without the GIL: inputs are a read-only buffer
 * and plain option structs, outputs are malloc'ed growable arrays that the glue hands to numpy.
 */
#ifndef CNTKIO_CTF_CORE_H
#define CNTKIO_CTF_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctf_number.h"

/* ------------------------------------------------------------------------------------------ */
/* Growable arrays                                                                             */

typedef struct {
    char *data;
    size_t len; /* bytes used */
    size_t cap; /* bytes allocated */
} ctf_vec;

static int ctf_vec_reserve(ctf_vec *v, size_t extra) {
    size_t need = v->len + extra, cap;
    char *d;
    if (need <= v->cap) return 0;
    cap = v->cap ? v->cap : 256;
    while (cap < need) cap += cap / 2 + 64;
    d = (char *)realloc(v->data, cap);
    if (d == NULL) return -1;
    v->data = d;
    v->cap = cap;
    return 0;
}

static void ctf_vec_free(ctf_vec *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

static inline int ctf_push_i64(ctf_vec *v, int64_t x) {
    if (v->len + sizeof x > v->cap && ctf_vec_reserve(v, sizeof x)) return -1;
    memcpy(v->data + v->len, &x, sizeof x);
    v->len += sizeof x;
    return 0;
}

static inline int ctf_push_u64(ctf_vec *v, uint64_t x) {
    if (v->len + sizeof x > v->cap && ctf_vec_reserve(v, sizeof x)) return -1;
    memcpy(v->data + v->len, &x, sizeof x);
    v->len += sizeof x;
    return 0;
}

#define CTF_VEC_COUNT(v, T) ((v).len / sizeof(T))


/* ------------------------------------------------------------------------------------------ */
/* Byte classes and scanning                                                                   */

#if defined(__SSE2__)
#include <emmintrin.h>
#define CTF_HAVE_SSE2 1
#endif

/* WS: space, tab, '\r'. Delimiters: WS, '\n', '|'. */
static const unsigned char ctf_delim_tab[256] = {
    ['\t'] = 1, ['\r'] = 1, [' '] = 1, ['\n'] = 2, ['|'] = 2};
#define CTF_IS_WS(c) (ctf_delim_tab[(unsigned char)(c)] == 1)
#define CTF_IS_DELIM(c) (ctf_delim_tab[(unsigned char)(c)] != 0)
#define CTF_IS_DIGIT(c) ((unsigned)((unsigned char)(c) - '0') < 10u)

/* First byte in [p, end) equal to a or b, or end. */
static inline const char *ctf_find2(const char *p, const char *end, char a, char b) {
#ifdef CTF_HAVE_SSE2
    const __m128i va = _mm_set1_epi8(a), vb = _mm_set1_epi8(b);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, va), _mm_cmpeq_epi8(x, vb)));
        if (m) return p + __builtin_ctz((unsigned)m);
        p += 16;
    }
#endif
    while (p < end && *p != a && *p != b) p++;
    return p;
}

/* First delimiter in [p, end), or end. */
static inline const char *ctf_token_end(const char *p, const char *end) {
    while (p < end && !CTF_IS_DELIM(*p)) p++;
    return p;
}

static inline const char *ctf_skip_ws(const char *p, const char *end) {
    while (p < end && CTF_IS_WS(*p)) p++;
    return p;
}

/* ------------------------------------------------------------------------------------------ */
/* Codes (the same numbers as _reference.py)                                                   */

enum {
    CTF_ENC_PLAIN = 0, CTF_ENC_UTF8_BOM = 1, CTF_ENC_UTF16LE = 2, CTF_ENC_UTF16BE = 3,
    CTF_ENC_UTF32BE = 4, CTF_ENC_NUL = 5
};

enum {
    CTF_BAD_PREFIX = 1, CTF_BAD_ID = 2, CTF_EMPTY_NAME = 3, CTF_DUPLICATE_INPUT = 4,
    CTF_BAD_NUMBER = 5, CTF_MISSING_COLON = 6, CTF_BAD_INDEX = 7, CTF_INDEX_RANGE = 8,
    CTF_TOO_MANY_VALUES = 9, CTF_SHORT_DENSE = 100
};

#define CTF_ERR_NOMEM (-1)

static int ctf_detect_encoding(const char *buf, size_t n, size_t *data_start) {
    const unsigned char *b = (const unsigned char *)buf;
    *data_start = 0;
    if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) { *data_start = 3; return CTF_ENC_UTF8_BOM; }
    if (n >= 2 && b[0] == 0xFF && b[1] == 0xFE) return CTF_ENC_UTF16LE;
    if (n >= 2 && b[0] == 0xFE && b[1] == 0xFF) return CTF_ENC_UTF16BE;
    if (n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF) return CTF_ENC_UTF32BE;
    if ((n >= 1 && b[0] == 0) || (n >= 2 && b[1] == 0)) return CTF_ENC_NUL;
    return CTF_ENC_PLAIN;
}

/* The declared inputs: names looked up by length, then bytes; the LAST stream with a name wins,
 * as a Python dict built in stream order would. */
typedef struct {
    const char *name;
    size_t len;
    int64_t dim;
    int sparse;
} ctf_alias;

static inline int ctf_lookup(const ctf_alias *al, int na, const char *s, size_t len) {
    for (int k = na - 1; k >= 0; k--)
        if (al[k].len == len && memcmp(al[k].name, s, len) == 0) return k;
    return -1;
}

/* The part of a line before its first '|' (see _reference._Prefix). */
typedef struct {
    int blank;
    const char *digits_start, *digits_end;
    const char *invalid_at; /* NULL when valid */
    const char *body;
} ctf_prefix;

static inline void ctf_read_prefix(const char *p, const char *le, ctf_prefix *pf) {
    const char *q;
    p = ctf_skip_ws(p, le);
    pf->blank = (p == le);
    pf->digits_start = p;
    q = p;
    while (q < le && CTF_IS_DIGIT(*q)) q++;
    pf->digits_end = q;
    pf->invalid_at = NULL;
    if (pf->blank) { pf->body = p; return; }
    if (q > p) {
        if (q < le && !(CTF_IS_WS(*q) || *q == '|')) pf->invalid_at = q;
    } else if (*p != '|') {
        pf->invalid_at = p;
    }
    pf->body = ctf_skip_ws(q, le);
}

/* Value of the digits [s, e) if it fits in uint64 (returns 1), else 0. */
static inline int ctf_digits_u64(const char *s, const char *e, uint64_t *out) {
    uint64_t v = 0;
    for (; s < e; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10u) return 0;
        v = v * 10u + d;
    }
    *out = v;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Index scan                                                                                  */

typedef struct {
    int encoding;
    int ids_mode;
    ctf_vec keys;         /* uint64[n] */
    ctf_vec starts;       /* int64[n+1] */
    ctf_vec first_lines;  /* int64[n] */
    ctf_vec lengths;      /* int64[n] */
    ctf_vec chunk_starts; /* int64[C+1] */
} ctf_index;

static void ctf_index_free(ctf_index *ix) {
    ctf_vec_free(&ix->keys);
    ctf_vec_free(&ix->starts);
    ctf_vec_free(&ix->first_lines);
    ctf_vec_free(&ix->lengths);
    ctf_vec_free(&ix->chunk_starts);
}

/* One pass over the whole file (see _reference.scan_index). Returns 0 or CTF_ERR_NOMEM. */
static int ctf_scan_index(const char *buf, size_t size, const ctf_alias *al, int na, int skip_ids,
                          int defining, int64_t chunk_size, ctf_index *ix) {
    size_t data_start;
    const char *end = buf + size, *ls;
    int64_t line_no = 0, nseq = 0;
    int ids_mode = -1, pending_key = 0;
    uint64_t cur_key = 0;
    int64_t *counts = NULL;   /* per stream: samples of the current sequence */
    int64_t *stamp = NULL;    /* per stream: the line that counted it last */
    int *line_hits = NULL;    /* streams named on the current line */
    int rc = CTF_ERR_NOMEM;

    memset(ix, 0, sizeof *ix);
    ix->encoding = ctf_detect_encoding(buf, size, &data_start);
    if (ix->encoding >= CTF_ENC_UTF16LE) {
        if (ctf_push_i64(&ix->starts, (int64_t)size) || ctf_push_i64(&ix->chunk_starts, 0)) goto done;
        ix->ids_mode = 0;
        return 0;
    }
    counts = (int64_t *)calloc((size_t)na + 1, sizeof *counts);
    stamp = (int64_t *)calloc((size_t)na + 1, sizeof *stamp);
    line_hits = (int *)calloc((size_t)na + 1, sizeof *line_hits);
    if (!counts || !stamp || !line_hits) goto done;

#define CTF_CLOSE_SEQ()                                                                   \
    do {                                                                                  \
        if (nseq > 0) {                                                                   \
            int64_t len_ = 0;                                                             \
            if (defining >= 0) len_ = counts[defining];                                   \
            else for (int k_ = 0; k_ < na; k_++) if (counts[k_] > len_) len_ = counts[k_]; \
            if (ctf_push_i64(&ix->lengths, len_)) goto done;                              \
        }                                                                                 \
    } while (0)

    for (ls = buf + data_start; ls < end;) {
        const char *le = (const char *)memchr(ls, '\n', (size_t)(end - ls));
        const char *next;
        ctf_prefix pf;
        int nhits = 0, has_content = 0, valid;
        if (le == NULL) { le = end; next = end; } else { next = le + 1; }
        line_no++;
        ctf_read_prefix(ls, le, &pf);
        if (pf.blank) { ls = next; continue; }
        valid = (pf.invalid_at == NULL);
        /* names on the line (counted only when the prefix is valid) */
        {
            const char *p = pf.body;
            for (;;) {
                const char *bar = (const char *)memchr(p, '|', (size_t)(le - p));
                const char *ne;
                int k;
                if (bar == NULL) break;
                if (bar + 1 < le && bar[1] == '#') { p = bar + 2; continue; }
                ne = ctf_token_end(bar + 1, le);
                has_content = 1;
                if (!valid) break;
                k = ctf_lookup(al, na, bar + 1, (size_t)(ne - bar - 1));
                if (k >= 0 && stamp[k] != line_no) { stamp[k] = line_no; line_hits[nhits++] = k; }
                p = ne;
            }
        }
        if (!valid) has_content = 1;
        if (!has_content) { ls = next; continue; }
        if (ids_mode < 0) ids_mode = (!skip_ids) && pf.digits_end > pf.digits_start;
        {
            int start_new, have_key = 0;
            uint64_t new_key = 0, key = 0;
            if (ids_mode && pf.digits_end > pf.digits_start && valid) {
                if (ctf_digits_u64(pf.digits_start, pf.digits_end, &new_key)) have_key = 1;
                else valid = 0; /* BAD_ID: continues the current sequence, counts nothing */
            }
            if (!ids_mode) {
                start_new = 1;
                key = (uint64_t)nseq;
            } else if (nseq == 0) {
                start_new = 1;
                key = have_key ? new_key : 0;
                pending_key = !have_key;
            } else if (!have_key) {
                start_new = 0;
            } else if (pending_key) {
                memcpy(ix->keys.data + ix->keys.len - sizeof(uint64_t), &new_key, sizeof new_key);
                cur_key = new_key;
                pending_key = 0;
                start_new = 0;
            } else {
                start_new = (new_key != cur_key);
                key = new_key;
            }
            if (start_new) {
                CTF_CLOSE_SEQ();
                if (ctf_push_u64(&ix->keys, key) || ctf_push_i64(&ix->starts, (int64_t)(ls - buf)) ||
                    ctf_push_i64(&ix->first_lines, line_no))
                    goto done;
                cur_key = key;
                nseq++;
                memset(counts, 0, sizeof *counts * (size_t)na);
            }
            if (valid)
                for (int h = 0; h < nhits; h++) counts[line_hits[h]]++;
        }
        ls = next;
    }
    CTF_CLOSE_SEQ();
#undef CTF_CLOSE_SEQ
    if (ctf_push_i64(&ix->starts, (int64_t)size)) goto done;
    ix->ids_mode = ids_mode > 0;
    /* chunks */
    {
        const int64_t *st = (const int64_t *)(const void *)ix->starts.data;
        int64_t limit = chunk_size < (int64_t)size ? chunk_size : (int64_t)size;
        int64_t chunk_bytes = 0, last = 0;
        if (ctf_push_i64(&ix->chunk_starts, 0)) goto done;
        for (int64_t i = 0; i < nseq; i++) {
            int64_t sb = st[i + 1] - st[i];
            if (i > last && chunk_bytes + sb > limit) {
                if (ctf_push_i64(&ix->chunk_starts, i)) goto done;
                last = i;
                chunk_bytes = 0;
            }
            chunk_bytes += sb;
        }
        if (nseq > 0 && ctf_push_i64(&ix->chunk_starts, nseq)) goto done;
    }
    rc = 0;
done:
    free(counts);
    free(stamp);
    free(line_hits);
    if (rc) ctf_index_free(ix);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Chunk parse                                                                                 */

typedef struct {
    int32_t code, stream;
    int64_t line, column, offset, length, detail;
} ctf_issue;

typedef struct {
    ctf_vec values;  /* dense: float|double[samples*dim]; sparse: float|double[nnz] */
    ctf_vec indices; /* sparse: int32[nnz] */
    ctf_vec indptr;  /* sparse: int64[samples+1] */
    ctf_vec offsets; /* int64[n+1] */
    int64_t nsamples;
    int64_t stamp;   /* last line (ordinal) this stream appeared on */
} ctf_stream_out;

typedef struct {
    ctf_stream_out *out; /* one per stream */
    int nstreams;
    ctf_vec issues;      /* ctf_issue[] */
    int64_t nerrors, nwarnings, nwarnings_kept;
    int aborted;
} ctf_result;

static void ctf_result_free(ctf_result *r) {
    if (r->out) {
        for (int k = 0; k < r->nstreams; k++) {
            ctf_vec_free(&r->out[k].values);
            ctf_vec_free(&r->out[k].indices);
            ctf_vec_free(&r->out[k].indptr);
            ctf_vec_free(&r->out[k].offsets);
        }
        free(r->out);
        r->out = NULL;
    }
    ctf_vec_free(&r->issues);
}

typedef struct {
    const char *buf;       /* the byte at absolute offset o is buf[o - base] */
    int64_t base;
    const char *end;       /* end of the parsed range (absolute starts[n] - base) */
    const ctf_alias *al;
    int na;
    int dbl;
    int ids_mode;
    int64_t error_limit, warning_limit;
    ctf_result *r;
    int64_t line_no;       /* current line */
    const char *ls;        /* current line start */
    int64_t line_ord;      /* line ordinal within this parse (for duplicate stamps) */
} ctf_parser;

/* Records an issue. Returns 1 when parsing must stop (error limit reached), -1 on no memory. */
static int ctf_report(ctf_parser *ps, int code, int stream, const char *at, int64_t length,
                      int64_t detail) {
    ctf_result *r = ps->r;
    ctf_issue is;
    if (code < 100) {
        r->nerrors++;
    } else {
        r->nwarnings++;
        if (r->nwarnings_kept >= ps->warning_limit) return 0;
        r->nwarnings_kept++;
    }
    is.code = code;
    is.stream = stream;
    is.line = ps->line_no;
    is.column = (int64_t)(at - ps->ls) + 1;
    is.offset = (int64_t)(at - ps->buf) + ps->base;
    is.length = length;
    is.detail = detail;
    if (ctf_vec_reserve(&r->issues, sizeof is)) return -1;
    memcpy(r->issues.data + r->issues.len, &is, sizeof is);
    r->issues.len += sizeof is;
    if (code < 100 && ps->error_limit >= 0 && r->nerrors >= ps->error_limit) return 1;
    return 0;
}

static const ctf_numfmt ctf_fmt = {1, 1};

/* Store a parsed value. */
#define CTF_STORE(dst, i, v, dbl)                                  \
    do {                                                           \
        if (dbl) ((double *)(void *)(dst))[i] = (v);               \
        else ((float *)(void *)(dst))[i] = (float)(v);             \
    } while (0)

/* Dense sample values from p (just after the name) up to the next '|' / '\n' / end.
 * Returns the position after the sample (at '|', '\n' or end), or NULL with *stop set. */
static const char *ctf_parse_dense(ctf_parser *ps, int k, const char *bar, const char *p,
                                   int *stop) {
    ctf_stream_out *so = &ps->r->out[k];
    const int64_t dim = ps->al[k].dim;
    const size_t esz = ps->dbl ? sizeof(double) : sizeof(float);
    const char *end = ps->end;
    int64_t nv = 0;
    char *dst;
    if (ctf_vec_reserve(&so->values, (size_t)dim * esz)) { *stop = -1; return NULL; }
    dst = so->values.data + so->values.len;
    for (;;) {
        const char *s, *e;
        double v;
        while (p < end && CTF_IS_WS(*p)) p++;
        if (p >= end || *p == '|' || *p == '\n') break;
        s = p;
        if (nv == dim) { /* TOO_MANY_VALUES at this token; detail = all tokens of the sample */
            int64_t total = nv;
            const char *q = p;
            int rc;
            for (;;) {
                while (q < end && CTF_IS_WS(*q)) q++;
                if (q >= end || *q == '|' || *q == '\n') break;
                q = ctf_token_end(q, end);
                total++;
            }
            rc = ctf_report(ps, CTF_TOO_MANY_VALUES, k, s, (int64_t)(ctf_token_end(s, end) - s), total);
            if (rc) { *stop = rc; return NULL; }
            return q;
        }
        e = ctf_parse_number(p, end, &ctf_fmt, &v);
        if (e == NULL || (e < end && !CTF_IS_DELIM(*e))) {
            const char *te = ctf_token_end(s, end);
            int rc = ctf_report(ps, CTF_BAD_NUMBER, k, s, (int64_t)(te - s), 0);
            if (rc) { *stop = rc; return NULL; }
            return ctf_find2(te, end, '|', '\n');
        }
        CTF_STORE(dst, nv, v, ps->dbl);
        nv++;
        p = e;
    }
    if (nv < dim) {
        int rc;
        memset(dst + (size_t)nv * esz, 0, (size_t)(dim - nv) * esz);
        rc = ctf_report(ps, CTF_SHORT_DENSE, k, bar, (int64_t)(ps->al[k].len + 1), nv);
        if (rc) { *stop = rc; return NULL; }
    }
    so->values.len += (size_t)dim * esz;
    so->nsamples++;
    return p;
}

/* Sparse sample: INDEX:VALUE tokens. Same contract as ctf_parse_dense. */
static const char *ctf_parse_sparse(ctf_parser *ps, int k, const char *p, int *stop) {
    ctf_stream_out *so = &ps->r->out[k];
    const int64_t dim = ps->al[k].dim;
    const size_t esz = ps->dbl ? sizeof(double) : sizeof(float);
    const char *end = ps->end;
    const size_t vlen0 = so->values.len, ilen0 = so->indices.len;
    int64_t nnz;
    for (;;) {
        const char *s, *q, *e;
        uint64_t idx = 0;
        int big = 0, code = 0, rc;
        double v;
        int64_t at_len = 0;
        const char *at = NULL;
        while (p < end && CTF_IS_WS(*p)) p++;
        if (p >= end || *p == '|' || *p == '\n') break;
        s = p;
        q = p;
        while (q < end && CTF_IS_DIGIT(*q)) {
            uint64_t d = (uint64_t)(*q - '0');
            if (idx > (UINT64_MAX - d) / 10u) big = 1; else idx = idx * 10u + d;
            q++;
        }
        if (q < end && *q == ':' && q > s) {
            if (big || idx >= (uint64_t)dim) { code = CTF_INDEX_RANGE; at = s; at_len = q - s; }
            else {
                e = ctf_parse_number(q + 1, end, &ctf_fmt, &v);
                if (e == NULL || (e < end && !CTF_IS_DELIM(*e))) {
                    code = CTF_BAD_NUMBER; at = q + 1; at_len = ctf_token_end(q + 1, end) - (q + 1);
                } else {
                    if (ctf_vec_reserve(&so->values, esz) || ctf_vec_reserve(&so->indices, sizeof(int32_t))) {
                        *stop = -1; return NULL;
                    }
                    CTF_STORE(so->values.data + so->values.len, 0, v, ps->dbl);
                    so->values.len += esz;
                    {
                        int32_t i32 = (int32_t)idx;
                        memcpy(so->indices.data + so->indices.len, &i32, sizeof i32);
                        so->indices.len += sizeof i32;
                    }
                    p = e;
                    continue;
                }
            }
        } else {
            const char *te = ctf_token_end(s, end);
            const char *colon = (const char *)memchr(s, ':', (size_t)(te - s));
            if (colon == NULL) { code = CTF_MISSING_COLON; at = s; at_len = te - s; }
            else { code = CTF_BAD_INDEX; at = s; at_len = colon - s; }
        }
        /* an error: drop the sample */
        so->values.len = vlen0;
        so->indices.len = ilen0;
        rc = ctf_report(ps, code, k, at, at_len, 0);
        if (rc) { *stop = rc; return NULL; }
        return ctf_find2(at, end, '|', '\n');
    }
    nnz = (int64_t)(so->indices.len / sizeof(int32_t));
    if (ctf_push_i64(&so->indptr, nnz)) { *stop = -1; return NULL; }
    so->nsamples++;
    return p;
}

/* Does the rest of a line [p, le) name a sample (not only comments)? */
static int ctf_line_has_names(const char *p, const char *le) {
    for (;;) {
        const char *bar = (const char *)memchr(p, '|', (size_t)(le - p));
        if (bar == NULL) return 0;
        if (bar + 1 < le && bar[1] == '#') { p = bar + 2; continue; }
        return 1;
    }
}

/* Parses one line starting at ps->ls. Returns the start of the next line (or end); sets *stop on
 * abort (1) or no memory (-1). */
static const char *ctf_parse_line(ctf_parser *ps, int64_t seq, const char **out_next, int *stop) {
    const char *end = ps->end;
    const char *ls = ps->ls, *p;
    ctf_prefix pf;
    (void)seq;
    /* prefix: it only needs the line end when it is not followed by a '|' right away */
    p = ls;
    while (p < end && CTF_IS_WS(*p)) p++;
    if (p < end && *p == '|') {
        pf.blank = 0; pf.digits_start = pf.digits_end = p; pf.invalid_at = NULL; pf.body = p;
    } else {
        const char *le = (const char *)memchr(p, '\n', (size_t)(end - p));
        if (le == NULL) le = end;
        ctf_read_prefix(ls, le, &pf);
        if (pf.blank) { *out_next = le; return le; }
        if (pf.invalid_at) {
            int rc = ctf_report(ps, CTF_BAD_PREFIX, -1, pf.invalid_at,
                                (int64_t)(ctf_token_end(pf.invalid_at, le) - pf.invalid_at), 0);
            if (rc) *stop = rc;
            *out_next = le;
            return le;
        }
        if (!ctf_line_has_names(pf.body, le)) { *out_next = le; return le; }
        if (ps->ids_mode && pf.digits_end > pf.digits_start) {
            uint64_t dummy;
            if (!ctf_digits_u64(pf.digits_start, pf.digits_end, &dummy)) {
                int rc = ctf_report(ps, CTF_BAD_ID, -1, pf.digits_start,
                                    (int64_t)(pf.digits_end - pf.digits_start), 0);
                if (rc) *stop = rc;
                *out_next = le;
                return le;
            }
        }
    }
    ps->line_ord++;
    p = pf.body;
    for (;;) {
        const char *bar = ctf_find2(p, end, '|', '\n'), *ne;
        int k;
        if (bar >= end || *bar == '\n') { *out_next = bar; return bar; }
        if (bar + 1 < end && bar[1] == '#') { p = bar + 2; continue; }
        ne = ctf_token_end(bar + 1, end);
        if (ne == bar + 1) {
            int rc = ctf_report(ps, CTF_EMPTY_NAME, -1, bar, 1, 0);
            if (rc) { *stop = rc; *out_next = ne; return ne; }
            p = ne;
            continue;
        }
        k = ctf_lookup(ps->al, ps->na, bar + 1, (size_t)(ne - bar - 1));
        if (k < 0) { p = ctf_find2(ne, end, '|', '\n'); continue; }
        if (ps->r->out[k].stamp == ps->line_ord) {
            int rc = ctf_report(ps, CTF_DUPLICATE_INPUT, k, bar, (int64_t)(ne - bar), 0);
            if (rc) { *stop = rc; *out_next = ne; return ne; }
            p = ctf_find2(ne, end, '|', '\n');
            continue;
        }
        ps->r->out[k].stamp = ps->line_ord;
        p = ps->al[k].sparse ? ctf_parse_sparse(ps, k, ne, stop) : ctf_parse_dense(ps, k, bar, ne, stop);
        if (p == NULL) { *out_next = end; return end; }
    }
}

/* Parses sequences starts[i]:starts[i+1] (see _reference.parse_chunk). The result's outputs are
 * complete unless r->aborted. Returns 0, or CTF_ERR_NOMEM. */
static int ctf_parse_chunk(const char *buf, int64_t base, const int64_t *starts,
                           const int64_t *first_lines, int64_t n, int ids_mode,
                           const ctf_alias *al, int na, int dbl, int64_t error_limit,
                           int64_t warning_limit, ctf_result *r) {
    ctf_parser ps;
    int stop = 0;
    memset(r, 0, sizeof *r);
    r->nstreams = na;
    r->out = (ctf_stream_out *)calloc((size_t)na + 1, sizeof *r->out);
    if (r->out == NULL) return CTF_ERR_NOMEM;
    for (int k = 0; k < na; k++) {
        if (ctf_vec_reserve(&r->out[k].offsets, sizeof(int64_t) * (size_t)(n + 1)) ||
            ctf_push_i64(&r->out[k].offsets, 0)) goto nomem;
        if (al[k].sparse && ctf_push_i64(&r->out[k].indptr, 0)) goto nomem;
        r->out[k].stamp = -1;
    }
    ps.buf = buf;
    ps.base = base;
    ps.end = buf + (n > 0 ? starts[n] - base : 0);
    ps.al = al;
    ps.na = na;
    ps.dbl = dbl;
    ps.ids_mode = ids_mode;
    ps.error_limit = error_limit;
    ps.warning_limit = warning_limit;
    ps.r = r;
    ps.line_ord = 0;
    for (int64_t i = 0; i < n && !stop; i++) {
        const char *send = buf + (starts[i + 1] - base);
        const char *p = buf + (starts[i] - base);
        const char *saved_end = ps.end;
        ps.end = send;
        ps.line_no = first_lines[i];
        while (p < send) {
            const char *next;
            ps.ls = p;
            ctf_parse_line(&ps, i, &next, &stop);
            if (stop) break;
            p = next < send ? next + 1 : send; /* next is at '\n' or the sequence end */
            ps.line_no++;
        }
        ps.end = saved_end;
        for (int k = 0; k < na && !stop; k++)
            if (ctf_push_i64(&r->out[k].offsets, r->out[k].nsamples)) goto nomem;
    }
    if (stop < 0) goto nomem;
    if (stop > 0) {
        r->aborted = 1;
        for (int k = 0; k < na; k++) {
            ctf_stream_out *so = &r->out[k];
            so->values.len = so->indices.len = 0;
            so->indptr.len = al[k].sparse ? sizeof(int64_t) : 0;
            so->nsamples = 0;
            so->offsets.len = 0;
            for (int64_t i = 0; i <= n; i++) ctf_push_i64(&so->offsets, 0); /* capacity reserved */
        }
    }
    return 0;
nomem:
    ctf_result_free(r);
    return CTF_ERR_NOMEM;
}

#endif /* CNTKIO_CTF_CORE_H */
