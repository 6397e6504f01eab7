/* cntkio._native._ctf: Python glue of the C CTF parser (ctf_core.h holds the parser itself). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ctf_number.h"

static PyObject *py_parse_number(PyObject *self, PyObject *args) {
    Py_buffer view;
    int leading_dot = 0, trailing_dot = 1;
    double v = 0.0;
    const char *endp;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*|pp", &view, &leading_dot, &trailing_dot)) return NULL;
    ctf_numfmt fmt = {leading_dot, trailing_dot};
    endp = ctf_parse_number((const char *)view.buf, (const char *)view.buf + view.len, &fmt, &v);
    if (endp == NULL || endp != (const char *)view.buf + view.len) {
        PyErr_Format(PyExc_ValueError, "not a CTF number: %R",
                     PyBytes_FromStringAndSize(view.buf, view.len));
        PyBuffer_Release(&view);
        return NULL;
    }
    PyBuffer_Release(&view);
    return PyFloat_FromDouble(v);
}

static PyMethodDef methods[] = {
    {"parse_number", py_parse_number, METH_VARARGS, "parse_number(token: bytes) -> float"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ctf", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ctf(void) {
    if (ctf_number_init() != 0) {
        PyErr_SetString(PyExc_OSError, "cannot create the C locale for number parsing");
        return NULL;
    }
    return PyModule_Create(&module);
}
