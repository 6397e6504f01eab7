/* Fuzz target of the token table (src/cntkio/_native/tok_core.h): an input is token text (the
 * legacy sentence readers' corpora), interned whole and then in two pieces split at a line end.
 *
 * Every token number must be below the table's size, the line counts must add up to the tokens,
 * new tokens must be numbered in order of first appearance, and interning the same text again
 * must add nothing and give the same numbers. A scan undone (tok_undo, as after a token that is
 * not UTF-8) must leave the table answering as before.
 *
 * Built with libFuzzer (clang -fsanitize=fuzzer,address,undefined) or with tests/fuzz/fuzz_driver.c
 * (gcc); see tests/fuzz/run_fuzz.py and `make asan-test`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOK_VEC_MIN 4
#define TOK_ARENA_MIN 8
#define TOK_SLOTS_MIN 4
#include "tok_core.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz_tok: check failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                       \
            abort();                                                                 \
        }                                                                            \
    } while (0)

typedef struct { tok_vec nums, counts, first; } scan_t;

static void scan_init(scan_t *s)
{
    s->nums = (tok_vec){NULL, 0, 0, sizeof(int32_t)};
    s->counts = (tok_vec){NULL, 0, 0, sizeof(int64_t)};
    s->first = (tok_vec){NULL, 0, 0, sizeof(int64_t)};
}

static void scan_free(scan_t *s)
{
    free(s->nums.v);
    free(s->counts.v);
    free(s->first.v);
}

static void check_scan(const tok_table *t, const scan_t *s, int64_t n0)
{
    int64_t sum = 0, next_new = n0;
    for (int64_t l = 0; l < s->counts.n; l++) {
        CHECK(((int64_t *)s->counts.v)[l] >= 0);
        sum += ((int64_t *)s->counts.v)[l];
    }
    CHECK(sum == s->nums.n);
    for (int64_t i = 0; i < s->nums.n; i++) {
        const int32_t k = ((int32_t *)s->nums.v)[i];
        CHECK(k >= 0 && k < t->n);
        if (k >= n0) {                 /* a new token: the next number, or one seen in this scan */
            CHECK(k <= next_new);
            if (k == next_new) next_new++;
        }
    }
    CHECK(next_new == t->n && s->first.n == t->n - n0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        init_classes();
        ready = 1;
    }
    tok_table t;
    CHECK(tok_init(&t) == 0);
    scan_t a, b;
    scan_init(&a);
    CHECK(tok_scan(&t, data, (int64_t)size, &a.nums, &a.counts, &a.first) == 0);
    check_scan(&t, &a, 0);
    const int64_t n1 = t.n, arena1 = t.arena_len;
    scan_init(&b);                               /* again: nothing new, the same numbers */
    CHECK(tok_scan(&t, data, (int64_t)size, &b.nums, &b.counts, &b.first) == 0);
    CHECK(t.n == n1 && b.nums.n == a.nums.n && b.first.n == 0);
    CHECK(b.nums.n == 0 || memcmp(a.nums.v, b.nums.v, (size_t)a.nums.n * 4) == 0);
    scan_free(&b);
    /* a second table fed the text in two pieces, the second scan undone */
    tok_table u;
    CHECK(tok_init(&u) == 0);
    const uint8_t *cut = size ? memchr(data, '\n', size / 2 + 1) : NULL;
    const int64_t half = cut ? (int64_t)(cut - data) + 1 : 0;
    scan_init(&b);
    CHECK(tok_scan(&u, data, half, &b.nums, &b.counts, &b.first) == 0);
    check_scan(&u, &b, 0);
    const int64_t n2 = u.n, arena2 = u.arena_len;
    scan_free(&b);
    scan_init(&b);
    CHECK(tok_scan(&u, data + half, (int64_t)size - half, &b.nums, &b.counts, &b.first) == 0);
    check_scan(&u, &b, n2);
    CHECK(u.n == n1 && u.arena_len == arena1);   /* the same distinct tokens as the whole text */
    scan_free(&b);
    CHECK(tok_undo(&u, n2, arena2) == 0 && u.n == n2);
    scan_init(&b);                               /* the first piece is all known again */
    CHECK(tok_scan(&u, data, half, &b.nums, &b.counts, &b.first) == 0);
    CHECK(u.n == n2 && b.first.n == 0);
    scan_free(&b);
    scan_free(&a);
    tok_free(&u);
    tok_free(&t);
    return 0;
}
