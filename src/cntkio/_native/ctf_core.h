/* The CTF parser core: index scan and chunk parse over a byte buffer. No Python, no numpy.
 *
 * The format rules, the issue codes and the exact results are those of the pure-Python reference
 * parser, src/cntkio/deserializers/ctf/_reference.py (its docstring is the specification); the
 * differential tests (tests/deserializers/ctf/test_ctf_native.py) hold the two to bitwise agreement.
 *
 *   ctf_scan_index(buf, size, aliases, ...)  -> ctf_index: keys, starts, first_lines, lengths,
 *                                               chunk_starts (one pass over the whole file)
 *   ctf_parse_chunk(buf, buflen, base, starts, ends, first_lines, n, ...)
 *                                            -> ctf_result: per stream values (dense) or
 *                                               indptr/indices/data (sparse) and sequence
 *                                               offsets; issues; warning count; aborted flag
 *
 * The Python glue (ctf.c) and the sanitizer/fuzz harness (tests/fuzz/ctf_fuzz_main.c) both
 * include this header. Everything here runs without the GIL: inputs are a read-only buffer and
 * plain option structs, outputs are malloc'ed (or, from 4 MB on, mmap'ed huge-page) growable
 * arrays that the glue hands to numpy without copying. Nothing is shared between calls, so two
 * threads may parse two chunks at once. Reads never go past `buf + size` (scan) or
 * `buf + buflen` (parse): the harness runs every input from a heap block of exactly its size
 * under AddressSanitizer.
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

#if defined(__linux__)
#include <sys/mman.h>
#define CTF_HAVE_MMAP 1
/* Blocks from this size on are mmap'ed with transparent huge pages requested: the outputs of a
 * 32 MB chunk are tens of MB, and faulting them in 4 KiB pages costs as much as parsing. */
#define CTF_MMAP_MIN ((size_t)4 << 20)
#endif
/* Not for parses of less than this much text (the batches of a randomized reader, made and freed
 * by the hundred): there, the kernel compacting memory for fresh huge pages cost more than the
 * 4 KiB faults (after a few GB of allocation churn, the 1 GB randomized sweep of
 * bench/source_throughput.py went from 271-279 to 483-527 MB/s without them). */
#define CTF_HUGE_INPUT_MIN ((int64_t)16 << 20)

typedef struct {
    char *data;
    size_t len;  /* bytes used */
    size_t cap;  /* bytes allocated */
    int mapped;  /* data is an mmap'ed block of cap bytes (free with ctf_block_free) */
    int heap;    /* never mmap'ed: stays on the C heap whatever its size */
} ctf_vec;

#ifdef CTF_HAVE_MMAP
#include <pthread.h>
/* Freed mapped blocks are kept for the next parse (up to CTF_POOL_BYTES in CTF_POOL_SLOTS blocks)
 * instead of being unmapped. A sweep over a file of several chunks parses chunk after chunk, each
 * into tens of MB of fresh output; unmapped and mapped again, every page of it was faulted in and
 * zeroed by the kernel once per chunk (with huge pages refused on a busy machine, 4 KiB at a
 * time: a quarter of the parse's CPU time on the sequence bench file, and the reason a sweep
 * got slower per MB as files grew past one chunk; below CTF_MMAP_MIN, blocks stay on the C heap,
 * which reuses them). A block taken from the cache is already faulted in. */
#define CTF_POOL_SLOTS 16
#define CTF_POOL_BYTES ((size_t)96 << 20)
#define CTF_POOL_MIN ((size_t)256 << 10)
static struct { char *data; size_t cap; } ctf_pool[CTF_POOL_SLOTS];
static int ctf_pool_n;
static size_t ctf_pool_bytes;
static pthread_mutex_t ctf_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t ctf_pool_once = PTHREAD_ONCE_INIT;

/* a fork (DataLoader workers) while another thread holds the lock must not leave it held */
static void ctf_pool_prefork(void) { pthread_mutex_lock(&ctf_pool_lock); }
static void ctf_pool_postfork(void) { pthread_mutex_unlock(&ctf_pool_lock); }
static void ctf_pool_init(void) { pthread_atfork(ctf_pool_prefork, ctf_pool_postfork, ctf_pool_postfork); }

/* Keep a freed block (0), or say there is no room (-1). */
static int ctf_pool_put(char *data, size_t cap) {
    int kept = -1;
    pthread_once(&ctf_pool_once, ctf_pool_init);
    pthread_mutex_lock(&ctf_pool_lock);
    if (ctf_pool_n < CTF_POOL_SLOTS && ctf_pool_bytes + cap <= CTF_POOL_BYTES) {
        ctf_pool[ctf_pool_n].data = data;
        ctf_pool[ctf_pool_n].cap = cap;
        ctf_pool_n++;
        ctf_pool_bytes += cap;
        kept = 0;
    }
    pthread_mutex_unlock(&ctf_pool_lock);
    return kept;
}

/* The largest kept block of at least need bytes (its size in *cap), or NULL. */
static char *ctf_pool_take(size_t need, size_t *cap) {
    char *d = NULL;
    int best = -1;
    pthread_once(&ctf_pool_once, ctf_pool_init);
    pthread_mutex_lock(&ctf_pool_lock);
    for (int i = 0; i < ctf_pool_n; i++)
        if (ctf_pool[i].cap >= need && (best < 0 || ctf_pool[i].cap > ctf_pool[best].cap)) best = i;
    if (best >= 0) {
        d = ctf_pool[best].data;
        *cap = ctf_pool[best].cap;
        ctf_pool_bytes -= *cap;
        ctf_pool[best] = ctf_pool[--ctf_pool_n];
    }
    pthread_mutex_unlock(&ctf_pool_lock);
    return d;
}
#endif

/* Ask the kernel to map a large input's pages into the page table at once (Linux 5.14+
 * MADV_POPULATE_READ; a no-op elsewhere, and on memory that is not a mapping of a file the same
 * as touching it): a fresh mapping of a file in the page cache otherwise takes one page fault per
 * 16 pages as the scan first reads them (seq.ctf over a fresh mmap: best 97 -> 90 ms). Not for
 * the chunk parse: its mapping is often the scan's, already mapped, where the advice costs a
 * walk of the page table (0.7 ms per 20 MB) for nothing. Advice only; errors are ignored. */
#define CTF_POPULATE_MIN ((size_t)1 << 20)
static void ctf_populate(const char *buf, size_t len) {
#if defined(__linux__)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
    if (len >= CTF_POPULATE_MIN) {
        const uintptr_t a = (uintptr_t)buf & ~(uintptr_t)4095, b = (uintptr_t)buf + len;
        (void)madvise((void *)a, (size_t)(b - a), MADV_POPULATE_READ);
    }
#else
    (void)buf;
    (void)len;
#endif
}

static void ctf_block_free(void *data, size_t cap, int mapped) {
#ifdef CTF_HAVE_MMAP
    if (mapped) {
        if (ctf_pool_put((char *)data, cap)) munmap(data, cap);
        return;
    }
#endif
    (void)cap;
    (void)mapped;
    free(data);
}

static int ctf_vec_reserve(ctf_vec *v, size_t extra) {
    size_t need = v->len + extra, cap;
    char *d;
    if (need <= v->cap) return 0;
    cap = v->cap ? v->cap : 256;
    while (cap < need) cap += cap / 2 + 64;
#ifdef CTF_HAVE_MMAP
    size_t kept_cap = 0;
    /* from CTF_POOL_MIN on, a kept block (already faulted in) replaces the growth on the heap,
     * whose reallocations would fault in fresh pages up to CTF_MMAP_MIN */
    if (cap >= CTF_POOL_MIN && !v->heap && !v->mapped &&
        (d = ctf_pool_take(cap < CTF_MMAP_MIN ? CTF_MMAP_MIN : cap, &kept_cap)) != NULL) {
        if (v->len) memcpy(d, v->data, v->len);
        free(v->data);
        v->mapped = 1;
        v->data = d;
        v->cap = kept_cap;
        return 0;
    }
    if (cap >= CTF_MMAP_MIN && !v->heap) {
        cap = (cap + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
        if ((d = ctf_pool_take(cap, &kept_cap)) != NULL) {  /* already faulted in */
            if (v->len) memcpy(d, v->data, v->len);
            ctf_block_free(v->data, v->cap, v->mapped);
            v->mapped = 1;
            v->data = d;
            v->cap = kept_cap;
            return 0;
        }
        if (v->mapped) {
            d = (char *)mremap(v->data, v->cap, cap, MREMAP_MAYMOVE);
            if (d == (char *)MAP_FAILED) return -1;
        } else {
            d = (char *)mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (d == (char *)MAP_FAILED) return -1;
            if (v->len) memcpy(d, v->data, v->len);
            free(v->data);
            v->mapped = 1;
        }
#ifdef MADV_HUGEPAGE
        madvise(d, cap, MADV_HUGEPAGE);
#endif
        v->data = d;
        v->cap = cap;
        return 0;
    }
#endif
    d = (char *)realloc(v->data, cap);
    if (d == NULL) return -1;
    v->data = d;
    v->cap = cap;
    return 0;
}

static void ctf_vec_free(ctf_vec *v) {
    if (v->data) ctf_block_free(v->data, v->cap, v->mapped);
    v->data = NULL;
    v->len = v->cap = 0;
    v->mapped = 0;
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
#if defined(__GNUC__)
#define CTF_LIKELY(x) __builtin_expect(!!(x), 1)
#define CTF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CTF_LIKELY(x) (x)
#define CTF_UNLIKELY(x) (x)
#endif
#if defined(__GNUC__)
#define CTF_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define CTF_ALWAYS_INLINE static inline
#endif
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
    uint64_t pfx, mask; /* first min(len, 8) name bytes as a little-endian word (ctf_alias_prepare) */
    uint64_t pfx_sp, mask_sp; /* the name and one space after it (names of up to 7 bytes; else never
                               * matches): the index scan's one-compare test for "|name " */
} ctf_alias;

/* The declared names, prepared for matching: a copy of the caller's table with pfx/mask filled
 * in, and the stream that a name's first byte selects (-1: none starts so, -2: several do). */
typedef struct {
    int16_t first[256];
    /* the index scan's table: first[] with '#' marked CTF_SCAN_COMMENT, or every entry
     * CTF_SCAN_SLOW when there is an empty name */
    int16_t scan_first[256];
    int has_empty;  /* an empty name (never declared in practice) disables the first-byte table */
    ctf_alias al[];
} ctf_names;
#define CTF_SCAN_COMMENT (-3)
#define CTF_SCAN_SLOW (-4)

/* free() the result. NULL when out of memory. */
static ctf_names *ctf_names_prepare(const ctf_alias *al, int na) {
    ctf_names *t = (ctf_names *)malloc(sizeof *t + sizeof(ctf_alias) * ((size_t)na + 1));
    if (t == NULL) return NULL;
    t->has_empty = 0;
    for (int b = 0; b < 256; b++) t->first[b] = -1;
    for (int k = 0; k < na; k++) {
        size_t n = al[k].len < 8 ? al[k].len : 8;
        unsigned char b[8] = {0};
        t->al[k] = al[k];
        memcpy(b, al[k].name, n);
        t->al[k].pfx = 0;
        for (size_t i = 0; i < 8; i++) t->al[k].pfx |= (uint64_t)b[i] << (8 * i);
        t->al[k].mask = n == 8 ? ~0ULL : ((1ULL << (8 * n)) - 1);
        if (al[k].len <= 7) {
            t->al[k].pfx_sp = t->al[k].pfx | ((uint64_t)' ' << (8 * al[k].len));
            t->al[k].mask_sp = al[k].len == 7 ? ~0ULL : ((1ULL << (8 * (al[k].len + 1))) - 1);
        } else {
            t->al[k].pfx_sp = 1;  /* never equal under a zero mask */
            t->al[k].mask_sp = 0;
        }
        if (al[k].len == 0) {
            t->has_empty = 1;
        } else {
            int16_t *f = &t->first[(unsigned char)al[k].name[0]];
            *f = (*f == -1) ? (int16_t)k : (int16_t)-2;
        }
    }
    for (int b = 0; b < 256; b++) t->scan_first[b] = t->has_empty ? CTF_SCAN_SLOW : t->first[b];
    if (!t->has_empty) t->scan_first['#'] = CTF_SCAN_COMMENT; /* "|#" is a comment whatever the names */
    return t;
}

/* Does stream k's name stand at p (followed by a delimiter or `end`)? */
static inline int ctf_name_at(const ctf_alias *a, const char *p, size_t avail, const char *bufend) {
    const size_t len = a->len;
    if (len > avail) return 0;
#ifdef CTF_HAVE_SWAR
    if (bufend - p >= 8) {
        if ((ctf_load8(p) & a->mask) != a->pfx) return 0;
        if (len > 8 && memcmp(p + 8, a->name + 8, len - 8) != 0) return 0;
    } else
#endif
    {
        (void)bufend;
        if (memcmp(p, a->name, len) != 0) return 0;
    }
    return len == avail || CTF_IS_DELIM(p[len]);
}

/* The stream whose name is the token starting at p (ending at a delimiter or `end`), or -1.
 * The last stream with that name wins (as a dict built in stream order), and the token's end need
 * not be known first. `bufend` bounds the 8-byte reads. */
static inline int ctf_match_alias(const ctf_names *nm, int na, const char *p, const char *end,
                                  const char *bufend) {
    const size_t avail = (size_t)(end - p);
    if (!nm->has_empty) {
        int k;
        if (avail == 0) return -1;
        k = nm->first[(unsigned char)p[0]];
        if (k == -1) return -1;
        if (k >= 0) return ctf_name_at(&nm->al[k], p, avail, bufend) ? k : -1;
    }
    for (int k = na - 1; k >= 0; k--)
        if (ctf_name_at(&nm->al[k], p, avail, bufend)) return k;
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

/* v * 10 + 9 cannot overflow while v <= CTF_U64_SAFE; above it only 1844674407370955161 * 10 + d
 * with d <= 5 still fits. */
#define CTF_U64_SAFE 1844674407370955160ULL

/* Value of the digits [s, e) if it fits in uint64 (returns 1), else 0. */
static inline int ctf_digits_u64(const char *s, const char *e, uint64_t *out) {
    uint64_t v = 0;
    for (; s < e; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (CTF_UNLIKELY(v > CTF_U64_SAFE) && (v > CTF_U64_SAFE + 1 || d > 5)) return 0;
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

/* What the scan knows about the line being read. */
typedef struct {
    const char *ls;          /* line start */
    int blank;               /* only WS */
    int valid;               /* prefix valid (and, in ids mode, id fits in 64 bits: set later) */
    int has_digits;
    int id_big;
    uint64_t id;
    int has_content;
    int nhits;
    uint64_t hits;           /* streams 0..63 named on the line (bit k); the others in line_hits */
} ctf_scan_line;

typedef struct {
    ctf_index *ix;
    const char *buf, *end;
    const ctf_names *names;
    int na, skip_ids, defining;
    int ids_mode;            /* -1 until the first data line */
    int pending_key;
    uint64_t cur_key;
    int64_t nseq;
    int64_t *counts;         /* per stream: samples of the current sequence (see run_mask) */
    uint64_t run_mask;       /* the last run_len counted lines named exactly these streams 0..63: */
    int64_t run_len;         /* added to counts by ctf_scan_flush (most lines name the same ones) */
    int64_t *stamp;          /* per stream: the line that counted it last */
    int *line_hits;          /* streams named on the current line */
} ctf_scan_state;

/* Reads the prefix of the line at ls (see _reference._Prefix). */
CTF_ALWAYS_INLINE void ctf_scan_prefix(const ctf_scan_state *st, const char *ls, ctf_scan_line *ln) {
    const char *p = ls, *end = st->end, *ds;
    uint64_t v = 0;
    ln->ls = ls;
    ln->has_content = 0;
    ln->nhits = 0;
    ln->hits = 0;
    ln->id_big = 0;
    ln->id = 0;
    while (p < end && CTF_IS_WS(*p)) p++;
    ln->blank = (p >= end || *p == '\n');
    ln->valid = 1;
    ln->has_digits = 0;
    if (ln->blank) return;
    ds = p;
#ifdef CTF_HAVE_SWAR
    if (end - p >= 8) { /* ids of up to 7 digits: eight bytes at once */
        uint64_t x = ctf_load8(p);
        int n = ctf_digit_run8(x);
        if (n < 8) {
            if (n > 0) v = ctf_digits_value8(x, n);
            p += n;
            goto digits_done;
        }
    }
#endif
    while (p < end && CTF_IS_DIGIT(*p)) {
        uint64_t d = (uint64_t)(*p - '0');
        if (CTF_UNLIKELY(v > CTF_U64_SAFE) && (v > CTF_U64_SAFE + 1 || d > 5)) ln->id_big = 1;
        v = v * 10u + d;
        p++;
    }
#ifdef CTF_HAVE_SWAR
digits_done:
#endif
    ln->id = v;
    ln->has_digits = (p > ds);
    if (ln->has_digits) {
        if (p < end && !(CTF_IS_WS(*p) || *p == '|' || *p == '\n')) ln->valid = 0;
    } else if (*p != '|') {
        ln->valid = 0;
    }
    if (!ln->valid) ln->has_content = 1;
}

/* Stream k is named on the current line. */
CTF_ALWAYS_INLINE void ctf_scan_hit(ctf_scan_state *st, ctf_scan_line *ln, int k, int64_t line_no) {
    if (k < 64) ln->hits |= 1ULL << k;
    else if (st->stamp[k] != line_no) { st->stamp[k] = line_no; st->line_hits[ln->nhits++] = k; }
}

/* The pending run of lines into counts. */
static inline void ctf_scan_flush(ctf_scan_state *st) {
    for (uint64_t m = st->run_mask; m; m &= m - 1) st->counts[__builtin_ctzll(m)] += st->run_len;
    st->run_len = 0;
}

/* A '|' at bar on the current line. */
CTF_ALWAYS_INLINE void ctf_scan_bar(ctf_scan_state *st, ctf_scan_line *ln, const char *bar,
                                int64_t line_no) {
    int k;
    if (!ln->valid) return;
    if (bar + 1 < st->end && bar[1] == '#') return; /* comment */
    ln->has_content = 1;
    k = ctf_match_alias(st->names, st->na, bar + 1, st->end, st->end);
    if (k >= 0) ctf_scan_hit(st, ln, k, line_no);
}

#if defined(CTF_HAVE_SSE2) && defined(CTF_HAVE_SWAR)
/* The scan's common cases, where at least 32 bytes can be read at ls / bar (the caller's
 * guarantee): a line that starts with an id of 1-7 digits and a space, or with '|'; a '|'
 * followed by a declared name of up to 7 bytes and a space, by '#', or by a byte no name starts
 * with. Anything else goes to ctf_scan_prefix / ctf_scan_bar, which these equal. */
CTF_ALWAYS_INLINE void ctf_scan_prefix_fast(const ctf_scan_state *st, const char *ls, ctf_scan_line *ln) {
    const uint64_t x = ctf_load8(ls);
    const int n = ctf_digit_run8(x);
    if (n > 0 && n < 8 && ls[n] == ' ') {
        ln->ls = ls;
        ln->has_content = 0;
        ln->nhits = 0;
        ln->hits = 0;
        ln->id_big = 0;
        ln->id = ctf_digits_value8(x, n);
        ln->blank = 0;
        ln->valid = 1;
        ln->has_digits = 1;
        return;
    }
    if ((x & 0xFF) == '|') {
        ln->ls = ls;
        ln->has_content = 0;
        ln->nhits = 0;
        ln->hits = 0;
        ln->id_big = 0;
        ln->id = 0;
        ln->blank = 0;
        ln->valid = 1;
        ln->has_digits = 0;
        return;
    }
    ctf_scan_prefix(st, ls, ln);
}

CTF_ALWAYS_INLINE void ctf_scan_bar_fast(ctf_scan_state *st, ctf_scan_line *ln, const char *bar,
                                         int64_t line_no) {
    int k;
    if (!ln->valid) return;
    k = st->names->scan_first[(unsigned char)bar[1]];
    if (k >= 0) {
        const ctf_alias *a = &st->names->al[k];
        if ((ctf_load8(bar + 1) & a->mask_sp) == a->pfx_sp) {
            ln->has_content = 1;
            ctf_scan_hit(st, ln, k, line_no);
            return;
        }
    } else if (k == -1) { /* no name starts so: content, no sample of a declared stream */
        ln->has_content = 1;
        return;
    } else if (k == CTF_SCAN_COMMENT) {
        return;
    }
    ctf_scan_bar(st, ln, bar, line_no);
}
#endif

static int ctf_scan_close_seq(ctf_scan_state *st) {
    int64_t len = 0;
    if (st->nseq == 0) return 0;
    ctf_scan_flush(st);
    if (st->defining >= 0) len = st->counts[st->defining];
    else for (int k = 0; k < st->na; k++) if (st->counts[k] > len) len = st->counts[k];
    return ctf_push_i64(&st->ix->lengths, len);
}

/* The line ended: the sequence bookkeeping (see _reference.scan_index). 0 or -1 (no memory). */
CTF_ALWAYS_INLINE int ctf_scan_line_done(ctf_scan_state *st, ctf_scan_line *ln, int64_t line_no) {
    int start_new, have_key = 0, valid = ln->valid;
    uint64_t key = 0;
    if (!ln->has_content) return 0;
    if (st->ids_mode < 0) st->ids_mode = (!st->skip_ids) && ln->has_digits;
    if (st->ids_mode && ln->has_digits && valid) {
        if (!ln->id_big) have_key = 1;
        else valid = 0; /* BAD_ID: continues the current sequence, counts nothing */
    }
    if (!st->ids_mode) {
        start_new = 1;
        key = (uint64_t)st->nseq;
    } else if (st->nseq == 0) {
        start_new = 1;
        key = have_key ? ln->id : 0;
        st->pending_key = !have_key;
    } else if (!have_key) {
        start_new = 0;
    } else if (st->pending_key) {
        memcpy(st->ix->keys.data + st->ix->keys.len - sizeof(uint64_t), &ln->id, sizeof ln->id);
        st->cur_key = ln->id;
        st->pending_key = 0;
        start_new = 0;
    } else {
        start_new = (ln->id != st->cur_key);
        key = ln->id;
    }
    if (start_new) {
        if (ctf_scan_close_seq(st) || ctf_push_u64(&st->ix->keys, key) ||
            ctf_push_i64(&st->ix->starts, (int64_t)(ln->ls - st->buf)) ||
            ctf_push_i64(&st->ix->first_lines, line_no))
            return -1;
        st->cur_key = key;
        st->nseq++;
        memset(st->counts, 0, sizeof *st->counts * (size_t)st->na);
    }
    if (valid) {
        if (ln->hits == st->run_mask) {
            st->run_len++;
        } else {
            ctf_scan_flush(st);
            st->run_mask = ln->hits;
            st->run_len = 1;
        }
        for (int h = 0; h < ln->nhits; h++) st->counts[st->line_hits[h]]++;
    }
    return 0;
}

#ifdef CTF_HAVE_SSE2
/* Bit i set where p[i] == '\n' (*nl) or '|' (*bar), for the 64 bytes at p. */
static inline void ctf_masks64(const char *p, uint64_t *nl, uint64_t *bar) {
    const __m128i vn = _mm_set1_epi8('\n'), vb = _mm_set1_epi8('|');
    uint64_t n = 0, b = 0;
    for (int j = 0; j < 4; j++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * j));
        n |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vn)) << (16 * j);
        b |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vb)) << (16 * j);
    }
    *nl = n;
    *bar = b;
}
#endif

/* One pass over the whole file (see _reference.scan_index). Returns 0 or CTF_ERR_NOMEM.
 * The structural bytes ('\n' and '|') are found 64 at a time as bit masks; each line's prefix
 * is read at its start, each '|' names a sample or starts a comment. */
static int ctf_scan_index(const char *buf, size_t size, const ctf_alias *al, int na, int skip_ids,
                          int defining, int64_t chunk_size, ctf_index *ix) {
    size_t data_start;
    const char *end = buf + size;
    int64_t line_no = 1;
    ctf_scan_state st;
    ctf_scan_line ln;
    ctf_names *prepared = NULL;
    int rc = CTF_ERR_NOMEM;

    memset(ix, 0, sizeof *ix);
    memset(&st, 0, sizeof st);
    ctf_populate(buf, size);
    ix->encoding = ctf_detect_encoding(buf, size, &data_start);
    if (ix->encoding >= CTF_ENC_UTF16LE) {
        if (ctf_push_i64(&ix->starts, (int64_t)size) || ctf_push_i64(&ix->chunk_starts, 0)) goto done;
        ix->ids_mode = 0;
        return 0;
    }
    st.ix = ix;
    st.buf = buf;
    st.end = end;
    st.names = prepared = ctf_names_prepare(al, na);
    if (prepared == NULL) goto done;
    st.na = na;
    st.skip_ids = skip_ids;
    st.defining = defining;
    st.ids_mode = -1;
    st.counts = (int64_t *)calloc((size_t)na + 1, sizeof *st.counts);
    st.stamp = (int64_t *)calloc((size_t)na + 1, sizeof *st.stamp);
    st.line_hits = (int *)calloc((size_t)na + 1, sizeof *st.line_hits);
    if (!st.counts || !st.stamp || !st.line_hits) goto done;

    if (buf + data_start < end) {
        const char *p = buf + data_start;
        ctf_scan_prefix(&st, p, &ln);
#ifdef CTF_HAVE_SSE2
        for (; p < end; p += 64) {
            uint64_t mnl, mbar, m;
#ifdef CTF_HAVE_SWAR
            if (end - p >= 64 + 32) { /* every structural byte of the block has 32 bytes after it */
                ctf_masks64(p, &mnl, &mbar);
                m = mnl | mbar;
                while (m) {
                    const uint64_t bit = m & (0 - m);
                    const char *q = p + __builtin_ctzll(m);
                    m ^= bit;
                    if (mbar & bit) {
                        ctf_scan_bar_fast(&st, &ln, q, line_no);
                    } else {
                        if (ctf_scan_line_done(&st, &ln, line_no)) goto done;
                        line_no++;
                        ctf_scan_prefix_fast(&st, q + 1, &ln);
                    }
                }
                continue;
            }
#endif
            if (end - p >= 64) {
                ctf_masks64(p, &mnl, &mbar);
            } else {
                char tmp[64];
                memset(tmp, 0, sizeof tmp);
                memcpy(tmp, p, (size_t)(end - p));
                ctf_masks64(tmp, &mnl, &mbar);
            }
            m = mnl | mbar;
            while (m) {
                const char *q = p + __builtin_ctzll(m);
                m &= m - 1;
                if (*q == '|') {
                    ctf_scan_bar(&st, &ln, q, line_no);
                } else {
                    if (ctf_scan_line_done(&st, &ln, line_no)) goto done;
                    line_no++;
                    if (q + 1 < end) ctf_scan_prefix(&st, q + 1, &ln);
                    else ln.has_content = 0; /* the file ends with '\n': no further line */
                }
            }
        }
#else
        for (; p < end; p++) {
            if (*p == '|') {
                ctf_scan_bar(&st, &ln, p, line_no);
            } else if (*p == '\n') {
                if (ctf_scan_line_done(&st, &ln, line_no)) goto done;
                line_no++;
                if (p + 1 < end) ctf_scan_prefix(&st, p + 1, &ln);
                else ln.has_content = 0;
            }
        }
#endif
        if (ctf_scan_line_done(&st, &ln, line_no)) goto done; /* a last line without '\n' */
    }
    if (ctf_scan_close_seq(&st)) goto done;
    if (ctf_push_i64(&ix->starts, (int64_t)size)) goto done;
    ix->ids_mode = st.ids_mode > 0;
    /* chunks */
    {
        const int64_t *sts = (const int64_t *)(const void *)ix->starts.data;
        int64_t limit = chunk_size < (int64_t)size ? chunk_size : (int64_t)size;
        int64_t chunk_bytes = 0, last = 0, nseq = st.nseq;
        if (ctf_push_i64(&ix->chunk_starts, 0)) goto done;
        for (int64_t i = 0; i < nseq; i++) {
            int64_t sb = sts[i + 1] - sts[i];
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
    free(prepared);
    free(st.counts);
    free(st.stamp);
    free(st.line_hits);
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
    const char *end;       /* end of the current sequence's bytes */
    const char *bufend;    /* end of the whole buffer (bounds the 8-byte reads) */
    const ctf_alias *al;
    const ctf_names *names;
    int na;
    int dbl;
    int ids_mode;
    int64_t error_limit, warning_limit;
    ctf_result *r;
    int64_t line_no;       /* current line */
    const char *ls;        /* current line start */
    int64_t line_ord;      /* line ordinal within this parse (for duplicate stamps) */
    int sse41;             /* real-valued runs with SSE4.1 (ctf_float_run) */
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


/* The byte at q inside the current line: with a sentinel (the line ends with a '\n' inside the
 * parsed range) every loop stops at that '\n' by itself and needs no bounds check; without one
 * (the last line of the range lacks its '\n') the end reads as '\n'. `sent` is a constant in
 * each inlined copy, so the check vanishes from the hot copy. */
#define CTF_CH(q) ((sent || (q) < end) ? *(q) : '\n')

/* One number token at p (known not to be a delimiter). Returns its end, or NULL when the token is
 * not a number (the caller reports BAD_NUMBER). */
CTF_ALWAYS_INLINE const char *ctf_value(const ctf_parser *ps, const char *p, const char *end,
                                        int sent, double *v) {
    const char *e, *q = p;
    const char c = *p;
    const int neg = (c == '-');
    q += (c == '-') | (c == '+'); /* no branch on the sign: it is random in real data */
    if (CTF_IS_DIGIT(CTF_CH(q))) {
        /* [+-]D{1,15}: a branchy loop, well predicted on pixel-like and one-hot data, exact in
         * double; [+-]D{1,8}.D{1,7}: the fraction's digits read 8 bytes at a time */
        const char *ds = q;
        uint64_t m = 0;
        char d;
        do { m = m * 10u + (uint64_t)(*q - '0'); q++; } while (CTF_IS_DIGIT(CTF_CH(q)) && q - ds < 15);
        d = CTF_CH(q);
        if (CTF_IS_DELIM(d)) { *v = neg ? -(double)m : (double)m; return q; }
#ifdef CTF_HAVE_SWAR
        if (d == '.' && q - ds <= 8 && ps->bufend - (q + 1) >= 8) {
            uint64_t x = ctf_load8(q + 1);
            int n2 = ctf_digit_run8(x);
            e = q + 1 + n2;
            if (n2 > 0 && n2 < 8 && e < end && CTF_IS_DELIM(*e)) {
                uint64_t mant = m * ctf_pow10_u64[n2] + ctf_digits_value8(x, n2);
                if (mant <= (1ull << 53)) {
                    double r = (double)mant / ctf_pow10[n2];
                    *v = neg ? -r : r;
                    return e;
                }
            }
        }
#endif
    }
    e = ctf_parse_number(p, end, &ctf_fmt, v);
    if (e == NULL || (e < end && !CTF_IS_DELIM(*e))) return NULL;
    return e;
}

#if defined(CTF_HAVE_SSE2) && defined(CTF_HAVE_SWAR)
#define CTF_HAVE_FLOAT16 1
/* Real-valued dense samples, token after token: a short plain decimal
 *     [+-]? D{0,8} ('.' D{0,8})?   (at least one digit; at most 15 bytes)
 * as "%g" and friends write them, followed by one space and the next token. The token's end and
 * what follows it are read from 16-byte masks, not from the digits or from the memory behind the
 * token, so parsing a value is off the dependency chain that leads from one token to the next;
 * the sign is a bit, not a branch (signs are random in real data). The value is the correctly
 * rounded double: at most 14 digits, so the mantissa and the power of ten are exact and one IEEE
 * division rounds once (as ctf_value's d.ddd path and Clinger's fast path). Anything else
 * (exponents, long mantissas, malformed tokens, other white space) stops the run: the general
 * path of ctf_parse_dense takes the token. */

typedef struct {
    unsigned len;  /* token bytes */
    unsigned k;    /* position of the '.', or len when there is none */
    unsigned sg;   /* 1 when the token starts with a sign */
    unsigned nf;   /* digits after the '.' */
    unsigned nd;   /* digits in all */
    int next;      /* one space follows, then a token */
} ctf_tok16;

/* Classifies the token at p (x: its 16 bytes, t: x - '0'). 1 when it is a short plain decimal. */
static inline CTF_SWAR_INLINE int ctf_tok16_scan(const char *p, __m128i x, __m128i t, ctf_tok16 *tk) {
    /* delimiter candidates: bytes <= ' ' (confirmed below: only ' ', '\t', '\r', '\n' are) or '|' */
    const __m128i sp = _mm_set1_epi8(' ');
    const unsigned dm = (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, sp), x), _mm_cmpeq_epi8(x, _mm_set1_epi8('|'))));
    const unsigned spm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, sp));
    const unsigned dg = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t));
    const unsigned dot = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('.')));
    const unsigned c0 = (unsigned char)p[0];
    const unsigned sg = (c0 == '-') | (c0 == '+');
    unsigned len, body, dotb, k, nf, nd;
    if ((dm & 0x7FFFu) == 0) return 0;
    len = (unsigned)__builtin_ctz(dm);
    /* a space after the token and no delimiter after that (byte 16 counts as one: unknown) */
    tk->next = (int)((spm >> len) & ~((dm | 0x10000u) >> (len + 1)) & 1u);
    if (!((spm >> len) & 1u) && !CTF_IS_DELIM(p[len])) return 0; /* a control byte: no delimiter */
    body = ((1u << len) - 1u) & ~sg; /* the bytes after the sign */
    dotb = dot & body;
    if (((dg | dotb) & body) != body || (dotb & (dotb - 1u)) != 0) return 0;
    k = dotb ? (unsigned)__builtin_ctz(dotb) : len;
    nf = dotb ? len - 1u - k : 0u;
    nd = len - sg - (dotb != 0);
    if (k - sg > 8u || nf > 8u || nd == 0u) return 0;
    tk->len = len;
    tk->k = k;
    tk->sg = sg;
    tk->nf = nf;
    tk->nd = nd;
    return 1;
}

/* The value from the mantissa: sign by its bit. */
static inline CTF_SWAR_INLINE double ctf_tok16_value(uint64_t mant, unsigned nf, int neg) {
    double r = (double)(int64_t)mant / ctf_pow10[nf]; /* mant < 10^14 */
    uint64_t bits;
    memcpy(&bits, &r, sizeof bits);
    bits |= (uint64_t)(neg != 0) << 63;
    memcpy(&r, &bits, sizeof bits);
    return r;
}

/* Value of the first n (0..8) digit bytes of x (n = 0: 0). */
static inline CTF_SWAR_INLINE uint64_t ctf_digits_value8z(uint64_t x, unsigned n) {
    x = (x << (((8u - n) * 8u) & 63u)) & (n ? ~0ULL : 0ULL);
    x &= 0x0F0F0F0F0F0F0F0FULL;
    x = (x * 2561u) >> 8;
    x = ((x & 0x00FF00FF00FF00FFULL) * 6553601u) >> 16;
    return ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
}

/* One run (see above) from q into dst[*nvp...], up to dim values. Returns where it stopped: at a
 * token it did not take, or at the byte after the last value taken. Needs 24 readable bytes at
 * each token (checked). Baseline x86-64 (SSE2): the digits as two 8-byte SWAR words. */
#if defined(__GNUC__)
__attribute__((noinline))  /* one call per run: keeps the other parse loops' code compact */
#endif
static const char *ctf_float_run_sse2(const char *q, const char *bufend, char *dst, int64_t *nvp,
                                      int64_t dim, int dbl) {
    int64_t nv = *nvp;
    while (nv < dim && bufend - q >= 24) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
        const __m128i t = _mm_sub_epi8(x, _mm_set1_epi8('0'));
        ctf_tok16 tk;
        uint64_t ival, fval;
        double v;
        if (!ctf_tok16_scan(q, x, t, &tk)) break;
        ival = ctf_digits_value8z(ctf_load8(q + tk.sg), tk.k - tk.sg);
        fval = ctf_digits_value8z(ctf_load8(q + tk.k + 1), tk.nf);
        v = ctf_tok16_value(ival * ctf_pow10_u64[tk.nf] + fval, tk.nf, q[0] == '-');
        CTF_STORE(dst, nv, v, dbl);
        nv++;
        q += tk.len;
        if (!tk.next) break;
        q++;
    }
    *nvp = nv;
    return q;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CTF_HAVE_FLOAT16_SSE41 1
#include <smmintrin.h>
#define CTF_SSE41 __attribute__((target("sse4.1")))
/* The same with SSSE3/SSE4.1 (chosen at run time, ctf_number_init): the digits gathered
 * right-aligned without the '.' by one byte shuffle and summed by multiply-adds. */
static CTF_SSE41 const char *ctf_float_run_sse41(const char *q, const char *bufend, char *dst,
                                                 int64_t *nvp, int64_t dim, int dbl) {
    const __m128i rpos = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m128i w1 = _mm_setr_epi8(10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1, 10, 1);
    const __m128i w2 = _mm_setr_epi16(100, 1, 100, 1, 100, 1, 100, 1);
    const __m128i w4 = _mm_setr_epi16(10000, 1, 10000, 1, 10000, 1, 10000, 1);
    int64_t nv = *nvp;
    while (nv < dim && bufend - q >= 24) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
        const __m128i t = _mm_sub_epi8(x, _mm_set1_epi8('0'));
        ctf_tok16 tk;
        __m128i src, d;
        uint64_t mant;
        double v;
        if (!ctf_tok16_scan(q, x, t, &tk)) break;
        /* output byte j holds the digit r = 15 - j places from the right: token byte
         * len-1-r, one more to the left past the '.', none (0x80: zero) from r = nd on */
        src = _mm_sub_epi8(_mm_set1_epi8((char)(tk.len - 1u)), rpos);
        src = _mm_add_epi8(src, _mm_cmpgt_epi8(rpos, _mm_set1_epi8(
                                    (char)(tk.k < tk.len ? tk.nf - 1u : 15u))));
        src = _mm_or_si128(src, _mm_cmpgt_epi8(rpos, _mm_set1_epi8((char)(tk.nd - 1u))));
        d = _mm_shuffle_epi8(t, src);
        d = _mm_maddubs_epi16(d, w1);
        d = _mm_madd_epi16(d, w2);
        d = _mm_packus_epi32(d, d);
        d = _mm_madd_epi16(d, w4);
        mant = (uint64_t)(uint32_t)_mm_cvtsi128_si32(d) * 100000000u +
               (uint64_t)(uint32_t)_mm_extract_epi32(d, 1);
        v = ctf_tok16_value(mant, tk.nf, q[0] == '-');
        CTF_STORE(dst, nv, v, dbl);
        nv++;
        q += tk.len;
        if (!tk.next) break;
        q++;
    }
    *nvp = nv;
    return q;
}
#endif

#ifdef CTF_HAVE_FLOAT16_SSE41
/* 1 when the running CPU has SSE4.1, 0 when not, -1 until asked (ctf_parse_chunk asks once per
 * call; the answer is the same from every thread, so the relaxed accesses only avoid a torn
 * read, never a wrong one). */
static int ctf_sse41_state = -1;

static int ctf_use_sse41(void) {
    int s = __atomic_load_n(&ctf_sse41_state, __ATOMIC_RELAXED);
    if (s < 0) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("sse4.1") ? 1 : 0;
        __atomic_store_n(&ctf_sse41_state, s, __ATOMIC_RELAXED);
    }
    return s;
}
#endif

static inline CTF_SWAR_INLINE const char *ctf_float_run(const char *q, const char *bufend, char *dst,
                                                        int64_t *nvp, int64_t dim, int dbl,
                                                        int sse41) {
#ifdef CTF_HAVE_FLOAT16_SSE41
    if (sse41) return ctf_float_run_sse41(q, bufend, dst, nvp, dim, dbl);
#endif
    (void)sse41;
    return ctf_float_run_sse2(q, bufend, dst, nvp, dim, dbl);
}
#endif

/* Number of value tokens from p to the end of the sample. */
static int64_t ctf_count_tokens(const char *p, const char *end) {
    int64_t n = 0;
    for (;;) {
        while (p < end && CTF_IS_WS(*p)) p++;
        if (p >= end || *p == '|' || *p == '\n') return n;
        p = ctf_token_end(p, end);
        n++;
    }
}

/* Dense sample values from p (just after the name) up to the next '|' / '\n' / end.
 * Returns the position after the sample (at '|', '\n' or end), or NULL with *stop set. */
CTF_ALWAYS_INLINE const char *ctf_parse_dense(ctf_parser *ps, int k, const char *bar,
                                              const char *p, const char *end, int sent, int *stop) {
    ctf_stream_out *so = &ps->r->out[k];
    const int64_t dim = ps->al[k].dim;
    const int dbl = ps->dbl;
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    int64_t nv = 0;
#ifdef CTF_HAVE_SWAR
    int ints = 1; /* every value so far was a plain integer */
#endif
    char *dst;
    if (ctf_vec_reserve(&so->values, (size_t)dim * esz)) { *stop = -1; return NULL; }
    dst = so->values.data + so->values.len;
    for (;;) {
        const char *e;
        double v;
        char c = CTF_CH(p);
        if (CTF_IS_WS(c)) { p++; continue; }
        if (c == '|' || c == '\n') break;
        if (CTF_LIKELY(nv < dim)) {
#ifdef CTF_HAVE_SWAR
            /* runs of zeros (image borders, one-hot vectors): "0 0 0 0 " four values at once */
            /* (no test of c first: whether a value starts with '0' is random in real-valued data) */
            if (dim - nv >= 4 && end - p >= 8 && ctf_load8(p) == 0x2030203020302030ULL) {
                const int64_t nv0 = nv;
                do { /* the whole run, then one memset */
                    nv += 4;
                    p += 8;
                } while (dim - nv >= 4 && end - p >= 8 && ctf_load8(p) == 0x2030203020302030ULL);
                memset(dst + (size_t)nv0 * esz, 0, (size_t)(nv - nv0) * esz);
                continue;
            }
#endif
            if (CTF_CH(p + 1) == ' ' && CTF_IS_DIGIT(c)) { /* "0 ": the commonest token (the space
                                                              first: the sign of a value is random) */
                CTF_STORE(dst, nv, (double)(c - '0'), dbl);
                nv++;
                p += 2;
                continue;
            }
#ifdef CTF_HAVE_SWAR
            if (ints) { /* an unsigned integer of up to 7 digits (pixel values): its digits at
                         * once, so that their varying number costs no mispredicted loop exit */
                const uint64_t x = ps->bufend - p >= 8 ? ctf_load8(p) : 0;
                const int nd = ctf_digit_run8(x);
                /* (p[0] is no delimiter, so a delimiter at nd means 1..7 digits) */
                if (nd < 8 && CTF_IS_DELIM(p[nd]) && (sent || p + nd < end)) {
                    CTF_STORE(dst, nv, (double)ctf_digits_value8(x, nd), dbl);
                    nv++;
                    p += nd;
                    continue;
                }
                ints = 0; /* not an integer sample: the general path for the rest of it */
            }
#endif
#ifdef CTF_HAVE_FLOAT16
            else if (sent) {
                /* real-valued samples: "v v v ..." token after token while each is a short plain
                 * decimal followed by one space and another token (anything else: the loop above) */
                const char *q = ctf_float_run(p, ps->bufend, dst, &nv, dim, dbl, ps->sse41);
                if (q != p) { p = q; continue; }
            }
#endif
            e = ctf_value(ps, p, end, sent, &v);
            if (e != NULL) {
                CTF_STORE(dst, nv, v, dbl);
                nv++;
                p = e;
                continue;
            }
            {
                const char *te = ctf_token_end(p, end);
                int rc = ctf_report(ps, CTF_BAD_NUMBER, k, p, (int64_t)(te - p), 0);
                if (rc) { *stop = rc; return NULL; }
                return ctf_find2(te, end, '|', '\n');
            }
        }
        { /* TOO_MANY_VALUES at this token; detail = all tokens of the sample */
            int64_t total = nv + ctf_count_tokens(p, end);
            int rc = ctf_report(ps, CTF_TOO_MANY_VALUES, k, p, (int64_t)(ctf_token_end(p, end) - p),
                                total);
            if (rc) { *stop = rc; return NULL; }
            return ctf_find2(p, end, '|', '\n');
        }
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
CTF_ALWAYS_INLINE const char *ctf_parse_sparse(ctf_parser *ps, int k, const char *p,
                                               const char *end, int sent, int *stop) {
    ctf_stream_out *so = &ps->r->out[k];
    const int64_t dim = ps->al[k].dim;
    const int dbl = ps->dbl;
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    const size_t vlen0 = so->values.len, ilen0 = so->indices.len;
    int64_t nnz;
    for (;;) {
        const char *s, *q, *e;
        uint64_t idx = 0;
        int big = 0, code = 0, rc;
        double v;
        int64_t at_len = 0;
        const char *at = NULL;
        char c = CTF_CH(p);
        if (CTF_IS_WS(c)) { p++; continue; }
        if (c == '|' || c == '\n') break;
        s = p;
        q = p;
        while (CTF_IS_DIGIT(CTF_CH(q))) {
            uint64_t d = (uint64_t)(*q - '0');
            if (CTF_UNLIKELY(idx > CTF_U64_SAFE)) big = 1; else idx = idx * 10u + d;
            q++;
        }
        if (q > s && CTF_CH(q) == ':') {
            if (big || idx >= (uint64_t)dim) { code = CTF_INDEX_RANGE; at = s; at_len = q - s; }
            else if (CTF_IS_DELIM(CTF_CH(q + 1)) || (e = ctf_value(ps, q + 1, end, sent, &v)) == NULL) {
                code = CTF_BAD_NUMBER; at = q + 1; at_len = ctf_token_end(q + 1, end) - (q + 1);
            } else {
                if ((so->values.len + esz > so->values.cap && ctf_vec_reserve(&so->values, esz)) ||
                    (so->indices.len + sizeof(int32_t) > so->indices.cap &&
                     ctf_vec_reserve(&so->indices, sizeof(int32_t)))) {
                    *stop = -1;
                    return NULL;
                }
                CTF_STORE(so->values.data + so->values.len, 0, v, dbl);
                so->values.len += esz;
                {
                    int32_t i32 = (int32_t)idx;
                    memcpy(so->indices.data + so->indices.len, &i32, sizeof i32);
                    so->indices.len += sizeof i32;
                }
                p = e;
                continue;
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

/* The samples of a line from p (the body, after the prefix) to le ('\n' or the range end). */
CTF_ALWAYS_INLINE int ctf_parse_samples(ctf_parser *ps, const char *p, const char *end, int sent) {
    int stop = 0;
    for (;;) {
        const char *bar = ctf_find2(p, end, '|', '\n'), *ne;
        int k;
        if (bar >= end || *bar == '\n') return 0;
        if (bar + 1 < end && bar[1] == '#') { p = bar + 2; continue; }
        if (bar + 1 >= end || CTF_IS_DELIM(bar[1])) {
            int rc = ctf_report(ps, CTF_EMPTY_NAME, -1, bar, 1, 0);
            if (rc) return rc;
            p = bar + 1;
            continue;
        }
        k = ctf_match_alias(ps->names, ps->na, bar + 1, end, ps->bufend);
        if (k < 0) { p = ctf_find2(bar + 1, end, '|', '\n'); continue; }
        ne = bar + 1 + ps->al[k].len;
        if (ps->r->out[k].stamp == ps->line_ord) {
            int rc = ctf_report(ps, CTF_DUPLICATE_INPUT, k, bar, (int64_t)(ne - bar), 0);
            if (rc) return rc;
            p = ctf_find2(ne, end, '|', '\n');
            continue;
        }
        ps->r->out[k].stamp = ps->line_ord;
        p = ps->al[k].sparse ? ctf_parse_sparse(ps, k, ne, end, sent, &stop)
                             : ctf_parse_dense(ps, k, bar, ne, end, sent, &stop);
        if (p == NULL) return stop;
    }
}

/* Parses the line [ps->ls, le), le being its '\n' or the range end. Returns 0, 1 (stop: error
 * limit) or -1 (no memory). */
static int ctf_parse_line(ctf_parser *ps, const char *le) {
    const char *ls = ps->ls, *p;
    ctf_prefix pf;
    p = ls;
    while (p < le && CTF_IS_WS(*p)) p++;
    if (p < le && *p == '|') {
        pf.body = p; /* the common case: no id, nothing to check */
    } else {
        ctf_read_prefix(ls, le, &pf);
        if (pf.blank) return 0;
        if (pf.invalid_at)
            return ctf_report(ps, CTF_BAD_PREFIX, -1, pf.invalid_at,
                              (int64_t)(ctf_token_end(pf.invalid_at, le) - pf.invalid_at), 0);
        /* skipped unless it names a sample; "|x" right after the prefix is the common answer */
        if (!(pf.body + 1 < le && pf.body[0] == '|' && pf.body[1] != '#') &&
            !ctf_line_has_names(pf.body, le))
            return 0;
        if (ps->ids_mode && pf.digits_end - pf.digits_start > 19) { /* 19 digits always fit */
            uint64_t unused;
            if (!ctf_digits_u64(pf.digits_start, pf.digits_end, &unused))
                return ctf_report(ps, CTF_BAD_ID, -1, pf.digits_start,
                                  (int64_t)(pf.digits_end - pf.digits_start), 0);
        }
    }
    ps->line_ord++;
    if (le < ps->end) return ctf_parse_samples(ps, pf.body, le, 1); /* *le == '\n' */
    return ctf_parse_samples(ps, pf.body, le, 0);
}

/* Cache lines of a sequence read ahead when sequences are parsed one by one (ends given). With
 * `bench/random_parse.py bench/data/seq.ctf --prefetch-lines 0 4 8 12`, 8 (512 bytes) parsed the
 * randomized seq order in 0.199 s against 0.239 s without; 4 did the same, 12 no better. */
#ifndef CTF_PREFETCH_LINES
#define CTF_PREFETCH_LINES 8
#endif

/* Prefetch the first CTF_PREFETCH_LINES cache lines of sequences [from, from + count). */
static void ctf_prefetch_sequence(const char *buf, int64_t base, const int64_t *starts,
                                  const int64_t *ends, int64_t n, int64_t from, int64_t count) {
    for (int64_t j = from; j < from + count && j < n; j++) {
        const char *q = buf + (starts[j] - base), *qe = buf + (ends[j] - base);
        for (int c = 0; c < CTF_PREFETCH_LINES && q < qe; c++, q += 64) __builtin_prefetch(q, 0, 0);
    }
}

/* Parses sequences starts[i]:starts[i+1] (see _reference.parse_chunk). The result's outputs are
 * complete unless r->aborted. Returns 0, or CTF_ERR_NOMEM. */
static int ctf_parse_chunk(const char *buf, size_t buflen, int64_t base, const int64_t *starts,
                           const int64_t *ends, const int64_t *first_lines, int64_t n, int ids_mode,
                           const ctf_alias *al, int na, int dbl, int64_t error_limit,
                           int64_t warning_limit, ctf_result *r) {
    ctf_parser ps;
    int stop = 0;
    ctf_names *prepared = ctf_names_prepare(al, na);
    memset(r, 0, sizeof *r);
    if (prepared == NULL) return CTF_ERR_NOMEM;
    al = prepared->al;
    r->nstreams = na;
    r->out = (ctf_stream_out *)calloc((size_t)na + 1, sizeof *r->out);
    if (r->out == NULL) { free(prepared); return CTF_ERR_NOMEM; }
    {
        int64_t text = 0; /* bytes of text to parse */
        for (int64_t i = 0; ends != NULL && i < n; i++) text += ends[i] - starts[i];
        if (ends == NULL && n > 0) text = starts[n] - starts[0];
        if (text < CTF_HUGE_INPUT_MIN)
            for (int k = 0; k < na; k++)
                r->out[k].values.heap = r->out[k].indices.heap = r->out[k].indptr.heap =
                    r->out[k].offsets.heap = 1;
    }
    for (int k = 0; k < na; k++) {
        if (ctf_vec_reserve(&r->out[k].offsets, sizeof(int64_t) * (size_t)(n + 1)) ||
            ctf_push_i64(&r->out[k].offsets, 0)) goto nomem;
        if (al[k].sparse && ctf_push_i64(&r->out[k].indptr, 0)) goto nomem;
        r->out[k].stamp = -1;
    }
    ps.buf = buf;
    ps.base = base;
    ps.end = buf;
    ps.bufend = buf + buflen;
    ps.al = al;
    ps.names = prepared;
    ps.na = na;
    ps.dbl = dbl;
    ps.ids_mode = ids_mode;
    ps.error_limit = error_limit;
    ps.warning_limit = warning_limit;
    ps.r = r;
    ps.line_ord = 0;
#ifdef CTF_HAVE_FLOAT16_SSE41
    ps.sse41 = ctf_use_sse41();
#else
    ps.sse41 = 0;
#endif
    for (int64_t i = 0; i < n && !stop; i++) {
        const char *send = buf + ((ends ? ends[i] : starts[i + 1]) - base);
        const char *p = buf + (starts[i] - base);
        if (ends != NULL)
            /* sequences picked one by one lie anywhere in the file: ask for the start of the
             * one after next now, so that its first cache lines arrive while these two parse */
            ctf_prefetch_sequence(buf, base, starts, ends, n, i + (i ? 2 : 0), i ? 1 : 3);
        ps.end = send;
        ps.line_no = first_lines[i];
        while (p < send) {
            const char *le = (const char *)memchr(p, '\n', (size_t)(send - p));
            if (le == NULL) le = send;
            ps.ls = p;
            stop = ctf_parse_line(&ps, le);
            if (stop) break;
            p = le < send ? le + 1 : send;
            ps.line_no++;
        }
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
    free(prepared);
    return 0;
nomem:
    free(prepared);
    ctf_result_free(r);
    return CTF_ERR_NOMEM;
}

#endif /* CNTKIO_CTF_CORE_H */
