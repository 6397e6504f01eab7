/* A mutation driver for the native fuzz targets (tests/fuzz/fuzz_*.c), where libFuzzer is not at
 * hand (gcc builds: the CI smoke, `make asan-test`). A target defines LLVMFuzzerTestOneInput; this
 * file gives it a main():
 *
 *     fuzz_<format> [--runs N] [--seconds S] [--seed K] [--timeout T] [--crash-dir D] FILE|DIR...
 *
 * Every seed file is run as it is, then mutated inputs are run (a seed picked at random, 1 to 8
 * mutations of it: bit flips, bytes and 16/32/64-bit integers set to boundary values (0, 1, 2^31,
 * 2^32 - 1, 2^63, ...), added to or subtracted from, spans inserted, deleted, duplicated or
 * copied from another seed, truncation) until N inputs (seeds included) or S seconds, whichever
 * comes first (every million inputs a line says how many ran so far). Each input is copied into a
 * heap block of exactly its size, so a read past it is an
 * AddressSanitizer report. An input taking more than T seconds (default 5) of CPU time is a hang
 * (CPU time, not wall time: on a loaded machine a fair input may wait longer than that). On a
 * sanitizer report, an abort or a hang the input is written to D (default .) as
 * crash-<format>-<n> or hang-<format>-<n> and the driver exits non-zero. At the end it prints
 * "<format>: N inputs (M seeds) in S s, no problem found".
 *
 * The generator is deterministic for a seed K: a run can be repeated exactly.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define HAVE_DEATH_CALLBACK 1
#endif
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#ifndef FUZZ_NAME
#define FUZZ_NAME "fuzz"
#endif

typedef struct { uint8_t *data; size_t size; } seed_t;

static seed_t *seeds;
static size_t nseeds, capseeds;
static const uint8_t *current;           /* the input being run (for the crash file) */
static size_t current_size;
static const char *crash_dir = ".";
static unsigned long long inputs;

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void save(const char *kind)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%s-%llu", crash_dir, kind, FUZZ_NAME, inputs);
    FILE *f = fopen(path, "wb");
    if (f) {
        if (current_size)
            fwrite(current, 1, current_size, f);
        fclose(f);
        fprintf(stderr, "%s: input %llu (%zu bytes) written to %s\n", FUZZ_NAME, inputs, current_size, path);
    }
}

static void on_death(void) { save("crash"); }

static void on_alarm(int sig)
{
    (void)sig;
    fprintf(stderr, "%s: HANG: an input ran past the timeout (CPU time)\n", FUZZ_NAME);
    save("hang");
    _exit(3);
}

static void on_abort(int sig)
{
    (void)sig;
    save("crash");
    signal(SIGABRT, SIG_DFL);
    abort();
}

static void add_seed(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot read %s\n", FUZZ_NAME, path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(n > 0 ? (size_t)n : 1);
    if (!d || (n > 0 && fread(d, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "%s: cannot read %s\n", FUZZ_NAME, path);
        exit(2);
    }
    fclose(f);
    if (nseeds == capseeds) {
        capseeds = capseeds ? 2 * capseeds : 64;
        seeds = realloc(seeds, capseeds * sizeof *seeds);
    }
    seeds[nseeds].data = d;
    seeds[nseeds].size = n > 0 ? (size_t)n : 0;
    nseeds++;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void add_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: no such file %s\n", FUZZ_NAME, path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        add_seed(path);
        return;
    }
    DIR *dir = opendir(path);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    while (dir && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
        }
        names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
        sprintf(names[n++], "%s/%s", path, e->d_name);
    }
    if (dir)
        closedir(dir);
    qsort(names, n, sizeof *names, by_name);        /* a fixed order: runs repeat exactly */
    for (size_t i = 0; i < n; i++) {
        add_seed(names[i]);
        free(names[i]);
    }
    free(names);
}

static const uint64_t INTERESTING[] = {
    0, 1, 2, 3, 4, 7, 8, 12, 16, 31, 32, 63, 64, 127, 128, 255, 256, 1000, 1024, 4096, 32767, 32768, 65535,
    65536, 0x7FFFFFFFULL, 0x80000000ULL, 0xFFFFFFFEULL, 0xFFFFFFFFULL, 0x100000000ULL, 0x7FFFFFFFFFFFFFFFULL,
    0x8000000000000000ULL, 0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFEULL, 0x4000000000000000ULL,
};
#define NINTERESTING (sizeof INTERESTING / sizeof INTERESTING[0])

static size_t mutate(uint8_t *d, size_t len, size_t cap)
{
    int ops = 1 + (int)(rnd() % 8);
    for (int o = 0; o < ops; o++) {
        size_t pos = len ? (size_t)(rnd() % len) : 0;
        switch (rnd() % 12) {
        case 0:                                         /* flip a bit */
            if (len) d[pos] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1:                                         /* a random byte */
            if (len) d[pos] = (uint8_t)rnd();
            break;
        case 2: case 3: case 4: {                       /* an integer set to a boundary value */
            static const size_t widths[] = {1, 2, 4, 4, 8};
            size_t w = widths[rnd() % 5];
            if ((rnd() & 1) && len >= w)                /* aligned to its width, as file fields are */
                pos = pos / w * w;
            if (pos + w > len) break;
            uint64_t v = INTERESTING[rnd() % NINTERESTING];
            if (rnd() % 4 == 0) v = ~v + 1;             /* its negative */
            for (size_t k = 0; k < w; k++)
                d[pos + k] = (uint8_t)(v >> (8 * ((rnd() % 8 == 0) ? (w - 1 - k) : k)));
            break;
        }
        case 5: {                                       /* an integer plus or minus a little */
            if (len < 4) break;
            pos = pos / 4 * 4;
            if (pos + 4 > len) pos = len - 4;
            uint32_t v;
            memcpy(&v, d + pos, 4);
            v += (uint32_t)((int32_t)(rnd() % 33) - 16);
            memcpy(d + pos, &v, 4);
            break;
        }
        case 6: {                                       /* insert bytes */
            size_t k = 1 + (size_t)(rnd() % 16);
            if (len + k > cap) break;
            memmove(d + pos + k, d + pos, len - pos);
            for (size_t j = 0; j < k; j++) d[pos + j] = (rnd() & 1) ? (uint8_t)rnd() : d[(pos + k + j) % (len + k)];
            len += k;
            break;
        }
        case 7: {                                       /* delete a span */
            if (!len) break;
            size_t k = 1 + (size_t)(rnd() % 16);
            if (k > len - pos) k = len - pos;
            memmove(d + pos, d + pos + k, len - pos - k);
            len -= k;
            break;
        }
        case 8: {                                       /* duplicate a span */
            size_t k = 1 + (size_t)(rnd() % 64);
            if (pos + k > len) k = len - pos;
            if (len + k > cap) break;
            memmove(d + pos + k, d + pos, len - pos);
            len += k;
            break;
        }
        case 9: {                                       /* copy a span over another */
            if (len < 2) break;
            size_t from = (size_t)(rnd() % len), k = 1 + (size_t)(rnd() % 32);
            if (from + k > len) k = len - from;
            if (pos + k > len) k = len - pos;
            memmove(d + pos, d + from, k);
            break;
        }
        case 10: {                                      /* splice a span of another seed */
            const seed_t *s = &seeds[rnd() % nseeds];
            if (!s->size) break;
            size_t from = (size_t)(rnd() % s->size), k = 1 + (size_t)(rnd() % 64);
            if (from + k > s->size) k = s->size - from;
            if (pos + k > len) k = len - pos;
            memcpy(d + pos, s->data + from, k);
            break;
        }
        default:                                        /* truncate */
            if (rnd() % 4 == 0) len = pos;
            break;
        }
    }
    return len;
}

static void run(const uint8_t *data, size_t size)
{
    uint8_t *exact = malloc(size ? size : 1);           /* exactly its size: a read past it is reported */
    memcpy(exact, data, size);
    current = exact;
    current_size = size;
    inputs++;
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned long long max_runs = 0;
    double seconds = 0;
    int timeout = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) max_runs = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng = strtoull(argv[++i], NULL, 10) * 2654435761ULL + 1;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--crash-dir") && i + 1 < argc) crash_dir = argv[++i];
        else add_path(argv[i]);
    }
    if (!nseeds) {
        fprintf(stderr, "usage: %s [--runs N] [--seconds S] [--seed K] [--timeout T] [--crash-dir D] FILE|DIR...\n",
                argv[0]);
        return 2;
    }
#ifdef HAVE_DEATH_CALLBACK
    __sanitizer_set_death_callback(on_death);
#endif
    signal(SIGPROF, on_alarm);
    signal(SIGABRT, on_abort);
    struct itimerval limit = {{0, 0}, {timeout, 0}}, off = {{0, 0}, {0, 0}};
    size_t cap = 0;
    for (size_t i = 0; i < nseeds; i++)
        if (seeds[i].size > cap) cap = seeds[i].size;
    cap += 4096;
    uint8_t *buf = malloc(cap);
    const double t0 = now();
    for (size_t i = 0; i < nseeds; i++) {
        setitimer(ITIMER_PROF, &limit, NULL);
        run(seeds[i].data, seeds[i].size);
    }
    while ((!max_runs || inputs < max_runs) && (seconds <= 0 || now() - t0 < seconds) && (max_runs || seconds > 0)) {
        const seed_t *s = &seeds[rnd() % nseeds];
        memcpy(buf, s->data, s->size);
        size_t len = mutate(buf, s->size, cap);
        setitimer(ITIMER_PROF, &limit, NULL);
        run(buf, len);
        if (inputs % 1000000 == 0)                      /* progress: a run cut short still tells */
            fprintf(stderr, "%s: %llu inputs in %.0f s so far, no problem found\n", FUZZ_NAME, inputs, now() - t0);
    }
    setitimer(ITIMER_PROF, &off, NULL);
    printf("%s: %llu inputs (%zu seeds) in %.1f s, no problem found\n", FUZZ_NAME, inputs, nseeds, now() - t0);
    free(buf);
    return 0;
}
