/* cntkio._native._ctf: the C CTF parser, Python side.
 *
 * The parser itself is in ctf_core.h (no Python API, so the sanitizer harness can use it alone).
 * This file converts arguments, releases the GIL around the whole scan/parse, and hands the
 * malloc'ed outputs to numpy without copying (each array owns its block through a capsule).
 * The functions mirror cntkio/deserializers/ctf/_reference.py exactly (same names, arguments,
 * results); that module's docstring is the specification. One is C only: parse_chunk_async, the
 * same parse on a pthread of its own (CNTKTextFormatDeserializer.begin_read_sequences calls
 * parse_chunk when a backend has no such function).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "ctf_core.h"

#if !defined(_WIN32)
#include <pthread.h>
#include <unistd.h>
#define CTF_HAVE_THREADS 1
#endif

/* ------------------------------------------------------------------------------------------ */
/* numpy arrays over malloc'ed blocks                                                          */

/* The capsule's context holds the block size; its name says how the block was allocated. */
static void capsule_free(PyObject *cap) {
    const char *name = PyCapsule_GetName(cap);
    void *ptr = PyCapsule_GetPointer(cap, name);
    size_t size = (size_t)(uintptr_t)PyCapsule_GetContext(cap);
    ctf_block_free(ptr, size, name != NULL && name[sizeof "cntkio.ctf." - 1] == 'm');
}

/* A 1-d array of `count` items of `typenum` that takes ownership of v->data (v is emptied). */
static PyObject *vec_to_array(ctf_vec *v, int typenum, npy_intp count) {
    PyObject *arr, *cap;
    if (v->data == NULL || count == 0) {
        ctf_vec_free(v);
        return PyArray_ZEROS(1, &count, typenum, 0);
    }
    arr = PyArray_SimpleNewFromData(1, &count, typenum, v->data);
    if (arr == NULL) return NULL;
    cap = PyCapsule_New(v->data, v->mapped ? "cntkio.ctf.mmap" : "cntkio.ctf.heap", capsule_free);
    if (cap == NULL) { Py_DECREF(arr); return NULL; }
    if (PyCapsule_SetContext(cap, (void *)(uintptr_t)v->cap) < 0 ||
        PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    v->data = NULL;
    v->len = v->cap = 0;
    v->mapped = 0;
    return arr;
}

/* ------------------------------------------------------------------------------------------ */
/* Argument helpers                                                                            */

typedef struct {
    ctf_alias *al;
    char *names; /* one block holding all names */
    int n;
} alias_table;

static void alias_table_free(alias_table *t) {
    free(t->al);
    free(t->names);
    t->al = NULL;
    t->names = NULL;
}

/* From a sequence of bytes (with_spec=0) or of (bytes, dim, sparse) tuples (with_spec=1). The
 * names are copied, so the table stays valid while the GIL is released. */
static int alias_table_from(PyObject *seq_obj, int with_spec, alias_table *t, const char *what) {
    PyObject *seq = PySequence_Fast(seq_obj, what);
    Py_ssize_t n, total = 0, pos = 0;
    memset(t, 0, sizeof *t);
    if (seq == NULL) return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n > 1000000) { PyErr_Format(PyExc_ValueError, "%s: too many streams", what); goto fail; }
    t->n = (int)n;
    t->al = (ctf_alias *)calloc((size_t)n + 1, sizeof *t->al);
    if (t->al == NULL) { PyErr_NoMemory(); goto fail; }
    /* first pass: sizes */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k), *name = item;
        Py_buffer b;
        if (with_spec) {
            if (!PyTuple_Check(item) && !PyList_Check(item)) {
                PyErr_Format(PyExc_TypeError, "%s[%zd]: expected (alias, dim, sparse)", what, k);
                goto fail;
            }
            if (PySequence_Size(item) != 3) {
                PyErr_Format(PyExc_ValueError, "%s[%zd]: expected (alias, dim, sparse)", what, k);
                goto fail;
            }
            name = PySequence_GetItem(item, 0);
            if (name == NULL) goto fail;
        } else {
            Py_INCREF(name);
        }
        if (PyObject_GetBuffer(name, &b, PyBUF_SIMPLE) < 0) { Py_DECREF(name); goto fail; }
        total += b.len;
        PyBuffer_Release(&b);
        Py_DECREF(name);
    }
    t->names = (char *)malloc((size_t)total + 1);
    if (t->names == NULL) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k), *name = item;
        Py_buffer b;
        if (with_spec) {
            PyObject *dim_o, *sp_o;
            long long dim;
            int sp;
            name = PySequence_GetItem(item, 0);
            dim_o = PySequence_GetItem(item, 1);
            sp_o = PySequence_GetItem(item, 2);
            if (!name || !dim_o || !sp_o) { Py_XDECREF(name); Py_XDECREF(dim_o); Py_XDECREF(sp_o); goto fail; }
            dim = PyLong_AsLongLong(dim_o);
            sp = PyObject_IsTrue(sp_o);
            Py_DECREF(dim_o);
            Py_DECREF(sp_o);
            if ((dim == -1 && PyErr_Occurred()) || sp < 0) { Py_DECREF(name); goto fail; }
            if (dim < 0) {
                PyErr_Format(PyExc_ValueError, "%s[%zd]: dim must be >= 0, got %lld", what, k, dim);
                Py_DECREF(name);
                goto fail;
            }
            if (sp && dim > 2147483648LL) { /* indices < dim are stored as int32 */
                PyErr_Format(PyExc_ValueError,
                             "%s[%zd]: a sparse dim above 2**31 does not fit int32 indices, got %lld",
                             what, k, dim);
                Py_DECREF(name);
                goto fail;
            }
            t->al[k].dim = (int64_t)dim;
            t->al[k].sparse = sp;
        } else {
            Py_INCREF(name);
        }
        if (PyObject_GetBuffer(name, &b, PyBUF_SIMPLE) < 0) { Py_DECREF(name); goto fail; }
        if (pos + b.len > total) { /* the object changed between the passes */
            PyBuffer_Release(&b);
            Py_DECREF(name);
            PyErr_Format(PyExc_RuntimeError, "%s changed while being read", what);
            goto fail;
        }
        memcpy(t->names + pos, b.buf, (size_t)b.len);
        t->al[k].name = t->names + pos;
        t->al[k].len = (size_t)b.len;
        pos += b.len;
        PyBuffer_Release(&b);
        Py_DECREF(name);
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    alias_table_free(t);
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* scan_index                                                                                  */

static PyObject *py_scan_index(PyObject *self, PyObject *args) {
    PyObject *buf_o, *aliases_o, *skip_o, *result = NULL;
    long long defining, chunk_size;
    int skip_ids, rc;
    Py_buffer view;
    alias_table at;
    ctf_index ix;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOLL:scan_index", &buf_o, &aliases_o, &skip_o, &defining,
                          &chunk_size))
        return NULL;
    skip_ids = PyObject_IsTrue(skip_o);
    if (skip_ids < 0) return NULL;
    if (alias_table_from(aliases_o, 0, &at, "aliases") < 0) return NULL;
    if (defining >= at.n || defining < -1) {
        PyErr_Format(PyExc_ValueError, "defining_stream %lld: expected -1 or a stream index below %d",
                     defining, at.n);
        alias_table_free(&at);
        return NULL;
    }
    if (chunk_size <= 0) {
        PyErr_Format(PyExc_ValueError, "chunk_size must be > 0, got %lld", chunk_size);
        alias_table_free(&at);
        return NULL;
    }
    if (PyObject_GetBuffer(buf_o, &view, PyBUF_SIMPLE) < 0) { alias_table_free(&at); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    rc = ctf_scan_index((const char *)view.buf, (size_t)view.len, at.al, at.n, skip_ids,
                        (int)defining, (int64_t)chunk_size, &ix);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    alias_table_free(&at);
    if (rc) return PyErr_NoMemory();
    {
        npy_intp n = (npy_intp)CTF_VEC_COUNT(ix.keys, uint64_t);
        PyObject *keys = vec_to_array(&ix.keys, NPY_UINT64, n);
        PyObject *starts = vec_to_array(&ix.starts, NPY_INT64, n + 1);
        PyObject *fl = vec_to_array(&ix.first_lines, NPY_INT64, n);
        PyObject *lens = vec_to_array(&ix.lengths, NPY_INT64, n);
        PyObject *cs = vec_to_array(&ix.chunk_starts, NPY_INT64,
                                    (npy_intp)CTF_VEC_COUNT(ix.chunk_starts, int64_t));
        if (keys && starts && fl && lens && cs)
            result = Py_BuildValue("(iNNNNNN)", ix.encoding, PyBool_FromLong(ix.ids_mode), keys,
                                   starts, fl, lens, cs);
        else {
            Py_XDECREF(keys); Py_XDECREF(starts); Py_XDECREF(fl); Py_XDECREF(lens); Py_XDECREF(cs);
        }
    }
    ctf_index_free(&ix);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* parse_chunk                                                                                 */

static PyObject *as_int64_array(PyObject *o, const char *what) {
    PyObject *a = PyArray_FROMANY(o, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (a == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(PyExc_TypeError, "%s: expected a 1-d sequence of int64", what);
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
    }
    return a;
}

/* The converted arguments of a parse: valid (and their Python objects held) until released. */
typedef struct {
    PyObject *starts_a, *fl_a, *ends_a;
    Py_buffer view;
    int have_view;
    alias_table at;
    long long base, error_limit, warning_limit;
    int ids_mode, dbl;
    npy_intp n;
    const int64_t *starts, *first_lines, *ends;
} parse_args;

static void parse_args_release(parse_args *pa) {
    if (pa->have_view) PyBuffer_Release(&pa->view);
    pa->have_view = 0;
    alias_table_free(&pa->at);
    Py_CLEAR(pa->starts_a);
    Py_CLEAR(pa->fl_a);
    Py_CLEAR(pa->ends_a);
}

/* Convert and check parse_chunk's arguments into *pa (zeroed first); -1 with an exception set
 * (and nothing held) on failure. */
static int parse_args_from(PyObject *args, const char *fmt, parse_args *pa) {
    PyObject *buf_o, *starts_o, *fl_o, *ids_o, *streams_o, *dbl_o, *ends_o = Py_None;
    memset(pa, 0, sizeof *pa);
    if (!PyArg_ParseTuple(args, fmt, &buf_o, &pa->base, &starts_o, &fl_o, &ids_o, &streams_o, &dbl_o,
                          &pa->error_limit, &pa->warning_limit, &ends_o))
        return -1;
    pa->ids_mode = PyObject_IsTrue(ids_o);
    pa->dbl = PyObject_IsTrue(dbl_o);
    if (pa->ids_mode < 0 || pa->dbl < 0) return -1;
    if (pa->warning_limit < 0) pa->warning_limit = 0;
    pa->starts_a = as_int64_array(starts_o, "starts");
    if (pa->starts_a == NULL) goto fail;
    pa->fl_a = as_int64_array(fl_o, "first_lines");
    if (pa->fl_a == NULL) goto fail;
    pa->n = PyArray_SIZE((PyArrayObject *)pa->starts_a) - 1;
    if (ends_o != Py_None) { /* sequence i is [starts[i], ends[i]): n = len(starts) */
        pa->ends_a = as_int64_array(ends_o, "ends");
        if (pa->ends_a == NULL) goto fail;
        pa->n += 1;
        if (PyArray_SIZE((PyArrayObject *)pa->ends_a) != pa->n) {
            PyErr_SetString(PyExc_ValueError, "ends must hold one offset per start");
            goto fail;
        }
        pa->ends = (const int64_t *)PyArray_DATA((PyArrayObject *)pa->ends_a);
    }
    if (pa->n < 0) {
        PyErr_SetString(PyExc_ValueError, "starts must hold n + 1 offsets (at least one)");
        goto fail;
    }
    if (PyArray_SIZE((PyArrayObject *)pa->fl_a) < pa->n) {
        PyErr_Format(PyExc_ValueError, "first_lines has %zd entries, expected %zd",
                     (Py_ssize_t)PyArray_SIZE((PyArrayObject *)pa->fl_a), (Py_ssize_t)pa->n);
        goto fail;
    }
    pa->starts = (const int64_t *)PyArray_DATA((PyArrayObject *)pa->starts_a);
    pa->first_lines = (const int64_t *)PyArray_DATA((PyArrayObject *)pa->fl_a);
    if (alias_table_from(streams_o, 1, &pa->at, "streams") < 0) goto fail;
    if (PyObject_GetBuffer(buf_o, &pa->view, PyBUF_SIMPLE) < 0) goto fail;
    pa->have_view = 1;
    /* offsets from a base >= 0 (no difference below can wrap), line numbers that stay far from
       2^63 however many lines the buffer holds */
    if (pa->base < 0 || pa->base > INT64_MAX - (int64_t)pa->view.len) {
        PyErr_Format(PyExc_ValueError, "base %lld: expected a file offset >= 0", pa->base);
        goto fail;
    }
    for (npy_intp i = 0; i < pa->n; i++) {
        if (pa->first_lines[i] < 0 || pa->first_lines[i] > ((int64_t)1 << 62) - (int64_t)pa->view.len) {
            PyErr_Format(PyExc_ValueError, "first_lines[%zd] = %lld is not a line number", (Py_ssize_t)i,
                         (long long)pa->first_lines[i]);
            goto fail;
        }
    }
    for (npy_intp i = 0; pa->ends != NULL && i < pa->n; i++) {
        if (pa->starts[i] < pa->base || pa->starts[i] > pa->ends[i] ||
            pa->ends[i] - pa->base > (int64_t)pa->view.len) {
            PyErr_Format(PyExc_ValueError,
                         "sequence %zd = [%lld, %lld) is outside the buffer [%lld, %lld] or reversed",
                         (Py_ssize_t)i, (long long)pa->starts[i], (long long)pa->ends[i], pa->base,
                         pa->base + (long long)pa->view.len);
            goto fail;
        }
    }
    for (npy_intp i = 0; pa->ends == NULL && i <= pa->n; i++) {
        if (pa->starts[i] < pa->base || pa->starts[i] - pa->base > (int64_t)pa->view.len ||
            (i > 0 && pa->starts[i] < pa->starts[i - 1])) {
            PyErr_Format(PyExc_ValueError,
                         "starts[%zd] = %lld is outside the buffer [%lld, %lld] or not ascending",
                         (Py_ssize_t)i, (long long)pa->starts[i], pa->base,
                         pa->base + (long long)pa->view.len);
            goto fail;
        }
    }
    return 0;
fail:
    parse_args_release(pa);
    return -1;
}

/* The parse itself: no Python API, so it runs without the GIL, on any thread. */
static int parse_args_run(const parse_args *pa, ctf_result *r) {
    return ctf_parse_chunk((const char *)pa->view.buf, (size_t)pa->view.len, (int64_t)pa->base,
                           pa->starts, pa->ends, pa->first_lines, (int64_t)pa->n, pa->ids_mode,
                           pa->at.al, pa->at.n, pa->dbl, (int64_t)pa->error_limit,
                           (int64_t)pa->warning_limit, r);
}

/* parse_chunk's return value from a finished parse (takes the result's blocks; frees the rest). */
static PyObject *parse_result(const parse_args *pa, int rc, ctf_result *r) {
    PyObject *outputs = NULL, *issues = NULL, *result = NULL;
    const npy_intp n = pa->n;
    if (rc) return PyErr_NoMemory();
    outputs = PyList_New(pa->at.n);
    if (outputs == NULL) goto fail;
    for (int k = 0; k < pa->at.n; k++) {
        ctf_stream_out *so = &r->out[k];
        const int vt = pa->dbl ? NPY_FLOAT64 : NPY_FLOAT32;
        const size_t esz = pa->dbl ? sizeof(double) : sizeof(float);
        PyObject *offsets = vec_to_array(&so->offsets, NPY_INT64, n + 1), *t;
        if (offsets == NULL) goto fail;
        if (pa->at.al[k].sparse) {
            PyObject *indptr = vec_to_array(&so->indptr, NPY_INT64,
                                            (npy_intp)CTF_VEC_COUNT(so->indptr, int64_t));
            PyObject *indices = vec_to_array(&so->indices, NPY_INT32,
                                             (npy_intp)CTF_VEC_COUNT(so->indices, int32_t));
            PyObject *data = vec_to_array(&so->values, vt, (npy_intp)(so->values.len / esz));
            if (!indptr || !indices || !data) {
                Py_XDECREF(indptr); Py_XDECREF(indices); Py_XDECREF(data); Py_DECREF(offsets);
                goto fail;
            }
            t = PyTuple_Pack(4, indptr, indices, data, offsets);
            Py_DECREF(indptr); Py_DECREF(indices); Py_DECREF(data);
        } else {
            PyObject *values = vec_to_array(&so->values, vt, (npy_intp)(so->values.len / esz));
            if (!values) { Py_DECREF(offsets); goto fail; }
            t = PyTuple_Pack(2, values, offsets);
            Py_DECREF(values);
        }
        Py_DECREF(offsets);
        if (t == NULL) goto fail;
        PyList_SET_ITEM(outputs, k, t);
    }
    {
        Py_ssize_t ni = (Py_ssize_t)(r->issues.len / sizeof(ctf_issue));
        const ctf_issue *is = (const ctf_issue *)(const void *)r->issues.data;
        issues = PyList_New(ni);
        if (issues == NULL) goto fail;
        for (Py_ssize_t i = 0; i < ni; i++) {
            PyObject *t = Py_BuildValue("(iiLLLLL)", (int)is[i].code, (int)is[i].stream,
                                        (long long)is[i].line, (long long)is[i].column,
                                        (long long)is[i].offset, (long long)is[i].length,
                                        (long long)is[i].detail);
            if (t == NULL) goto fail;
            PyList_SET_ITEM(issues, i, t);
        }
    }
    result = Py_BuildValue("(OOLN)", outputs, issues, (long long)r->nwarnings,
                           PyBool_FromLong(r->aborted));
fail:
    Py_XDECREF(outputs);
    Py_XDECREF(issues);
    ctf_result_free(r);
    return result;
}

static PyObject *py_parse_chunk(PyObject *self, PyObject *args) {
    parse_args pa;
    ctf_result r;
    int rc;
    PyObject *result;
    (void)self;
    if (parse_args_from(args, "OLOOOOOLL|O:parse_chunk", &pa) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = parse_args_run(&pa, &r);
    Py_END_ALLOW_THREADS
    result = parse_result(&pa, rc, &r);
    parse_args_release(&pa);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* parse_chunk_async: the same parse on a thread of its own (no GIL, no Python)               */

typedef struct {
    PyObject_HEAD
    parse_args pa;
    ctf_result r;
    int rc;
    int state; /* 0: running on its thread, 1: parsed (joined), 2: result taken, 3: orphaned */
#ifdef CTF_HAVE_THREADS
    pthread_t thread;
    pid_t pid; /* the process that started the thread (a forked child has no such thread) */
#endif
} ParseJob;

#ifdef CTF_HAVE_THREADS
static void *parse_job_main(void *arg) {
    ParseJob *job = (ParseJob *)arg;
    job->rc = parse_args_run(&job->pa, &job->r);
    return NULL;
}
#endif

/* Wait for the job's thread (without the GIL). In a process forked while the job ran, the thread
 * does not exist: the job is orphaned (its half-written result is left alone, never freed). */
static void parse_job_join(ParseJob *job) {
#ifdef CTF_HAVE_THREADS
    if (job->state == 0 && getpid() != job->pid) {
        job->state = 3;
        return;
    }
    if (job->state == 0) {
        Py_BEGIN_ALLOW_THREADS
        pthread_join(job->thread, NULL);
        Py_END_ALLOW_THREADS
        job->state = 1;
    }
#endif
}

static void parse_job_dealloc(ParseJob *job) {
    parse_job_join(job);
    if (job->state == 1) ctf_result_free(&job->r);
    parse_args_release(&job->pa);
    Py_TYPE(job)->tp_free((PyObject *)job);
}

static PyObject *parse_job_result(ParseJob *job, PyObject *unused) {
    PyObject *result;
    (void)unused;
    if (job->state == 2) {
        PyErr_SetString(PyExc_RuntimeError, "parse_chunk_async: the result was already taken");
        return NULL;
    }
    parse_job_join(job);
    if (job->state == 3) {
        PyErr_SetString(PyExc_RuntimeError, "parse_chunk_async: the parse was started by the process "
                                            "this one was forked from; its thread is not here");
        return NULL;
    }
    job->state = 2;
    result = parse_result(&job->pa, job->rc, &job->r);
    parse_args_release(&job->pa); /* the buffer and arrays are no longer read */
    return result;
}

static PyMethodDef parse_job_methods[] = {
    {"result", (PyCFunction)parse_job_result, METH_NOARGS,
     "result()\n--\n\nWait for the parse (without the GIL) and return what parse_chunk returns. "
     "Once only."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ParseJobType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cntkio._native._ctf.ParseJob",
    .tp_basicsize = sizeof(ParseJob),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A parse_chunk running on a thread of its own (see parse_chunk_async).",
    .tp_dealloc = (destructor)parse_job_dealloc,
    .tp_methods = parse_job_methods,
};

static PyObject *py_parse_chunk_async(PyObject *self, PyObject *args) {
    ParseJob *job;
    (void)self;
    job = PyObject_New(ParseJob, &ParseJobType);
    if (job == NULL) return NULL;
    job->state = 1;
    job->rc = 0;
    memset(&job->r, 0, sizeof job->r);
    if (parse_args_from(args, "OLOOOOOLL|O:parse_chunk_async", &job->pa) < 0) {
        memset(&job->pa, 0, sizeof job->pa);
        job->state = 2;
        Py_DECREF(job);
        return NULL;
    }
#ifdef CTF_HAVE_THREADS
    job->state = 0;
    job->pid = getpid();
    if (pthread_create(&job->thread, NULL, parse_job_main, job) == 0) return (PyObject *)job;
    job->state = 1; /* no thread to be had: parse here */
#endif
    Py_BEGIN_ALLOW_THREADS
    job->rc = parse_args_run(&job->pa, &job->r);
    Py_END_ALLOW_THREADS
    return (PyObject *)job;
}

/* ------------------------------------------------------------------------------------------ */

static PyObject *py_parse_number(PyObject *self, PyObject *args) {
    Py_buffer view;
    double v = 0.0;
    const char *endp;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*:parse_number", &view)) return NULL;
    endp = ctf_parse_number((const char *)view.buf, (const char *)view.buf + view.len, &ctf_fmt, &v);
    if (endp == NULL || endp != (const char *)view.buf + view.len) {
        PyObject *tok = PyBytes_FromStringAndSize(view.buf, view.len);
        PyBuffer_Release(&view);
        if (tok) {
            PyErr_Format(PyExc_ValueError, "not a CTF number: %R", tok);
            Py_DECREF(tok);
        }
        return NULL;
    }
    PyBuffer_Release(&view);
    return PyFloat_FromDouble(v);
}

/* The kernel of the real-valued runs of dense samples (ctf_core.h, ctf_float_run), for tests:
 * "sse41" or "sse2" in use now; an argument selects one ("sse41" only where the CPU has it;
 * "auto": what the CPU allows). Nothing else changes with it: both give the same results. */
static PyObject *py_float_kernel(PyObject *self, PyObject *args) {
    const char *want = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "|s:_float_kernel", &want)) return NULL;
#ifdef CTF_HAVE_FLOAT16_SSE41
    if (want != NULL) {
        int s;
        if (strcmp(want, "sse2") == 0) s = 0;
        else if (strcmp(want, "sse41") == 0 || strcmp(want, "auto") == 0) {
            __atomic_store_n(&ctf_sse41_state, -1, __ATOMIC_RELAXED);
            s = ctf_use_sse41();
            if (!s && strcmp(want, "sse41") == 0) {
                PyErr_SetString(PyExc_ValueError, "_float_kernel: this CPU has no SSE4.1");
                return NULL;
            }
        } else {
            PyErr_Format(PyExc_ValueError, "_float_kernel: expected 'sse2', 'sse41' or 'auto', found %R",
                         PyTuple_GET_ITEM(args, 0));
            return NULL;
        }
        __atomic_store_n(&ctf_sse41_state, s, __ATOMIC_RELAXED);
    }
    return PyUnicode_FromString(ctf_use_sse41() ? "sse41" : "sse2");
#else
#ifdef CTF_HAVE_FLOAT16
    const char *only = "sse2";
#else
    const char *only = "portable";
#endif
    if (want != NULL && strcmp(want, only) != 0 && strcmp(want, "auto") != 0) {
        PyErr_Format(PyExc_ValueError, "_float_kernel: only the %s kernel is built, found %R", only,
                     PyTuple_GET_ITEM(args, 0));
        return NULL;
    }
    return PyUnicode_FromString(only);
#endif
}

static PyMethodDef methods[] = {
    {"_float_kernel", py_float_kernel, METH_VARARGS,
     "_float_kernel(which=None)\n--\n\n"
     "The kernel reading real-valued dense samples: 'sse41', 'sse2' (or 'portable' where neither "
     "is built); 'sse2', 'sse41' or 'auto' selects one (for tests; the results are the same)."},
    {"scan_index", py_scan_index, METH_VARARGS,
     "scan_index(buf, aliases, skip_ids, defining_stream, chunk_size)\n--\n\n"
     "Index a whole CTF file: (encoding, ids_mode, keys, starts, first_lines, lengths, "
     "chunk_starts). Same contract as cntkio.deserializers.ctf._reference.scan_index."},
    {"parse_chunk", py_parse_chunk, METH_VARARGS,
     "parse_chunk(buf, base, starts, first_lines, ids_mode, streams, double, error_limit, "
     "warning_limit, ends=None)\n--\n\n"
     "Parse sequences into columnar arrays: (outputs, issues, num_warnings, aborted). Same "
     "contract as cntkio.deserializers.ctf._reference.parse_chunk; the GIL is released while "
     "parsing."},
    {"parse_chunk_async", py_parse_chunk_async, METH_VARARGS,
     "parse_chunk_async(buf, base, starts, first_lines, ids_mode, streams, double, error_limit, "
     "warning_limit, ends=None)\n--\n\n"
     "Start parse_chunk on a thread of its own (it takes neither the GIL nor Python objects) and "
     "return a job whose result() waits for it and returns what parse_chunk returns. The "
     "arguments are checked here; the buffer stays exported until the result is taken."},
    {"parse_number", py_parse_number, METH_VARARGS,
     "parse_number(token)\n--\n\n"
     "The float64 value of one CTF number token (correctly rounded, as float()); ValueError "
     "when the token is not a CTF number."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctf",
    "The C CTF parser: scan_index and parse_chunk (see cntkio.deserializers.ctf._reference).",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ctf(void) {
    PyObject *m;
    import_array();
    if (PyType_Ready(&ParseJobType) < 0) return NULL;
    if (ctf_number_init() != 0) {
        PyErr_SetString(PyExc_OSError, "cannot create the C locale for number parsing");
        return NULL;
    }
    m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ParseJobType);
    if (PyModule_AddObject(m, "ParseJob", (PyObject *)&ParseJobType) < 0) {
        Py_DECREF(&ParseJobType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
