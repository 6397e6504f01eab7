/* Fuzz target of the UCIFastReader text core (src/cntkio/_native/uci_core.h): an input is UCI text.
 *
 * It is indexed into chunks (by records and by bytes, as ucifast.py asks), and every chunk is
 * parsed under several column maps (numbers to one or two outputs, a label column as a byte span,
 * skipped columns; float32 and float64) into outputs of exactly the chunk's record count. The
 * chunks must tile the records in order, each record flagged bad exactly when an error names it,
 * every span inside its line. Arguments at the edges (a range outside the buffer, line numbers
 * near 2^63, column maps naming missing outputs) must be refused by uci_check_args.
 *
 * Built with libFuzzer (clang -fsanitize=fuzzer,address,undefined) or with tests/fuzz/fuzz_driver.c
 * (gcc); see tests/fuzz/run_fuzz.py and `make asan-test`.
 */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uci_core.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz_uci: check failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                       \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* column maps: output << 16 | column, -1 skipped, -2 - k span k */
static const int32_t MAP0[] = {0, 1, 2};
static const int32_t MAP1[] = {-2, 0, 1, 2, 3};
static const int32_t MAP2[] = {0 << 16 | 0, -1, 1 << 16 | 0, 1 << 16 | 1, -3, -2};
static const int32_t MAP3[] = {0};
static const struct { const int32_t *m; int64_t ncols, nout, vcols[2], nspan; } MAPS[] = {
    {MAP0, 3, 1, {3, 0}, 0}, {MAP1, 5, 1, {4, 0}, 1}, {MAP2, 6, 2, {1, 2}, 2}, {MAP3, 1, 1, {1, 0}, 0},
};

static void parse_chunk(const char *buf, int64_t len, int64_t b, int64_t e, int64_t count, int64_t line, int m,
                        int is32)
{
    uci_outputs o;
    memset(&o, 0, sizeof o);
    o.colmap = MAPS[m].m;
    o.ncols = MAPS[m].ncols;
    o.nout = MAPS[m].nout;
    o.nrec = count;
    o.nspan = MAPS[m].nspan;
    o.is32 = is32;
    const size_t esz = is32 ? 4 : 8;
    for (int64_t k = 0; k < o.nout; k++) {
        o.vcols[k] = MAPS[m].vcols[k];
        o.vdata[k] = malloc((size_t)(count * o.vcols[k]) * esz + 1);
    }
    o.spans = malloc((size_t)(count * o.nspan * 2) * 8 + 1);
    o.bad = malloc((size_t)count + 1);
    CHECK(uci_check_args(&o, len, b, e, line) == NULL);
    uci_err *errs;
    int64_t nerr;
    const int64_t got = uci_parse(buf, b, e, line, &o, &errs, &nerr);
    CHECK(got == count);                  /* the index counted exactly the records the parse finds */
    int64_t nbad = 0;
    for (int64_t r = 0; r < got; r++)
        nbad += o.bad[r];
    CHECK(nbad == nerr);
    for (int64_t i = 0; i < nerr; i++) {
        CHECK(errs[i].record >= 0 && errs[i].record < got && o.bad[errs[i].record]);
        CHECK(errs[i].line >= line && errs[i].line <= line + (e - b));
        CHECK(errs[i].code == 1 ? errs[i].column < o.ncols : (errs[i].code == 2 && errs[i].column < o.ncols));
        CHECK(i == 0 || errs[i].record > errs[i - 1].record);
    }
    for (int64_t r = 0; r < got; r++)
        for (int64_t k = 0; !o.bad[r] && k < o.nspan; k++) {
            const int64_t *sp = o.spans + (r * o.nspan + k) * 2;
            CHECK(sp[0] >= b && sp[0] < sp[1] && sp[1] <= e);
            CHECK(memchr(buf + sp[0], '\n', (size_t)(sp[1] - sp[0])) == NULL);
        }
    /* the edges */
    CHECK(uci_check_args(&o, len, b, len + 1, line) != NULL);
    CHECK(uci_check_args(&o, len, -1, e, line) != NULL);
    CHECK(uci_check_args(&o, len, e + 1, e, line) != NULL);
    CHECK(uci_check_args(&o, len, b, e, INT64_MAX) != NULL);
    CHECK(uci_check_args(&o, len, b, e, INT64_MAX - len) != NULL);
    CHECK(uci_check_args(&o, len, b, e, -5) != NULL);
    o.vcols[0] = 0;
    CHECK(uci_check_args(&o, len, b, e, line) != NULL);
    free(errs);
    for (int64_t k = 0; k < o.nout; k++)
        free(o.vdata[k]);
    free(o.spans);
    free(o.bad);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        CHECK(ctf_number_init() == 0);
        ready = 1;
    }
    const char *buf = (const char *)data;
    const int64_t len = (int64_t)size;
    static const long long settings[][2] = {{0, 4 << 20}, {0, 16}, {1, 0}, {3, 0}};
    int64_t total_records = -1;
    for (size_t si = 0; si < sizeof settings / sizeof settings[0]; si++) {
        uci_i64vec v[4] = {{0}, {0}, {0}, {0}};
        CHECK(uci_index(buf, len, settings[si][0], settings[si][1], v) == 0);
        int64_t records = 0, prev_end = 0;
        for (int64_t c = 0; c < v[0].n; c++) {
            const int64_t b = v[0].v[c], e = v[1].v[c], n = v[2].v[c], line = v[3].v[c];
            CHECK(b >= prev_end && b < e && e <= len && n >= 1 && line >= 1);
            CHECK(settings[si][0] <= 0 || n <= settings[si][0]);
            prev_end = e;
            records += n;
            parse_chunk(buf, len, b, e, n, line, (int)((c + si) % 4), (int)((c ^ si) & 1));
        }
        CHECK(total_records < 0 || records == total_records);   /* every chunking finds the same records */
        total_records = records;
        for (int k = 0; k < 4; k++)
            free(v[k].v);
    }
    return 0;
}
