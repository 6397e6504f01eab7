/* Whitespace-separated token text (the legacy sentence readers' corpora) to token numbers.
 *
 *   TokenTable()                      distinct tokens, numbered 0, 1, ... by first appearance
 *   table.intern(buf) -> (numbers int32[T], counts int64[L], new_words list[str])
 *       Splits `buf` (UTF-8 bytes) into lines and tokens exactly as Python's text mode with
 *       universal newlines and str.split() do: a line ends at "\n", "\r\n" or "\r" (a last line
 *       without one counts when it holds any byte); tokens are separated by the characters
 *       str.isspace() accepts (ASCII \t \v \f \x1c-\x1f and space; U+0085, U+00A0, U+1680,
 *       U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). numbers[t] is the table's number
 *       of token t (in file order), counts[l] the tokens of line l; new_words the tokens the table
 *       had not seen, in order of their numbers (they continue the table's numbering).
 *       A new token that is not valid UTF-8 raises ValueError("line N: ...") (1-based line of
 *       buf) and leaves the table as it was.
 *   table.size                        the number of distinct tokens
 *
 * No Python object is made per token: the scan hashes the bytes into the table's own open
 * addressing table (FNV-1a) with the GIL released; only new words are decoded, at the end.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

/* ASCII classes: 0 token byte, 1 space (str.isspace, not a line end), 2 '\n', 3 '\r' */
static unsigned char ascii_class[128];

static void init_classes(void) {
    const unsigned char spaces[] = {'\t', 0x0b, 0x0c, 0x1c, 0x1d, 0x1e, 0x1f, ' '};
    for (size_t i = 0; i < sizeof spaces; i++) ascii_class[spaces[i]] = 1;
    ascii_class['\n'] = 2;
    ascii_class['\r'] = 3;
}

/* the length of the non-ASCII whitespace character at p (UTF-8), or 0 */
static inline Py_ssize_t uni_space(const unsigned char *p, const unsigned char *end) {
    Py_ssize_t n = end - p;
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
    PyObject_HEAD
    int32_t *slots;          /* number + 1, 0 = empty; capacity a power of two */
    Py_ssize_t cap;
    char *arena;             /* the distinct tokens' bytes */
    Py_ssize_t arena_len, arena_cap;
    int64_t *w_off;          /* per number: offset in the arena, length, hash */
    int32_t *w_len;
    uint64_t *w_hash;
    Py_ssize_t n, n_cap;
    int busy;
} TokenTable;

typedef struct { void *v; Py_ssize_t n, cap, size; } vec;

static int vec_grow(vec *a) {
    Py_ssize_t cap = a->cap ? a->cap * 2 : 1 << 16;
    void *nv = realloc(a->v, (size_t)cap * (size_t)a->size);
    if (!nv) return -1;
    a->v = nv;
    a->cap = cap;
    return 0;
}

static inline int push_i32(vec *a, int32_t x) {
    if (a->n == a->cap && vec_grow(a) < 0) return -1;
    ((int32_t *)a->v)[a->n++] = x;
    return 0;
}

static inline int push_i64(vec *a, int64_t x) {
    if (a->n == a->cap && vec_grow(a) < 0) return -1;
    ((int64_t *)a->v)[a->n++] = x;
    return 0;
}

static int table_rehash(TokenTable *t, Py_ssize_t cap) {
    int32_t *slots = calloc((size_t)cap, sizeof(int32_t));
    if (!slots) return -1;
    for (Py_ssize_t k = 0; k < t->n; k++) {
        Py_ssize_t i = (Py_ssize_t)(t->w_hash[k] & (uint64_t)(cap - 1));
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (int32_t)(k + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* the number of the token p[0:len] (hash h), added when new; -1 on memory errors */
static int64_t table_lookup(TokenTable *t, const char *p, int32_t len, uint64_t h) {
    Py_ssize_t mask = t->cap - 1, i = (Py_ssize_t)(h & (uint64_t)mask);
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
        Py_ssize_t cap = t->n_cap ? t->n_cap * 2 : 1024;
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
        Py_ssize_t cap = t->arena_cap ? t->arena_cap : 1 << 16;
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

static PyObject *vec_array(vec *a, int typenum) {
    npy_intp dims[1] = {a->n};
    PyObject *arr = PyArray_SimpleNew(1, dims, typenum);
    if (arr && a->n) memcpy(PyArray_DATA((PyArrayObject *)arr), a->v, (size_t)a->n * (size_t)a->size);
    return arr;
}

static PyObject *tt_intern(TokenTable *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    if (self->busy) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "TokenTable.intern: the table is in use by another thread");
        return NULL;
    }
    self->busy = 1;
    const unsigned char *p = view.buf, *end = p + view.len, *line_start = p;
    vec nums = {NULL, 0, 0, sizeof(int32_t)}, counts = {NULL, 0, 0, sizeof(int64_t)};
    vec first_line = {NULL, 0, 0, sizeof(int64_t)};    /* per new word: its line */
    Py_ssize_t n0 = self->n, arena0 = self->arena_len;
    int64_t line_tokens = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            unsigned char k = ascii_class[c];
            if (k == 1) { p++; continue; }
            if (k >= 2) {
                if (push_i64(&counts, line_tokens) < 0) { failed = 1; break; }
                line_tokens = 0;
                p++;
                if (k == 3 && p < end && *p == '\n') p++;
                line_start = p;
                continue;
            }
        } else {
            Py_ssize_t w = uni_space(p, end);
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
        if (q - p > INT32_MAX) { failed = 1; break; }
        Py_ssize_t before = self->n;
        int64_t k = table_lookup(self, (const char *)p, (int32_t)(q - p), h);
        if (k < 0 || push_i32(&nums, (int32_t)k) < 0) { failed = 1; break; }
        if (self->n != before && push_i64(&first_line, (int64_t)counts.n + 1) < 0) { failed = 1; break; }
        line_tokens++;
        p = q;
    }
    if (!failed && line_start < end && push_i64(&counts, line_tokens) < 0) failed = 1;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *numbers = NULL, *lines = NULL, *words = NULL, *out = NULL;
    if (failed) {
        PyErr_NoMemory();
        goto undo;
    }
    words = PyList_New(self->n - n0);
    if (!words) goto undo;
    for (Py_ssize_t k = n0; k < self->n; k++) {
        PyObject *s = PyUnicode_DecodeUTF8(self->arena + self->w_off[k], self->w_len[k], "strict");
        if (!s) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "line %lld: a token that is not UTF-8 text",
                         (long long)((int64_t *)first_line.v)[k - n0]);
            goto undo;
        }
        PyList_SET_ITEM(words, k - n0, s);
    }
    numbers = vec_array(&nums, NPY_INT32);
    lines = numbers ? vec_array(&counts, NPY_INT64) : NULL;
    if (!lines) goto undo;
    out = PyTuple_Pack(3, numbers, lines, words);
    if (!out) goto undo;
    Py_DECREF(numbers);
    Py_DECREF(lines);
    Py_DECREF(words);
    free(nums.v);
    free(counts.v);
    free(first_line.v);
    self->busy = 0;
    return out;
undo:                                  /* the table as before the call */
    Py_XDECREF(numbers);
    Py_XDECREF(lines);
    Py_XDECREF(words);
    free(nums.v);
    free(counts.v);
    free(first_line.v);
    if (self->n != n0) {
        self->n = n0;
        self->arena_len = arena0;
        if (table_rehash(self, self->cap) < 0) {
            self->busy = 0;
            return PyErr_NoMemory();
        }
    }
    self->busy = 0;
    return NULL;
}

static PyObject *tt_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":TokenTable", kwlist)) return NULL;
    TokenTable *self = (TokenTable *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->cap = 1 << 12;
    self->slots = calloc((size_t)self->cap, sizeof(int32_t));
    if (!self->slots) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void tt_dealloc(TokenTable *self) {
    free(self->slots);
    free(self->arena);
    free(self->w_off);
    free(self->w_len);
    free(self->w_hash);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tt_size(TokenTable *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->n);
}

static PyMethodDef tt_methods[] = {
    {"intern", (PyCFunction)tt_intern, METH_VARARGS,
     "intern(buf) -> (numbers int32, tokens per line int64, new words): token numbers of UTF-8 text."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef tt_getset[] = {
    {"size", (getter)tt_size, NULL, "the number of distinct tokens", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TokenTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cntkio._native._tok.TokenTable",
    .tp_basicsize = sizeof(TokenTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Distinct whitespace-separated tokens, numbered by first appearance.",
    .tp_new = tt_new,
    .tp_dealloc = (destructor)tt_dealloc,
    .tp_methods = tt_methods,
    .tp_getset = tt_getset,
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_tok", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__tok(void) {
    import_array();
    init_classes();
    if (PyType_Ready(&TokenTableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    Py_INCREF(&TokenTableType);
    if (PyModule_AddObject(m, "TokenTable", (PyObject *)&TokenTableType) < 0) {
        Py_DECREF(&TokenTableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
