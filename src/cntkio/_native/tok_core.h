/* Whitespace-separated token text to token numbers in plain C (no Python): the core of
 * cntkio._native._tok (tok.c holds the Python glue and documents the splitting rules), also built
 * alone under AddressSanitizer and UndefinedBehaviorSanitizer by the fuzz harness
 * (tests/fuzz/fuzz_tok.c). Memory grows with the distinct tokens and lines found, never with a
 * number read from the text.
 */
#ifndef CNTKIO_TOK_CORE_H
#define CNTKIO_TOK_CORE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* first capacities (entries, arena bytes, hash slots; the fuzz harness makes them tiny, so that
   every growth path runs on small inputs) */
#ifndef TOK_VEC_MIN
#define TOK_VEC_MIN (1 << 16)
#endif
#ifndef TOK_ARENA_MIN
#define TOK_ARENA_MIN (1 << 16)
#endif
#ifndef TOK_SLOTS_MIN
#define TOK_SLOTS_MIN (1 << 12)
#endif

/* ASCII classes: 0 token byte, 1 space (str.isspace, not a line end), 2 '\n', 3 '\r' */
static unsigned char ascii_class[128];

static void init_classes(void) {
    const unsigned char spaces[] = {'\t', 0x0b, 0x0c, 0x1c, 0x1d, 0x1e, 0x1f, ' '};
    for (size_t i = 0; i < sizeof spaces; i++) ascii_class[spaces[i]] = 1;
    ascii_class['\n'] = 2;
    ascii_class['\r'] = 3;
}

/* the length of the non-ASCII whitespace character at p (UTF-8), or 0 */
static inline int64_t uni_space(const unsigned char *p, const unsigned char *end) {
    int64_t n = end - p;
    if (p[0] == 0xC2) return n >= 2 && (p[1] == 0x85 || p[1] == 0xA0) ? 2 : 0;
    if (n < 3) return 0;
    if (p[0] == 0xE1) return p[1] == 0x9A && p[2] == 0x80 ? 3 : 0;
    if (p[0] == 0xE2) {
        if (p[1] == 0x80) return (p[2] <= 0x8A && p[2] >= 0x80) || p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF ? 3 : 0;
        return p[1] == 0x81 && p[2] == 0x9F ? 3 : 0;
    }
    if (p[0] == 0xE3) return p[1] == 0x80 && p[2] == 0x80 ? 3 : 0;
    return 0;
}

typedef struct {
    int32_t *slots;          /* number + 1, 0 = empty; capacity a power of two */
    int64_t cap;
    char *arena;             /* the distinct tokens' bytes */
    int64_t arena_len, arena_cap;
    int64_t *w_off;          /* per number: offset in the arena, length, hash */
    int32_t *w_len;
    uint64_t *w_hash;
    int64_t n, n_cap;
} tok_table;

typedef struct { void *v; int64_t n, cap, size; } tok_vec;

static int vec_grow(tok_vec *a) {
    int64_t cap = a->cap ? a->cap * 2 : TOK_VEC_MIN;
    void *nv = realloc(a->v, (size_t)cap * (size_t)a->size);
    if (!nv) return -1;
    a->v = nv;
    a->cap = cap;
    return 0;
}

static inline int push_i32(tok_vec *a, int32_t x) {
    if (a->n == a->cap && vec_grow(a) < 0) return -1;
    ((int32_t *)a->v)[a->n++] = x;
    return 0;
}

static inline int push_i64(tok_vec *a, int64_t x) {
    if (a->n == a->cap && vec_grow(a) < 0) return -1;
    ((int64_t *)a->v)[a->n++] = x;
    return 0;
}

static int table_rehash(tok_table *t, int64_t cap) {
    int32_t *slots = calloc((size_t)cap, sizeof(int32_t));
    if (!slots) return -1;
    for (int64_t k = 0; k < t->n; k++) {
        int64_t i = (int64_t)(t->w_hash[k] & (uint64_t)(cap - 1));
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (int32_t)(k + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* the number of the token p[0:len] (hash h), added when new; -1 on memory errors */
static int64_t table_lookup(tok_table *t, const char *p, int32_t len, uint64_t h) {
    int64_t mask = t->cap - 1, i = (int64_t)(h & (uint64_t)mask);
    for (;;) {
        int32_t s = t->slots[i];
        if (!s) break;
        int32_t k = s - 1;
        if (t->w_hash[k] == h && t->w_len[k] == len && memcmp(t->arena + t->w_off[k], p, (size_t)len) == 0)
            return k;
        i = (i + 1) & mask;
    }
    if (t->n >= INT32_MAX - 1) return -1;
    if (t->n == t->n_cap) {
        int64_t cap = t->n_cap ? t->n_cap * 2 : 1024;
        int64_t *o = realloc(t->w_off, (size_t)cap * sizeof(int64_t));
        if (!o) return -1;
        t->w_off = o;
        int32_t *l = realloc(t->w_len, (size_t)cap * sizeof(int32_t));
        if (!l) return -1;
        t->w_len = l;
        uint64_t *hh = realloc(t->w_hash, (size_t)cap * sizeof(uint64_t));
        if (!hh) return -1;
        t->w_hash = hh;
        t->n_cap = cap;
    }
    if (t->arena_len + len > t->arena_cap) {
        int64_t cap = t->arena_cap ? t->arena_cap : TOK_ARENA_MIN;
        while (cap < t->arena_len + len) cap *= 2;
        char *a = realloc(t->arena, (size_t)cap);
        if (!a) return -1;
        t->arena = a;
        t->arena_cap = cap;
    }
    memcpy(t->arena + t->arena_len, p, (size_t)len);
    int64_t k = t->n++;
    t->w_off[k] = t->arena_len;
    t->w_len[k] = len;
    t->w_hash[k] = h;
    t->arena_len += len;
    t->slots[i] = (int32_t)(k + 1);
    if (2 * t->n > t->cap && table_rehash(t, t->cap * 2) < 0) return -1;
    return k;
}

/* Split buf[0:len) into lines and tokens (see tok.c), numbering each token in t (new tokens are
 * added): nums receives the token numbers (int32), counts the tokens per line (int64), first_line
 * the 1-based line of each new token (int64). -1 when memory ran out or a token reached 2^31
 * bytes: the caller then restores the table with tok_undo. */
static int tok_scan(tok_table *t, const unsigned char *p, int64_t len, tok_vec *nums, tok_vec *counts,
                    tok_vec *first_line)
{
    const unsigned char *end = p + len, *line_start = p;
    int64_t line_tokens = 0;
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            unsigned char k = ascii_class[c];
            if (k == 1) { p++; continue; }
            if (k >= 2) {
                if (push_i64(counts, line_tokens) < 0) return -1;
                line_tokens = 0;
                p++;
                if (k == 3 && p < end && *p == '\n') p++;
                line_start = p;
                continue;
            }
        } else {
            int64_t w = uni_space(p, end);
            if (w) { p += w; continue; }
        }
        const unsigned char *q = p;
        uint64_t h = 1469598103934665603ULL;
        while (q < end) {
            unsigned char d = *q;
            if (d < 0x80 ? ascii_class[d] != 0 : uni_space(q, end) != 0) break;
            h = (h ^ d) * 1099511628211ULL;
            q++;
        }
        if (q - p > INT32_MAX) return -1;
        int64_t before = t->n;
        int64_t k = table_lookup(t, (const char *)p, (int32_t)(q - p), h);
        if (k < 0 || push_i32(nums, (int32_t)k) < 0) return -1;
        if (t->n != before && push_i64(first_line, counts->n + 1) < 0) return -1;
        line_tokens++;
        p = q;
    }
    if (line_start < end && push_i64(counts, line_tokens) < 0) return -1;
    return 0;
}

/* The table as it was with n0 tokens and arena0 bytes of them (after a failed or refused scan).
 * -1 when memory ran out for the rebuilt index. */
static int tok_undo(tok_table *t, int64_t n0, int64_t arena0)
{
    if (t->n == n0)
        return 0;
    t->n = n0;
    t->arena_len = arena0;
    return table_rehash(t, t->cap);
}

static int tok_init(tok_table *t)
{
    memset(t, 0, sizeof *t);
    t->cap = TOK_SLOTS_MIN;
    t->slots = calloc((size_t)t->cap, sizeof(int32_t));
    return t->slots ? 0 : -1;
}

static void tok_free(tok_table *t)
{
    free(t->slots);
    free(t->arena);
    free(t->w_off);
    free(t->w_len);
    free(t->w_hash);
    memset(t, 0, sizeof *t);
}

#endif /* CNTKIO_TOK_CORE_H */
