/* HTK feature frames: the two copies the HTK deserializer makes, in C without the GIL.
 *
 * swap_copy(dst, dst_off, src, src_off, counts, swap)
 *     For each k: counts[k] float32 values from byte offset src_off[k] of the buffer src (a
 *     memory map of an HTK file) to element offset dst_off[k] of the float32 buffer dst,
 *     byte-swapped when swap is true (HTK files are big-endian). One call per chunk.
 *
 * pread_swap(dst, dst_off, fd, src_off, counts, swap)
 *     The same copies read from the open file fd (pread, byte offsets src_off[k]) straight into
 *     dst, then byte-swapped in place while still in cache: ranges that follow each other in
 *     both the file and dst (consecutive utterances of an archive) are read by one pread, in
 *     blocks of 1 MiB. No memory map, no page faults on file pages. A read that ends early (the
 *     file shrank) is an OSError naming the offset.
 *
 * gather_rows(out, srcs, which, rows, row_floats, width)
 *     Row i of out (width values, float32 or float64) is the width consecutive float32 values
 *     starting at element rows[i] * row_floats of srcs[which[i]]: a frame with its context is
 *     left + 1 + right consecutive frames of a padded chunk, so a randomized minibatch of
 *     context-expanded frames is written once, straight where it is delivered from.
 *
 * gather_u16(out, srcs, which, idx)
 *     out[i] (int64) = element idx[i] of the uint16 buffer srcs[which[i]]: frame mode's
 *     utterance of each selected frame, looked up in the per-frame maps of the window's chunks
 *     (one call a minibatch, across chunks; no binary search).
 *
 * mlf_tokens(data, sa, sb) -> (ntok, v0, v1, ok, la, lb, lh)
 *     The segment lines [sa[i], sb[i]) of an MLF file (stripped, so they start with a token):
 *     tokens are separated by spaces (a TAB is not a separator); ntok counts them; v0, v1 are
 *     the first two tokens as decimals and ok says both were 1-18 plain digits; [la, lb) is the
 *     third token and lh its 64-bit FNV-1a hash (zeros where ntok < 3). The NumPy scan in
 *     deserializers/htk/mlfscan.py is the reference.
 *
 * Every offset is checked against its buffer before anything is copied (ValueError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include "htk_core.h"

typedef struct {
    Py_buffer view;
    int held;
} Buf;

static int get_buf(PyObject *o, Buf *b, int writable, const char *what) {
    b->held = 0;
    if (PyObject_GetBuffer(o, &b->view, (writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Format(PyExc_TypeError, "htk: %s must be a C-contiguous%s buffer", what, writable ? " writable" : "");
        return -1;
    }
    b->held = 1;
    return 0;
}

static void drop(Buf *b) {
    if (b->held) {
        PyBuffer_Release(&b->view);
        b->held = 0;
    }
}

/* an int64 array given as a buffer: its data and length */
static int get_i64(PyObject *o, Buf *b, const char *what, Py_ssize_t *n) {
    if (get_buf(o, b, 0, what) < 0)
        return -1;
    if (b->view.len % 8) {
        drop(b);
        PyErr_Format(PyExc_ValueError, "htk: %s must hold int64 values", what);
        return -1;
    }
    *n = b->view.len / 8;
    return 0;
}

static PyObject *swap_copy(PyObject *self, PyObject *args) {
    PyObject *dst_o, *doff_o, *src_o, *soff_o, *cnt_o;
    int swap;
    if (!PyArg_ParseTuple(args, "OOOOOp", &dst_o, &doff_o, &src_o, &soff_o, &cnt_o, &swap))
        return NULL;
    Buf dst, doff, src, soff, cnt;
    Py_ssize_t n1, n2, n3;
    dst.held = doff.held = src.held = soff.held = cnt.held = 0;
    PyObject *result = NULL;
    if (get_buf(dst_o, &dst, 1, "dst") < 0 || get_buf(src_o, &src, 0, "src") < 0 ||
        get_i64(doff_o, &doff, "dst_off", &n1) < 0 || get_i64(soff_o, &soff, "src_off", &n2) < 0 ||
        get_i64(cnt_o, &cnt, "counts", &n3) < 0)
        goto done;
    if (n1 != n2 || n1 != n3) {
        PyErr_SetString(PyExc_ValueError, "htk.swap_copy: dst_off, src_off and counts differ in length");
        goto done;
    }
    const int64_t *d_off = doff.view.buf, *s_off = soff.view.buf, *count = cnt.view.buf;
    const int64_t bad = htk_check_copies(n1, d_off, s_off, count, dst.view.len / 4, src.view.len);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "htk.swap_copy: range %lld out of bounds", (long long)bad);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    htk_swap_copy((float *)dst.view.buf, (const char *)src.view.buf, n1, d_off, s_off, count, swap);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    drop(&dst); drop(&doff); drop(&src); drop(&soff); drop(&cnt);
    return result;
}

#define PREAD_BLOCK ((int64_t)1 << 20)

static PyObject *pread_swap(PyObject *self, PyObject *args) {
    PyObject *dst_o, *doff_o, *soff_o, *cnt_o;
    int fd, swap;
    if (!PyArg_ParseTuple(args, "OOiOOp", &dst_o, &doff_o, &fd, &soff_o, &cnt_o, &swap))
        return NULL;
    Buf dst, doff, soff, cnt;
    Py_ssize_t n1, n2, n3;
    dst.held = doff.held = soff.held = cnt.held = 0;
    PyObject *result = NULL;
    if (get_buf(dst_o, &dst, 1, "dst") < 0 || get_i64(doff_o, &doff, "dst_off", &n1) < 0 ||
        get_i64(soff_o, &soff, "src_off", &n2) < 0 || get_i64(cnt_o, &cnt, "counts", &n3) < 0)
        goto done;
    if (n1 != n2 || n1 != n3) {
        PyErr_SetString(PyExc_ValueError, "htk.pread_swap: dst_off, src_off and counts differ in length");
        goto done;
    }
    const int64_t *d_off = doff.view.buf, *s_off = soff.view.buf, *count = cnt.view.buf;
    const int64_t bad = htk_check_copies(n1, d_off, s_off, count, dst.view.len / 4, -1);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "htk.pread_swap: range %lld out of bounds", (long long)bad);
        goto done;
    }
    {
        char *d = dst.view.buf;
        int err = 0;
        int64_t bad_off = 0;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t k = 0;
        while (k < n1 && !err) {
            /* one run: ranges contiguous in the file and in dst */
            int64_t dpos = d_off[k] * 4, spos = s_off[k], len = count[k] * 4;
            Py_ssize_t e = k + 1;
            while (e < n1 && s_off[e] == spos + len && d_off[e] * 4 == dpos + len) {
                len += count[e] * 4;
                e++;
            }
            while (len > 0) {
                int64_t want = len < PREAD_BLOCK ? len : PREAD_BLOCK, got = 0;
                while (got < want) {
                    ssize_t r = pread(fd, d + dpos + got, (size_t)(want - got), (off_t)(spos + got));
                    if (r < 0 && errno == EINTR)
                        continue;
                    if (r <= 0) {
                        err = r < 0 ? errno : -1;
                        bad_off = spos + got;
                        break;
                    }
                    got += r;
                }
                if (err)
                    break;
                if (swap)
                    htk_swap_in_place((uint32_t *)(d + dpos), want / 4);
                dpos += want; spos += want; len -= want;
            }
            k = e;
        }
        Py_END_ALLOW_THREADS
        if (err > 0) {
            errno = err;
            PyErr_SetFromErrno(PyExc_OSError);
            goto done;
        }
        if (err < 0) {
            PyErr_Format(PyExc_OSError, "htk.pread_swap: the file ends before byte %lld (it shrank after it "
                         "was indexed?)", (long long)bad_off);
            goto done;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    drop(&dst); drop(&doff); drop(&soff); drop(&cnt);
    return result;
}

/* The source buffers of a gather (a sequence of arrays): their views, base pointers and lengths
 * in elements of ``itemsize`` bytes. srcs_close releases whatever srcs_open acquired, also after
 * a failure part-way. */
typedef struct {
    PyObject *seq;
    Py_ssize_t n;
    Buf *bufs;
    const void **base;
    int64_t *len;
} Srcs;

static int srcs_open(Srcs *s, PyObject *obj, Py_ssize_t itemsize, const char *what) {
    s->n = 0;
    s->bufs = NULL;
    s->base = NULL;
    s->len = NULL;
    s->seq = PySequence_Fast(obj, what);
    if (!s->seq)
        return -1;
    s->n = PySequence_Fast_GET_SIZE(s->seq);
    Py_ssize_t m = s->n ? s->n : 1;
    s->bufs = PyMem_Calloc(m, sizeof(Buf));
    s->base = PyMem_Calloc(m, sizeof(void *));
    s->len = PyMem_Calloc(m, sizeof(int64_t));
    if (!s->bufs || !s->base || !s->len) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < s->n; j++) {
        if (get_buf(PySequence_Fast_GET_ITEM(s->seq, j), &s->bufs[j], 0, "srcs[j]") < 0)
            return -1;
        s->base[j] = s->bufs[j].view.buf;
        s->len[j] = s->bufs[j].view.len / itemsize;
    }
    return 0;
}

static void srcs_close(Srcs *s) {
    for (Py_ssize_t j = 0; s->bufs && j < s->n; j++)
        drop(&s->bufs[j]);
    PyMem_Free(s->bufs);
    PyMem_Free(s->base);
    PyMem_Free(s->len);
    Py_XDECREF(s->seq);
}

static PyObject *gather_rows(PyObject *self, PyObject *args) {
    PyObject *out_o, *srcs_o, *which_o, *rows_o;
    Py_ssize_t row_floats, width;
    int out_double = 0;
    if (!PyArg_ParseTuple(args, "OOOOnn|p", &out_o, &srcs_o, &which_o, &rows_o, &row_floats, &width, &out_double))
        return NULL;
    Buf out, which, rows;
    out.held = which.held = rows.held = 0;
    Srcs S;
    PyObject *result = NULL;
    Py_ssize_t n, n2;
    if (srcs_open(&S, srcs_o, 4, "htk.gather_rows: srcs must be a sequence of arrays") < 0)
        goto done;
    if (get_buf(out_o, &out, 1, "out") < 0 || get_i64(which_o, &which, "which", &n) < 0 ||
        get_i64(rows_o, &rows, "rows", &n2) < 0)
        goto done;
    const int64_t *w = which.view.buf, *r = rows.view.buf;
    const int64_t bad = n != n2 ? -2 : htk_check_rows(n, w, r, row_floats, width, S.n, S.len, out.view.len,
                                                      out_double ? 8 : 4);
    if (bad == -2) {
        PyErr_SetString(PyExc_ValueError, "htk.gather_rows: out, which and rows do not agree");
        goto done;
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "htk.gather_rows: row %lld out of bounds", (long long)bad);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    htk_gather_rows((char *)out.view.buf, (const float *const *)S.base, n, w, r, row_floats, width, out_double);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    srcs_close(&S);
    drop(&out); drop(&which); drop(&rows);
    return result;
}

static PyObject *new_array(Py_ssize_t n, const char *fmt) {
    /* a fresh bytearray-backed buffer is enough: the caller views it with NumPy */
    (void)fmt;
    return PyByteArray_FromStringAndSize(NULL, n * 8);
}

static PyObject *mlf_tokens(PyObject *self, PyObject *args) {
    PyObject *data_o, *sa_o, *sb_o;
    if (!PyArg_ParseTuple(args, "OOO", &data_o, &sa_o, &sb_o))
        return NULL;
    Buf data, sa, sb;
    data.held = sa.held = sb.held = 0;
    Py_ssize_t n, n2;
    PyObject *res[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    if (get_buf(data_o, &data, 0, "data") < 0 || get_i64(sa_o, &sa, "sa", &n) < 0 || get_i64(sb_o, &sb, "sb", &n2) < 0)
        goto done;
    if (n != n2) {
        PyErr_SetString(PyExc_ValueError, "htk.mlf_tokens: sa and sb differ in length");
        goto done;
    }
    const int64_t *A = sa.view.buf, *B = sb.view.buf;
    const int64_t bad = htk_check_lines(n, A, B, data.view.len);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "htk.mlf_tokens: line %lld out of bounds", (long long)bad);
        goto done;
    }
    for (int k = 0; k < 7; k++) {
        res[k] = new_array(n, "q");
        if (!res[k])
            goto done;
    }
    {
        int64_t *o[6];
        for (int k = 0; k < 6; k++)
            o[k] = (int64_t *)PyByteArray_AS_STRING(res[k]);
        uint64_t *lh = (uint64_t *)PyByteArray_AS_STRING(res[6]);
        const unsigned char *d = data.view.buf;
        Py_BEGIN_ALLOW_THREADS
        htk_mlf_tokens(d, n, A, B, o[0], o[1], o[2], o[3], o[4], o[5], lh);
        Py_END_ALLOW_THREADS
    }
    result = PyTuple_New(7);
    if (result)
        for (int k = 0; k < 7; k++) {
            PyTuple_SET_ITEM(result, k, res[k]);
            res[k] = NULL;
        }
done:
    for (int k = 0; k < 7; k++)
        Py_XDECREF(res[k]);
    drop(&data); drop(&sa); drop(&sb);
    return result;
}

static PyObject *gather_u16(PyObject *self, PyObject *args) {
    PyObject *out_o, *srcs_o, *which_o, *idx_o;
    if (!PyArg_ParseTuple(args, "OOOO", &out_o, &srcs_o, &which_o, &idx_o))
        return NULL;
    Buf out, which, idx;
    out.held = which.held = idx.held = 0;
    Srcs S;
    PyObject *result = NULL;
    Py_ssize_t n, n2, n3;
    if (srcs_open(&S, srcs_o, 2, "htk.gather_u16: srcs must be a sequence of arrays") < 0)
        goto done;
    const uint16_t **base = (const uint16_t **)S.base;
    if (get_buf(out_o, &out, 1, "out") < 0 || get_i64(which_o, &which, "which", &n) < 0 ||
        get_i64(idx_o, &idx, "idx", &n2) < 0)
        goto done;
    n3 = out.view.len / 8;
    if (n != n2 || n3 != n || out.view.len % 8) {
        PyErr_SetString(PyExc_ValueError, "htk.gather_u16: out, which and idx do not agree");
        goto done;
    }
    const int64_t *w = which.view.buf, *r = idx.view.buf;
    const int64_t bad = htk_check_u16(n, w, r, S.n, S.len);
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "htk.gather_u16: index %lld out of bounds", (long long)bad);
        goto done;
    }
    {
        int64_t *o = out.view.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            o[i] = base[w[i]][r[i]];
        Py_END_ALLOW_THREADS
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    srcs_close(&S);
    drop(&out); drop(&which); drop(&idx);
    return result;
}

static PyMethodDef methods[] = {
    {"swap_copy", swap_copy, METH_VARARGS,
     "swap_copy(dst, dst_off, src, src_off, counts, swap): float32 ranges out of a buffer, byte-swapped."},
    {"pread_swap", pread_swap, METH_VARARGS,
     "pread_swap(dst, dst_off, fd, src_off, counts, swap): float32 ranges read from a file, byte-swapped."},
    {"gather_rows", gather_rows, METH_VARARGS,
     "gather_rows(out, srcs, which, rows, row_floats, width[, out_double]): rows of padded chunks."},
    {"gather_u16", gather_u16, METH_VARARGS,
     "gather_u16(out, srcs, which, idx): uint16 elements of several buffers, as int64."},
    {"mlf_tokens", mlf_tokens, METH_VARARGS,
     "mlf_tokens(data, sa, sb): tokens of MLF segment lines (count, two decimals, the label and its hash)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_htk", "HTK frame copies (see htk.c).", -1, methods};

PyMODINIT_FUNC PyInit__htk(void) { return PyModule_Create(&moduledef); }
