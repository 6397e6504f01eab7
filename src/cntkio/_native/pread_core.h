/* Byte ranges of a file read into one buffer with pread, in plain C (no Python): the CTF reader's
 * random access reads each selected sequence's text this way (ctf.c, pread_gather), never through
 * a memory map, so a file cut short meanwhile is an error, not SIGBUS. Checked by
 * tests/native/test_native_bounds.py and fuzzed with the HTK copies (tests/fuzz/fuzz_htk.c).
 */
#ifndef CNTKIO_PREAD_CORE_H
#define CNTKIO_PREAD_CORE_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* Ranges [starts[i], ends[i]) of a file, laid one after another into a buffer of out_len bytes:
 * -1 when each is a range of offsets >= 0 and together they fill out exactly, else the first that
 * does not fit (n when they fill less). No sum can overflow: each length is checked against what
 * is left of out. */
static int64_t pread_check(int64_t n, const int64_t *starts, const int64_t *ends, int64_t out_len)
{
    int64_t left = out_len;
    for (int64_t i = 0; i < n; i++) {
        if (starts[i] < 0 || ends[i] < starts[i] || ends[i] - starts[i] > left)
            return i;
        left -= ends[i] - starts[i];
    }
    return left == 0 ? -1 : n;
}

/* Read the ranges checked by pread_check into out, one pread per run of ranges that follow each
 * other in the file. 0, an errno value, or -1 when the file ends early (*bad_off: where). */
static int pread_gather(int fd, int64_t n, const int64_t *starts, const int64_t *ends, char *out, int64_t *bad_off)
{
    int64_t at = 0;
    for (int64_t i = 0; i < n;) {
        int64_t pos = starts[i], len = ends[i] - starts[i], j = i + 1;
        while (j < n && starts[j] == pos + len) {
            len += ends[j] - starts[j];
            j++;
        }
        int64_t got = 0;
        while (got < len) {
            const int64_t want = len - got < ((int64_t)1 << 30) ? len - got : ((int64_t)1 << 30);
            ssize_t r = pread(fd, out + at + got, (size_t)want, (off_t)(pos + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                *bad_off = pos + got;
                return r < 0 ? errno : -1;
            }
            got += r;
        }
        at += len;
        i = j;
    }
    return 0;
}

#endif /* CNTKIO_PREAD_CORE_H */
