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
#include "tok_core.h"

typedef struct {
    PyObject_HEAD
    tok_table t;
    int busy;
} TokenTable;

static PyObject *vec_array(tok_vec *a, int typenum) {
    npy_intp dims[1] = {(npy_intp)a->n};
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
    tok_table *t = &self->t;
    tok_vec nums = {NULL, 0, 0, sizeof(int32_t)}, counts = {NULL, 0, 0, sizeof(int64_t)};
    tok_vec first_line = {NULL, 0, 0, sizeof(int64_t)};    /* per new word: its line */
    int64_t n0 = t->n, arena0 = t->arena_len;
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = tok_scan(t, view.buf, (int64_t)view.len, &nums, &counts, &first_line) < 0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *numbers = NULL, *lines = NULL, *words = NULL, *out = NULL;
    if (failed) {
        PyErr_NoMemory();
        goto undo;
    }
    words = PyList_New((Py_ssize_t)(t->n - n0));
    if (!words) goto undo;
    for (int64_t k = n0; k < t->n; k++) {
        PyObject *s = PyUnicode_DecodeUTF8(t->arena + t->w_off[k], t->w_len[k], "strict");
        if (!s) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "line %lld: a token that is not UTF-8 text",
                         (long long)((int64_t *)first_line.v)[k - n0]);
            goto undo;
        }
        PyList_SET_ITEM(words, (Py_ssize_t)(k - n0), s);
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
    if (tok_undo(t, n0, arena0) < 0) {
        self->busy = 0;
        return PyErr_NoMemory();
    }
    self->busy = 0;
    return NULL;
}

static PyObject *tt_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":TokenTable", kwlist)) return NULL;
    TokenTable *self = (TokenTable *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (tok_init(&self->t) < 0) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void tt_dealloc(TokenTable *self) {
    tok_free(&self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *tt_size(TokenTable *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong((long long)self->t.n);
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
