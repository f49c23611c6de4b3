/* A pointwise function's __call__ in C; included by launch.c after hit.h.
 *
 * call_method(fallback, switch) makes the method descriptor runtime/hit_path.py installs as
 * PointwiseDynamicFunction.__call__ once hit() is configured, so a cached call runs no Python
 * frame. A call whose keywords are all outputs (out0=...) goes to serve() with the function's
 * `_c_tables` (a CallTables, below) and counts as a hit in its PlanCache; any other call, and a
 * miss, goes on as fallback(function, args, kwargs, key), `key` the signature serve() built or
 * None. While switch.entry is None (tests and benchmarks clear it), every call falls back.
 */

/* What call.h reads of a function: its PlanCache's dict (`plans`), its shape programs (`programs`,
 * program.h), its output names (`outputs`: {"out0": 0, ...}) and its plan index (index.h); it
 * counts the calls it serves (`hits`, which the PlanCache adds to its own). */
typedef struct {
    PyObject_HEAD
    PyObject *plans, *programs, *outputs;
    PlanIndex index;
    Py_ssize_t hits;
} CallTables;

/* A GC type: its plans (a RecordingPlan among them) can hold the function that holds it. */
static int call_tables_traverse(PyObject *self, visitproc visit, void *arg) {
    CallTables *t = (CallTables *)self;
    Py_VISIT(t->plans);
    Py_VISIT(t->programs);
    Py_VISIT(t->outputs);
    for (int k = 0; k < INDEX_SLOTS; ++k) {
        Py_VISIT(t->index.slots[k].record);
        Py_VISIT(t->index.slots[k].key);
    }
    return 0;
}

static int call_tables_clear(PyObject *self) {
    CallTables *t = (CallTables *)self;
    Py_XDECREF(index_forget(&t->index));
    PyErr_Clear();
    Py_CLEAR(t->plans);
    Py_CLEAR(t->programs);
    Py_CLEAR(t->outputs);
    return 0;
}

static void call_tables_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    call_tables_clear(self);
    Py_TYPE(self)->tp_free(self);
}

#define TABLE(name) {#name, T_OBJECT_EX, offsetof(CallTables, name), READONLY, NULL}
static PyMemberDef call_tables_members[] = {
    TABLE(plans), TABLE(programs), TABLE(outputs), {"hits", T_PYSSIZET, offsetof(CallTables, hits), READONLY, NULL},
    {NULL},
};

/* forget(): empty the plan index; the signatures it held (index.h). */
static PyObject *call_tables_forget(PyObject *self, PyObject *unused) {
    return index_forget(&((CallTables *)self)->index);
}

static PyMethodDef call_tables_methods[] = {
    {"forget", call_tables_forget, METH_NOARGS, "Empty the plan index; the signatures it held, as a list."},
    {NULL},
};

static PyTypeObject CallTablesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritonwise_launch.CallTables",
    .tp_basicsize = sizeof(CallTables),
    .tp_dealloc = call_tables_dealloc,
    .tp_traverse = call_tables_traverse,
    .tp_clear = call_tables_clear,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_members = call_tables_members,
    .tp_methods = call_tables_methods,
    .tp_doc = "What a pointwise function's C __call__ reads of it (call.h).",
};

/* call_tables(plans=, programs=, outputs=): a CallTables over the three dicts. */
static PyObject *call_tables(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"plans", "programs", "outputs", NULL};
    PyObject *plans, *programs, *outputs;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$O!O!O!", names, &PyDict_Type, &plans, &PyDict_Type, &programs,
                                     &PyDict_Type, &outputs))
        return NULL;
    if (PyType_Ready(&CallTablesType) < 0) return NULL;
    CallTables *t = PyObject_GC_New(CallTables, &CallTablesType);
    if (t == NULL) return NULL;
    memset(&t->index, 0, sizeof t->index);
    t->hits = 0;
    t->plans = Py_NewRef(plans);
    t->programs = Py_NewRef(programs);
    t->outputs = Py_NewRef(outputs);
    PyObject_GC_Track(t);
    return (PyObject *)t;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;
    PyObject *switch_module;
} CallMethod;

static PyObject *name_entry, *name_c_tables;

static int intern_call_names(void) {
    name_entry = PyUnicode_InternFromString("entry");
    name_c_tables = PyUnicode_InternFromString("_c_tables");
    return name_entry && name_c_tables;
}

/* The outputs a call's keyword arguments give, one per output (None where not given), by the
 * function's output names; NULL (no exception) where a keyword is not an output's name (Python's
 * path ignores such a keyword whose value is None, and refuses any other). */
static PyObject *given_outputs(PyObject *names, PyObject *const *values, PyObject *kwnames) {
    PyObject *outs = PyTuple_New(PyDict_GET_SIZE(names));
    for (Py_ssize_t k = 0; outs != NULL && k < PyTuple_GET_SIZE(outs); ++k) PyTuple_SET_ITEM(outs, k, Py_NewRef(Py_None));
    for (Py_ssize_t k = 0; outs != NULL && k < PyTuple_GET_SIZE(kwnames); ++k) {
        PyObject *position = PyDict_GetItemWithError(names, PyTuple_GET_ITEM(kwnames, k));
        Py_ssize_t at = position == NULL ? -1 : PyLong_AsSsize_t(position);
        if (at < 0 || at >= PyTuple_GET_SIZE(outs)) {
            if (values[k] != Py_None || PyErr_Occurred()) Py_CLEAR(outs);
            continue;
        }
        PyObject *previous = PyTuple_GET_ITEM(outs, at);
        PyTuple_SET_ITEM(outs, at, Py_NewRef(values[k]));
        Py_DECREF(previous);
    }
    PyErr_Clear();
    return outs;
}

/* The output(s) of a call served in C, or NULL with *key the signature (or NULL). */
static PyObject *served(CallMethod *method, PyObject *function, PyObject *args, PyObject *const *kwvalues,
                        PyObject *kwnames, PyObject **key) {
    *key = NULL;
    if (tensor_type == NULL) return NULL;
    PyObject *entry = PyObject_GetAttr(method->switch_module, name_entry);
    int on = entry != NULL && entry != Py_None;
    Py_XDECREF(entry);
    PyObject *tables = on ? PyObject_GetAttr(function, name_c_tables) : NULL;
    PyObject *result = NULL, *outs = NULL;
    if (tables != NULL && Py_TYPE(tables) == &CallTablesType && ((CallTables *)tables)->plans != NULL) {
        CallTables *t = (CallTables *)tables;
        int plain = kwnames == NULL || (outs = given_outputs(t->outputs, kwvalues, kwnames)) != NULL;
        if (plain) result = serve_indexed(&t->index, t->plans, args, outs, t->programs, key);
        t->hits += result != NULL;
    }
    Py_XDECREF(outs);
    Py_XDECREF(tables);
    PyErr_Clear();
    return result;
}

static PyObject *call_method_vectorcall(PyObject *callable, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
    CallMethod *method = (CallMethod *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (n < 1) {
        PyErr_SetString(PyExc_TypeError, "__call__ needs the function it is called on");
        return NULL;
    }
    PyObject *args = PyTuple_New(n - 1);
    if (args == NULL) return NULL;
    for (Py_ssize_t k = 1; k < n; ++k) PyTuple_SET_ITEM(args, k - 1, Py_NewRef(argv[k]));
    PyObject *key = NULL, *result = served(method, argv[0], args, argv + n, n_kw ? kwnames : NULL, &key);
    PyObject *kwargs = result == NULL ? PyDict_New() : NULL;
    for (Py_ssize_t k = 0; kwargs != NULL && k < n_kw; ++k) {
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, k), argv[n + k]) < 0) Py_CLEAR(kwargs);
    }
    if (kwargs != NULL) {
        result = PyObject_CallFunctionObjArgs(method->fallback, argv[0], args, kwargs, key ? key : Py_None, NULL);
        Py_DECREF(kwargs);
    }
    Py_XDECREF(key);
    Py_DECREF(args);
    return result;
}

/* Bound to an instance, a plain method: call_method.__get__(f)(*a) is f.__call__(*a). */
static PyObject *call_method_get(PyObject *self, PyObject *instance, PyObject *owner) {
    if (instance == NULL || instance == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, instance);
}

static void call_method_dealloc(PyObject *self) {
    CallMethod *method = (CallMethod *)self;
    Py_XDECREF(method->fallback);
    Py_XDECREF(method->switch_module);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject CallMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritonwise_launch.CallMethod",
    .tp_basicsize = sizeof(CallMethod),
    .tp_dealloc = call_method_dealloc,
    .tp_vectorcall_offset = offsetof(CallMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = call_method_get,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A pointwise function's __call__: cached calls in C, the rest through `fallback`.",
};

/* call_method(fallback, switch): see the header. */
static PyObject *call_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyCallable_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "call_method() takes a callable and the module holding `entry`");
        return NULL;
    }
    if (PyType_Ready(&CallMethodType) < 0) return NULL;
    CallMethod *method = PyObject_New(CallMethod, &CallMethodType);
    if (method == NULL) return NULL;
    method->vectorcall = call_method_vectorcall;
    method->fallback = Py_NewRef(args[0]);
    method->switch_module = Py_NewRef(args[1]);
    return (PyObject *)method;
}
