/* UCIFastReader text: one record per line, space- or tab-delimited columns, no names.
 *
 * Two entry points, both working on a buffer (mmap or bytes) and releasing the GIL:
 *
 *   index_records(buf, records_per_chunk, bytes_per_chunk)
 *       -> (begin int64[C], end int64[C], count int64[C], first_line int64[C])
 *       Chunks of whole lines: `records_per_chunk` records each when > 0, else about
 *       `bytes_per_chunk` bytes. Blank lines (only spaces, tabs, CR) are not records.
 *
 *   parse_records(buf, begin, end, first_line, colmap int32[K], values (tuple of float32/64
 *                 [N, V_i] arrays, one dtype), spans int64[N, L, 2], bad uint8[N])
 *       -> (records, list of (record, line, column, code))
 *       Parses the records of [begin, end): column j < K goes to values[colmap[j] >> 16][:,
 *       colmap[j] & 0xFFFF] when colmap[j] >= 0, its token's byte span to spans[:, -2 -
 *       colmap[j]] when colmap[j] <= -2, and is skipped (still checked to be a token) when -1.
 *       Columns past K are ignored.
 *       A record with an error is flagged in `bad` and reported: code 1 = too few columns
 *       (column = the number found), 2 = not a number (column = the 0-based column).
 *
 * Numbers go through the CTF parser's correctly rounded conversion (ctf_number.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include "ctf_number.h"

static inline int uci_is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* the end of the line starting at p (pointer to '\n' or end) */
static inline const char *uci_eol(const char *p, const char *end) {
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return q ? q : end;
}

static inline int uci_blank(const char *p, const char *e) {
    for (; p < e; p++)
        if (!uci_is_space(*p)) return 0;
    return 1;
}

typedef struct { int64_t *v; Py_ssize_t n, cap; } i64vec;

static int i64push(i64vec *a, int64_t x) {
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 64;
        int64_t *nv = realloc(a->v, (size_t)cap * sizeof(int64_t));
        if (!nv) return -1;
        a->v = nv; a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static PyObject *to_array(i64vec *a) {
    npy_intp dims[1] = {a->n};
    PyObject *arr = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (arr && a->n) memcpy(PyArray_DATA((PyArrayObject *)arr), a->v, (size_t)a->n * sizeof(int64_t));
    free(a->v);
    a->v = NULL;
    return arr;
}

static PyObject *py_index_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long per_chunk, bytes_per_chunk;
    if (!PyArg_ParseTuple(args, "y*LL", &view, &per_chunk, &bytes_per_chunk)) return NULL;
    i64vec b = {0}, e = {0}, c = {0}, l = {0};
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    const char *base = view.buf, *p = base, *end = base + view.len;
    int64_t line = 1, count = 0, chunk_begin = 0, chunk_line = 1;
    while (p < end && !oom) {
        const char *q = uci_eol(p, end);
        if (!uci_blank(p, q)) {
            if (count == 0) { chunk_begin = p - base; chunk_line = line; }
            count++;
        }
        p = q < end ? q + 1 : end;
        line++;
        if (count && ((per_chunk > 0 && count >= per_chunk) ||
                      (per_chunk <= 0 && (p - base) - chunk_begin >= bytes_per_chunk))) {
            oom |= i64push(&b, chunk_begin) | i64push(&e, p - base) | i64push(&c, count) |
                   i64push(&l, chunk_line);
            count = 0;
        }
    }
    if (count && !oom)
        oom |= i64push(&b, chunk_begin) | i64push(&e, end - base) | i64push(&c, count) |
               i64push(&l, chunk_line);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (oom) {
        free(b.v); free(e.v); free(c.v); free(l.v);
        return PyErr_NoMemory();
    }
    PyObject *ab = to_array(&b), *ae = to_array(&e), *ac = to_array(&c), *al = to_array(&l);
    if (!ab || !ae || !ac || !al) {
        Py_XDECREF(ab); Py_XDECREF(ae); Py_XDECREF(ac); Py_XDECREF(al);
        return NULL;
    }
    return Py_BuildValue("NNNN", ab, ae, ac, al);
}

typedef struct { int64_t record, line, column, code; } uci_err;

#define UCI_MAX_OUT 64

/* a short plain integer ("0", "255", "-3"): its value, without the general number parser */
static inline int uci_small_int(const char *s, const char *e, double *out) {
    int neg = 0;
    if (s < e && *s == '-') { neg = 1; s++; }
    if (e - s < 1 || e - s > 9) return 0;
    int64_t v = 0;
    for (; s < e; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9u) return 0;
        v = v * 10 + d;
    }
    *out = neg ? -(double)v : (double)v;
    return 1;
}

static PyObject *py_parse_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long begin, end_off, first_line;
    PyArrayObject *colmap_o, *spans_o, *bad_o;
    PyObject *values_t;
    if (!PyArg_ParseTuple(args, "y*LLLO!O!O!O!", &view, &begin, &end_off, &first_line,
                          &PyArray_Type, &colmap_o, &PyTuple_Type, &values_t,
                          &PyArray_Type, &spans_o, &PyArray_Type, &bad_o))
        return NULL;
    Py_ssize_t nout = PyTuple_GET_SIZE(values_t);
    npy_intp nrec = PyArray_NDIM(bad_o) == 1 ? PyArray_DIM(bad_o, 0) : -1;
    int ok = PyArray_TYPE(colmap_o) == NPY_INT32 && PyArray_NDIM(colmap_o) == 1 &&
             PyArray_IS_C_CONTIGUOUS(colmap_o) &&
             PyArray_TYPE(spans_o) == NPY_INT64 && PyArray_NDIM(spans_o) == 3 &&
             PyArray_IS_C_CONTIGUOUS(spans_o) && PyArray_DIM(spans_o, 2) == 2 &&
             PyArray_TYPE(bad_o) == NPY_UINT8 && PyArray_IS_C_CONTIGUOUS(bad_o) && nrec >= 0 &&
             PyArray_DIM(spans_o, 0) == nrec && nout <= UCI_MAX_OUT &&
             begin >= 0 && begin <= end_off && end_off <= (long long)view.len;
    char *vdata[UCI_MAX_OUT];
    npy_intp vcols[UCI_MAX_OUT];
    int is32 = 1;
    for (Py_ssize_t i = 0; ok && i < nout; i++) {
        PyObject *o = PyTuple_GET_ITEM(values_t, i);
        if (!PyArray_Check(o)) { ok = 0; break; }
        PyArrayObject *a = (PyArrayObject *)o;
        int t = PyArray_TYPE(a);
        if (i == 0) is32 = t == NPY_FLOAT32;
        ok = (t == NPY_FLOAT32 || t == NPY_FLOAT64) && (t == NPY_FLOAT32) == is32 &&
             PyArray_NDIM(a) == 2 && PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISWRITEABLE(a) &&
             PyArray_DIM(a, 0) == nrec;
        vdata[i] = PyArray_DATA(a);
        vcols[i] = PyArray_DIM(a, 1);
    }
    if (!ok) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "parse_records: bad argument types, shapes or range");
        return NULL;
    }
    const int32_t *colmap = PyArray_DATA(colmap_o);
    npy_intp ncols = PyArray_DIM(colmap_o, 0);
    npy_intp nspan = PyArray_DIM(spans_o, 1);
    for (npy_intp j = 0; j < ncols; j++) {
        int32_t m = colmap[j];
        if ((m >= 0 && ((m >> 16) >= nout || (m & 0xFFFF) >= vcols[m >> 16])) ||
            (m <= -2 && -2 - m >= nspan)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "parse_records: colmap names an output out of range");
            return NULL;
        }
    }
    int64_t *spans = PyArray_DATA(spans_o);
    uint8_t *bad = PyArray_DATA(bad_o);
    uci_err *errs = NULL;
    Py_ssize_t nerr = 0, caperr = 0;
    int oom = 0;
    npy_intp rec = 0;
    ctf_numfmt fmt = {1, 1};
    Py_BEGIN_ALLOW_THREADS
    const char *base = view.buf, *p = base + begin, *end = base + end_off;
    int64_t line = first_line;
    for (; p < end && rec < nrec; line++) {
        const char *q = uci_eol(p, end);
        if (uci_blank(p, q)) { p = q < end ? q + 1 : end; continue; }
        const char *t = p;
        npy_intp col = 0;
        int code = 0;
        while (col < ncols) {
            while (t < q && uci_is_space(*t)) t++;
            if (t >= q) { code = 1; break; }
            const char *s = t;
            while (t < q && !uci_is_space(*t)) t++;
            int32_t m = colmap[col];
            if (m >= 0) {
                double x;
                if (!uci_small_int(s, t, &x)) {
                    const char *ne = ctf_parse_number(s, t, &fmt, &x);
                    if (ne != t) { code = 2; break; }
                }
                int k = m >> 16;
                npy_intp c = m & 0xFFFF;
                if (is32) ((float *)vdata[k])[rec * vcols[k] + c] = (float)x;
                else ((double *)vdata[k])[rec * vcols[k] + c] = x;
            } else if (m <= -2) {
                int64_t *sp = spans + (rec * nspan + (-2 - m)) * 2;
                sp[0] = s - base; sp[1] = t - base;
            }
            col++;
        }
        bad[rec] = (uint8_t)(code != 0);
        if (code) {
            if (nerr == caperr) {
                Py_ssize_t cap = caperr ? caperr * 2 : 16;
                uci_err *ne = realloc(errs, (size_t)cap * sizeof(uci_err));
                if (!ne) { oom = 1; break; }
                errs = ne; caperr = cap;
            }
            errs[nerr].record = rec; errs[nerr].line = line;
            errs[nerr].column = col; errs[nerr].code = code;
            nerr++;
        }
        rec++;
        p = q < end ? q + 1 : end;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (oom) { free(errs); return PyErr_NoMemory(); }
    PyObject *list = PyList_New(nerr);
    if (!list) { free(errs); return NULL; }
    for (Py_ssize_t i = 0; i < nerr; i++) {
        PyObject *tup = Py_BuildValue("LLLL", (long long)errs[i].record, (long long)errs[i].line,
                                      (long long)errs[i].column, (long long)errs[i].code);
        if (!tup) { Py_DECREF(list); free(errs); return NULL; }
        PyList_SET_ITEM(list, i, tup);
    }
    free(errs);
    return Py_BuildValue("nN", (Py_ssize_t)rec, list);
}

static PyMethodDef methods[] = {
    {"index_records", py_index_records, METH_VARARGS,
     "index_records(buf, records_per_chunk, bytes_per_chunk) -> (begin, end, count, first_line)"},
    {"parse_records", py_parse_records, METH_VARARGS,
     "parse_records(buf, begin, end, first_line, colmap, values, spans, bad) -> (records, errors)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_uci",
                                    "UCIFastReader text indexing and parsing", -1, methods};

PyMODINIT_FUNC PyInit__uci(void) {
    import_array();
    if (ctf_number_init() != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot create the C locale for number parsing");
        return NULL;
    }
    return PyModule_Create(&moddef);
}
