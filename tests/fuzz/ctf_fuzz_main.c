/* Sanitizer/fuzz harness of the C CTF parser core (src/cntkio/_native/ctf_core.h).
 *
 *     ctf_fuzz [--mutations N] [--seed S] FILE...
 *
 * Built with -fsanitize=address,undefined (make asan-test, or tests/test_ctf_native_fuzz.py).
 * Every input is copied into a heap block of exactly its size, so a read one byte past the end is
 * an AddressSanitizer report. Each file is indexed and parsed under several stream declarations
 * and options; every chunk is parsed from a block holding only that chunk's bytes (as the
 * deserializer does), and the outputs are checked for internal consistency (offsets ascending and
 * complete, value counts = samples * dim, CSR pointers consistent, indices < dim, issue positions
 * inside the chunk). Then N deterministic random mutations of the file (special bytes written,
 * inserted or deleted, truncations, duplicated spans) go through the same checks. Any sanitizer
 * report or failed check aborts with a non-zero exit status.
 *
 * Built with -DCTF_FUZZ_NO_MAIN it is a fuzz target like tests/fuzz/fuzz_*.c instead
 * (LLVMFuzzerTestOneInput: one input through the same checks), for libFuzzer or
 * tests/fuzz/fuzz_driver.c; tests/fuzz/run_fuzz.py builds it so for the campaign.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctf_core.h"

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "ctf_fuzz: check failed: %s (%s:%d) in %s: ", #cond,    \
                    __FILE__, __LINE__, current_name);                              \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            abort();                                                                \
        }                                                                           \
    } while (0)

static const char *current_name = "";
static unsigned long long runs = 0;

typedef struct {
    const char *names[4];
    int64_t dims[4];
    int sparse[4];
    int n;
} stream_set;

static const stream_set SETS[] = {
    {{"A", "B", "C"}, {1, 5, 1}, {0, 1, 0}, 3},
    {{"features", "labels"}, {10, 10}, {0, 1}, 2},
    {{"features", "labels"}, {2, 3}, {1, 0}, 2},
    {{"F0", "F1", "x"}, {100, 10, 2}, {1, 0, 0}, 3},
    {{"a", "b", "sp"}, {3, 2, 2147483647}, {0, 0, 1}, 3},
};

static void check_result(const ctf_result *r, const stream_set *ss, int64_t n, int dbl,
                         int64_t lo, int64_t hi) {
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    const ctf_issue *is = (const ctf_issue *)(const void *)r->issues.data;
    size_t ni = r->issues.len / sizeof(ctf_issue);
    for (int k = 0; k < ss->n; k++) {
        const ctf_stream_out *so = &r->out[k];
        const int64_t *off = (const int64_t *)(const void *)so->offsets.data;
        CHECK(so->offsets.len == sizeof(int64_t) * (size_t)(n + 1), "offsets %zu for n=%lld",
              so->offsets.len, (long long)n);
        CHECK(off[0] == 0, "offsets[0]=%lld", (long long)off[0]);
        for (int64_t i = 0; i < n; i++) CHECK(off[i] <= off[i + 1], "offsets not ascending at %lld", (long long)i);
        CHECK(off[n] == so->nsamples, "offsets[n]=%lld samples=%lld", (long long)off[n], (long long)so->nsamples);
        if (ss->sparse[k]) {
            const int64_t *ip = (const int64_t *)(const void *)so->indptr.data;
            const int32_t *ix = (const int32_t *)(const void *)so->indices.data;
            size_t nnz = so->indices.len / sizeof(int32_t);
            CHECK(so->indptr.len == sizeof(int64_t) * (size_t)(so->nsamples + 1), "indptr size");
            CHECK(ip[0] == 0 && (size_t)ip[so->nsamples] == nnz, "indptr ends");
            for (int64_t s = 0; s < so->nsamples; s++) CHECK(ip[s] <= ip[s + 1], "indptr ascending");
            CHECK(so->values.len == nnz * esz, "data size %zu for nnz %zu", so->values.len, nnz);
            for (size_t j = 0; j < nnz; j++) CHECK(ix[j] >= 0 && ix[j] < ss->dims[k], "index %d", ix[j]);
        } else {
            CHECK(so->values.len == (size_t)so->nsamples * (size_t)ss->dims[k] * esz, "dense size");
        }
    }
    for (size_t i = 0; i < ni; i++) {
        CHECK(is[i].line >= 1 && is[i].column >= 1, "issue line/column");
        CHECK(is[i].offset >= lo && is[i].offset + is[i].length <= hi, "issue [%lld,+%lld) outside [%lld,%lld)",
              (long long)is[i].offset, (long long)is[i].length, (long long)lo, (long long)hi);
        CHECK((is[i].code >= 1 && is[i].code <= 9) || is[i].code == 100, "issue code %d", is[i].code);
        if (i > 0) CHECK(is[i].offset >= is[i - 1].offset, "issues in file order");
    }
    if (r->aborted) CHECK(ni > 0, "aborted without an issue");
}

static void run_one(const char *data, size_t size) {
    char *buf = (char *)malloc(size ? size : 1);
    CHECK(buf != NULL, "malloc");
    memcpy(buf, data, size);
    for (size_t si = 0; si < sizeof SETS / sizeof SETS[0]; si++) {
        const stream_set *ss = &SETS[si];
        ctf_alias al[4];
        for (int k = 0; k < ss->n; k++) {
            al[k].name = ss->names[k];
            al[k].len = strlen(ss->names[k]);
            al[k].dim = ss->dims[k];
            al[k].sparse = ss->sparse[k];
        }
        for (int variant = 0; variant < 4; variant++) {
            int skip_ids = variant & 1;
            int64_t chunk_size = (variant & 2) ? 64 : ((int64_t)1 << 40);
            int defining = (int)(si % 2) - 1;
            ctf_index ix;
            const int64_t *starts, *fl, *cs;
            int64_t n, nc;
            CHECK(ctf_scan_index(buf, size, al, ss->n, skip_ids, defining, chunk_size, &ix) == 0, "scan nomem");
            runs++;
            n = (int64_t)CTF_VEC_COUNT(ix.keys, uint64_t);
            starts = (const int64_t *)(const void *)ix.starts.data;
            fl = (const int64_t *)(const void *)ix.first_lines.data;
            cs = (const int64_t *)(const void *)ix.chunk_starts.data;
            nc = (int64_t)CTF_VEC_COUNT(ix.chunk_starts, int64_t) - 1;
            CHECK(CTF_VEC_COUNT(ix.starts, int64_t) == (size_t)n + 1, "starts size");
            CHECK(starts[n] == (int64_t)size, "starts[n]");
            for (int64_t i = 0; i < n; i++) {
                CHECK(starts[i] < starts[i + 1], "starts ascending");
                CHECK(fl[i] >= 1 && (i == 0 || fl[i] > fl[i - 1]), "first lines");
            }
            CHECK(cs[0] == 0 && cs[nc] == n && (n == 0 ? nc == 0 : nc >= 1), "chunk bounds");
            for (int64_t c = 0; c < nc; c++) {
                int64_t a = cs[c], b = cs[c + 1], lo = starts[a], hi = starts[b];
                char *piece;
                CHECK(a < b, "empty chunk");
                piece = (char *)malloc((size_t)(hi - lo) ? (size_t)(hi - lo) : 1);
                CHECK(piece != NULL, "malloc");
                memcpy(piece, buf + lo, (size_t)(hi - lo));
                for (int dbl = 0; dbl < 2; dbl++) {
                    for (int el = -1; el <= 1; el += 2) {
                        ctf_result r;
                        CHECK(ctf_parse_chunk(piece, (size_t)(hi - lo), lo, starts + a, NULL, fl + a, b - a,
                                              ix.ids_mode, al, ss->n, dbl, el, 2, &r) == 0, "parse nomem");
                        runs++;
                        check_result(&r, ss, b - a, dbl, lo, hi);
                        ctf_result_free(&r);
                    }
                }
                free(piece);
            }
            ctf_index_free(&ix);
        }
    }
    free(buf);
}

#ifdef CTF_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    static int ready;
    if (!ready) {
        CHECK(ctf_number_init() == 0, "no C locale");
        ready = 1;
    }
    run_one((const char *)data, size);
    return 0;
}
#else

static unsigned long long rng_state = 88172645463325252ULL;
static unsigned long long rnd(void) { /* xorshift64 */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char SPECIAL[] = "|#:\n\r\t .-+eE0123456789\0\xff\xef\xbb\xbf" "AB";

static size_t mutate(char *dst, size_t cap, const char *src, size_t n) {
    size_t len = n < cap ? n : cap;
    int ops = 1 + (int)(rnd() % 4);
    memcpy(dst, src, len);
    for (int o = 0; o < ops; o++) {
        size_t pos = len ? (size_t)(rnd() % len) : 0;
        switch (rnd() % 6) {
        case 0: /* overwrite with a special byte */
            if (len) dst[pos] = SPECIAL[rnd() % (sizeof SPECIAL - 1)];
            break;
        case 1: /* insert a special byte */
            if (len < cap) {
                memmove(dst + pos + 1, dst + pos, len - pos);
                dst[pos] = SPECIAL[rnd() % (sizeof SPECIAL - 1)];
                len++;
            }
            break;
        case 2: { /* delete a span */
            size_t k = len - pos < 8 ? len - pos : 1 + (size_t)(rnd() % 8);
            memmove(dst + pos, dst + pos + k, len - pos - k);
            len -= k;
            break;
        }
        case 3: /* truncate */
            len = pos;
            break;
        case 4: { /* duplicate a span */
            size_t k = 1 + (size_t)(rnd() % 32);
            if (pos + k > len) k = len - pos;
            if (len + k <= cap) {
                memmove(dst + pos + k, dst + pos, len - pos);
                len += k;
            }
            break;
        }
        default: /* random byte */
            if (len) dst[pos] = (char)(rnd() & 0xFF);
            break;
        }
    }
    return len;
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    char *data;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = (char *)malloc(n > 0 ? (size_t)n : 1);
    if (data && n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n) { free(data); data = NULL; }
    fclose(f);
    *size = n > 0 ? (size_t)n : 0;
    return data;
}

#ifdef CTF_FUZZ_SELFTEST
/* Proves that the build reports memory errors: reads one byte past a heap block. */
static int selftest_overread(void) {
    char *p = (char *)malloc(8);
    volatile size_t past = 8;
    volatile char c;
    memset(p, 'x', 8);
    c = p[past];
    free(p);
    return c;
}
#endif

int main(int argc, char **argv) {
    int mutations = 50, nfiles = 0;
#ifdef CTF_FUZZ_SELFTEST
    if (selftest_overread() == 'y') puts("unreachable");
#endif
    if (ctf_number_init() != 0) { fprintf(stderr, "ctf_fuzz: no C locale\n"); return 2; }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mutations") == 0 && i + 1 < argc) { mutations = atoi(argv[++i]); continue; }
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            rng_state = strtoull(argv[++i], NULL, 10) * 2654435761ULL + 1;
            continue;
        }
        {
            size_t size, cap;
            char *data = read_file(argv[i], &size), *mut;
            if (data == NULL) { fprintf(stderr, "ctf_fuzz: cannot read %s\n", argv[i]); return 2; }
            current_name = argv[i];
            run_one(data, size);
            cap = size + 64;
            mut = (char *)malloc(cap);
            if (mut == NULL) return 2;
            for (int m = 0; m < mutations; m++) run_one(mut, mutate(mut, cap, data, size));
            free(mut);
            free(data);
            nfiles++;
        }
    }
    printf("ctf_fuzz: %d files, %llu scans/parses, no problem found\n", nfiles, runs);
    return 0;
}
#endif
