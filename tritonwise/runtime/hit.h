/* hit(): a cached call's whole path in one C call; included by launch.c (see its header).
 *
 * The signature must equal runtime/arguments.py's call_signature(args), element for element,
 * since both key the same plan cache: a plain tensor (exactly torch.Tensor) gives
 * arguments._tensor_key's tuple (read on the C++ tensor by aten.cpp once built, else called
 * back), anything else what arguments._other_key returns (called back).
 * tests/runtime/test_hit_path.py checks the two against each other.
 *
 * Given outputs (`outs`, one per output, None where not given) extend the signature as
 * call_signature(args, outs) does, with _other_key's entry per output. A plan serves a call with
 * given outputs, launched on them, only where each given output shares no memory with an input
 * or is exactly that input (arguments.check_partial_overlap's rule); anything else is Python's
 * to decide (it raises).
 *
 * A plan that hit() may serve carries `hit`, a Record (below) that runtime/hit_path.py's record()
 * builds through record(shape=, layouts=, device=, cu_launch=, function=, grid=, threads=,
 * shared=, device_index=, kinds=, fixed=, extents=), `layouts` one (strides, dtype) per
 * output. A shape program (program.h) fills the same Launch for the shape it serves.
 */

static PyObject *tensor_type = NULL, *py_tensor_key = NULL, *other_key = NULL, *empty_strided = NULL;
static PyObject *raw_stream = NULL;
static PyObject *hooks = NULL, *current_device = NULL, *alloc_kwnames = NULL;
static long long int_lowest = 0, int_highest = -1; /* ints whose key is `int`: configure() gives them */
static PyObject *name_hit, *name_enter, *name_exit, *name_calls, *name_move_to_end, *name_itemsize;

#define MAX_RANK 16

/* One launch from C: the outputs' shape, (strides, dtype) per output, their device, and the
 * kernel's launch (cuLaunchKernel's address, the function, grid, threads, shared memory, the
 * device's index, the kinds of the operands and the packed index values). */
typedef struct {
    PyObject *shape, *layouts, *device, *device_index, *kinds, *fixed;
    unsigned long long cu_launch, function;
    unsigned int grid[3], threads, shared;
    const int64_t *extents; /* (lowest, highest) element offset per tensor input then output */
    Py_ssize_t n_extents;   /* pairs; lowest > highest where Python checks no overlap */
    PyObject *recorder;     /* NULL, or what aten.cpp's recording.h records an autograd node by */
} Launch;

/* A plan's Launch as a typed Python object: what `plan.hit` holds. */
typedef struct {
    PyObject_HEAD
    Launch launch;
    PyObject *extents; /* the bytes launch.extents points into */
} Record;

/* Every object a Record holds, each as `EACH(r->field)`: the one list its copy, traversal and
 * release read. */
#define RECORD_FIELDS(r, EACH)                                                    \
    EACH((r)->launch.shape); EACH((r)->launch.layouts); EACH((r)->launch.device); \
    EACH((r)->launch.device_index); EACH((r)->launch.kinds);                      \
    EACH((r)->launch.fixed); EACH((r)->launch.recorder); EACH((r)->extents)

/* A Record is a GC type: its recorder holds a function whose plans hold the Record. */
static int record_traverse(PyObject *self, visitproc visit, void *arg) {
    RECORD_FIELDS((Record *)self, Py_VISIT);
    return 0;
}

static int record_clear(PyObject *self) {
    Py_CLEAR(((Record *)self)->launch.recorder); /* the only field a cycle runs through */
    return 0;
}

static void record_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    RECORD_FIELDS((Record *)self, Py_XDECREF);
    Py_TYPE(self)->tp_free(self);
}

#define RECORD_OBJECT(name) {#name, T_OBJECT_EX, offsetof(Record, launch.name), READONLY, NULL}
#define RECORD_NUMBER(name, type, field) {name, type, offsetof(Record, launch.field), READONLY, NULL}
static PyMemberDef record_members[] = {
    RECORD_OBJECT(shape), RECORD_OBJECT(layouts), RECORD_OBJECT(device), RECORD_OBJECT(device_index),
    RECORD_OBJECT(kinds), RECORD_OBJECT(fixed), {"extents", T_OBJECT_EX, offsetof(Record, extents), READONLY, NULL},
    {"recorder", T_OBJECT, offsetof(Record, launch.recorder), READONLY, NULL},
    RECORD_NUMBER("cu_launch", T_ULONGLONG, cu_launch), RECORD_NUMBER("function", T_ULONGLONG, function),
    RECORD_NUMBER("grid_x", T_UINT, grid[0]), RECORD_NUMBER("grid_y", T_UINT, grid[1]),
    RECORD_NUMBER("grid_z", T_UINT, grid[2]), RECORD_NUMBER("threads", T_UINT, threads),
    RECORD_NUMBER("shared", T_UINT, shared),
    {NULL},
};

static PyTypeObject RecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritonwise_launch.Record",
    .tp_basicsize = sizeof(Record),
    .tp_dealloc = record_dealloc,
    .tp_traverse = record_traverse,
    .tp_clear = record_clear,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_members = record_members,
    .tp_doc = "What the C hit path launches for a cached plan (hit.h).",
};

/* Whether `layouts` is one (strides, dtype) per output, each strides a tuple of `rank` ints. */
static int layouts_fit(PyObject *layouts, Py_ssize_t rank) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(layouts); ++k) {
        PyObject *layout = PyTuple_GET_ITEM(layouts, k);
        if (!PyTuple_Check(layout) || PyTuple_GET_SIZE(layout) != 2) return 0;
        PyObject *strides = PyTuple_GET_ITEM(layout, 0);
        if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != rank) return 0;
    }
    return 1;
}

/* record(**fields): a Record (see the header); a ValueError where the fields do not fit. */
static PyObject *record(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"shape", "layouts", "device", "cu_launch", "function", "grid", "threads",
                            "shared", "device_index", "kinds", "fixed", "extents", NULL};
    PyObject *shape, *layouts, *device, *device_index, *kinds, *fixed, *extents;
    unsigned long long cu_launch, function;
    unsigned int grid[3], threads, shared;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$O!O!OKK(III)IIOSSS", names, &PyTuple_Type, &shape, &PyTuple_Type,
                                     &layouts, &device, &cu_launch, &function, &grid[0], &grid[1], &grid[2], &threads,
                                     &shared, &device_index, &kinds, &fixed, &extents))
        return NULL;
    if (!layouts_fit(layouts, PyTuple_GET_SIZE(shape)) || PyBytes_GET_SIZE(fixed) % 8 != 0 || cu_launch == 0 ||
        PyBytes_GET_SIZE(extents) % 16 != 0) {
        PyErr_SetString(PyExc_ValueError, "record: malformed launch record");
        return NULL;
    }
    if (PyType_Ready(&RecordType) < 0) return NULL;
    Record *r = PyObject_GC_New(Record, &RecordType);
    if (r == NULL) return NULL;
    r->extents = Py_NewRef(extents);
    Launch l = {Py_NewRef(shape), Py_NewRef(layouts), Py_NewRef(device), Py_NewRef(device_index), Py_NewRef(kinds),
                Py_NewRef(fixed), cu_launch, function, {grid[0], grid[1], grid[2]}, threads, shared,
                (const int64_t *)PyBytes_AS_STRING(extents), PyBytes_GET_SIZE(extents) / 16};
    r->launch = l;
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

/* Whether `recorder` is (backward, differentiable) with a callable and one bool per output. */
static int recorder_fits(PyObject *recorder, Py_ssize_t n_out) {
    if (!PyTuple_Check(recorder) || PyTuple_GET_SIZE(recorder) != 2) return 0;
    PyObject *differentiable = PyTuple_GET_ITEM(recorder, 1);
    if (!PyCallable_Check(PyTuple_GET_ITEM(recorder, 0)) || !PyTuple_Check(differentiable)) return 0;
    if (PyTuple_GET_SIZE(differentiable) != n_out) return 0;
    for (Py_ssize_t k = 0; k < n_out; ++k)
        if (!PyBool_Check(PyTuple_GET_ITEM(differentiable, k))) return 0;
    return 1;
}

/* recording(record, recorder): a Record launching as `record` does, whose calls under grad mode
 * recording.h records for autograd by `recorder` (see there). */
static PyObject *recording(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || Py_TYPE(args[0]) != &RecordType) {
        PyErr_SetString(PyExc_TypeError, "recording() takes a Record and a recorder");
        return NULL;
    }
    const Record *from = (const Record *)args[0];
    if (!recorder_fits(args[1], PyTuple_GET_SIZE(from->launch.layouts))) {
        PyErr_SetString(PyExc_ValueError, "recording: the recorder must be (a callable, one bool per output)");
        return NULL;
    }
    Record *r = PyObject_GC_New(Record, &RecordType);
    if (r == NULL) return NULL;
    r->launch = from->launch;
    r->extents = from->extents;
    r->launch.recorder = args[1];
    RECORD_FIELDS(r, Py_XINCREF);
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

static int intern_names(void) {
    name_hit = PyUnicode_InternFromString("hit");
    name_enter = PyUnicode_InternFromString("launch_enter_hook");
    name_exit = PyUnicode_InternFromString("launch_exit_hook");
    name_calls = PyUnicode_InternFromString("calls");
    name_move_to_end = PyUnicode_InternFromString("move_to_end");
    name_itemsize = PyUnicode_InternFromString("itemsize");
    alloc_kwnames = Py_BuildValue("(ss)", "dtype", "device");
    return name_hit && name_enter && name_exit && name_calls && name_move_to_end && name_itemsize && alloc_kwnames;
}

/* configure(tensor_type, tensor_key, other_key, empty_strided, raw_stream, hooks, current_device,
 * int_range): tensor_key and other_key are arguments._tensor_key and _other_key;
 * hooks is Triton's knobs.runtime, or None for none (tests); current_device
 * is torch's current-device query, or None where one device is visible (it is then always the
 * plan's); int_range the (lowest, highest) int whose key is `int` (arguments.INT32_RANGE). */
static PyObject *configure(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyArg_ParseTuple(args[7], "LL", &int_lowest, &int_highest)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "configure() takes 8 arguments");
        return NULL;
    }
    PyObject **targets[7] = {&tensor_type, &py_tensor_key, &other_key, &empty_strided, &raw_stream, &hooks,
                             &current_device};
    for (int k = 0; k < 7; ++k) {
        Py_INCREF(args[k]);
        Py_XSETREF(*targets[k], args[k]);
    }
    Py_RETURN_NONE;
}

/* A plain tensor's key: aten.cpp's reading of the C++ tensor once built, else arguments._tensor_key. */
static PyObject *tensor_key(PyObject *a) {
    if (aten_tensor_key != NULL) {
        PyObject *key = aten_tensor_key(a);
        if (key != NULL || PyErr_Occurred()) return key;
    }
    return PyObject_CallOneArg(py_tensor_key, a);
}

/* arguments._other_key(a): a float's and a bool's key is their type, an int's is `int` in the
 * range configure() gave (arguments.int_class); anything else is asked of Python. */
static PyObject *scalar_key(PyObject *a) {
    if (PyFloat_CheckExact(a)) return Py_NewRef((PyObject *)&PyFloat_Type);
    if (PyBool_Check(a)) return Py_NewRef((PyObject *)&PyBool_Type);
    if (PyLong_CheckExact(a)) {
        int overflow;
        long long value = PyLong_AsLongLongAndOverflow(a, &overflow);
        if (!overflow && value >= int_lowest && value <= int_highest) return Py_NewRef((PyObject *)&PyLong_Type);
    }
    return PyObject_CallOneArg(other_key, a);
}

/* A given output's entry, as arguments._other_key gives it: (torch.Tensor, *its tensor key) for
 * a plain tensor, type(None) where the output is not given, anything else asked of Python. */
static PyObject *output_key(PyObject *o) {
    if (o == Py_None) return Py_NewRef((PyObject *)Py_TYPE(o));
    if ((PyObject *)Py_TYPE(o) != tensor_type) return PyObject_CallOneArg(other_key, o);
    PyObject *inner = tensor_key(o), *key = inner == NULL ? NULL : PyTuple_New(8);
    if (key != NULL) {
        PyTuple_SET_ITEM(key, 0, Py_NewRef(tensor_type));
        for (int k = 0; k < 7; ++k) PyTuple_SET_ITEM(key, k + 1, Py_NewRef(PyTuple_GET_ITEM(inner, k)));
    }
    Py_XDECREF(inner);
    return key;
}

/* Whether `outs` (NULL, or one value per output) gives any output. */
static int gives_outputs(PyObject *outs) {
    for (Py_ssize_t k = 0; outs != NULL && k < PyTuple_GET_SIZE(outs); ++k)
        if (PyTuple_GET_ITEM(outs, k) != Py_None) return 1;
    return 0;
}

static PyObject *build_signature(PyObject *args, PyObject *outs) {
    Py_ssize_t n = PyTuple_GET_SIZE(args), n_out = gives_outputs(outs) ? PyTuple_GET_SIZE(outs) : 0;
    PyObject *key = PyTuple_New(n + n_out);
    if (key == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n + n_out; ++k) {
        PyObject *a = k < n ? PyTuple_GET_ITEM(args, k) : PyTuple_GET_ITEM(outs, k - n), *item;
        if (k >= n) item = output_key(a);
        else item = (PyObject *)Py_TYPE(a) == tensor_type ? tensor_key(a) : scalar_key(a);
        if (item == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, k, item);
    }
    return key;
}

static int configured(void) {
    if (tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "hit path used before configure()");
        return 0;
    }
    return 1;
}

/* signature(args[, outs]): the plan-cache key of a call (for tests). */
static PyObject *signature(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2 || !PyTuple_Check(args[0]) || (nargs == 2 && !PyTuple_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "signature() takes one or two tuples");
        return NULL;
    }
    return configured() ? build_signature(args[0], nargs == 2 ? args[1] : NULL) : NULL;
}

/* Whether a Triton launch hook would run: the rule of launcher._hooks_installed. */
static int hook_active(PyObject *name) {
    PyObject *hook = PyObject_GetAttr(hooks, name);
    if (hook == NULL) return -1;
    int active = 0;
    if (hook != Py_None) {
        PyObject *calls = PyObject_GetAttr(hook, name_calls);
        if (calls == NULL) {
            PyErr_Clear();
            active = 1;  /* getattr(hook, "calls", True) */
        } else {
            active = PyObject_IsTrue(calls);
            Py_DECREF(calls);
        }
    }
    Py_DECREF(hook);
    return active;
}

/* 1 where no Triton launch hook would run (C may launch), else 0 (-1 read as 0). */
static int hooks_quiet(void) {
    if (hooks == Py_None) return 1;
    return hook_active(name_enter) == 0 && hook_active(name_exit) == 0;
}

static PyObject *allocate(PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device) {
    if (aten_empty_strided != NULL) {
        PyObject *out = aten_empty_strided(shape, strides, dtype, device);
        if (out != NULL || PyErr_Occurred()) return out;  /* NULL alone: declined, for torch's Python API */
    }
    PyObject *call[4] = {shape, strides, dtype, device};
    return PyObject_Vectorcall(empty_strided, call, 2, alloc_kwnames);
}

/* 1 where the current device is the one a launch is for, 0 where not (the Python
 * launcher switches devices), -1 with an exception set. */
static int on_record_device(PyObject *device_index) {
    if (current_device == Py_None) return 1;
    PyObject *now = PyObject_CallNoArgs(current_device);
    if (now == NULL) return -1;
    int same = PyObject_RichCompareBool(now, device_index, Py_EQ);
    Py_DECREF(now);
    return same;
}

/* A tensor's [first, last) byte range over its dense `extent` (element offsets); 0 with an
 * exception set where its data pointer or element size cannot be read. */
static int byte_range(PyObject *tensor, PyObject *dtype, const int64_t extent[2], long long range[2]) {
    uint64_t address = 0;
    int done = aten_data_ptr == NULL ? -1 : aten_data_ptr(tensor, &address);
    if (done < 0) {
        PyObject *value = PyObject_CallMethodNoArgs(tensor, data_ptr_name);
        address = value == NULL ? 0 : PyLong_AsUnsignedLongLong(value);
        Py_XDECREF(value);
    }
    PyObject *itemsize = PyObject_GetAttr(dtype, name_itemsize);
    long long size = itemsize == NULL ? 0 : PyLong_AsLongLong(itemsize);
    Py_XDECREF(itemsize);
    range[0] = (long long)address + extent[0] * size;
    range[1] = (long long)address + (extent[1] + 1) * size;
    return done != 0 && !PyErr_Occurred();
}

/* Whether the outputs given to a call (signature `key`) may be launched on from C: each a plain
 * tensor (an entry (torch.Tensor, dtype, shape, strides, ...)) that shares no memory with a
 * tensor input or is exactly that input (arguments.check_partial_overlap, whose error Python
 * raises where this says no), over the dense extents Python computed (`l->extents`: one per
 * tensor input, then one per output). Inputs other than plain tensors and scalars: no. */
static int outputs_clear(const Launch *l, PyObject *key, PyObject *args, PyObject *outs) {
    Py_ssize_t n_in = PyTuple_GET_SIZE(args), n_tensors = 0;
    for (Py_ssize_t i = 0; i < n_in; ++i) n_tensors += PyTuple_Check(PyTuple_GET_ITEM(key, i));
    if (l->n_extents != n_tensors + PyTuple_GET_SIZE(outs)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(outs); ++k) {
        PyObject *out = PyTuple_GET_ITEM(outs, k), *entry = PyTuple_GET_ITEM(key, n_in + k);
        const int64_t *o_extent = l->extents + 2 * (n_tensors + k);
        if (out == Py_None) continue;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 8 || PyTuple_GET_ITEM(entry, 0) != tensor_type)
            return 0;
        if (o_extent[0] > o_extent[1]) continue; /* not dense: Python checks no such output either */
        PyObject *const *o = &PyTuple_GET_ITEM(entry, 1); /* dtype, shape, strides, ... */
        long long o_range[2];
        if (!byte_range(out, o[0], o_extent, o_range)) return 0;
        for (Py_ssize_t i = 0, t = 0; i < n_in; ++i) {
            PyObject *input = PyTuple_GET_ITEM(args, i), *e = PyTuple_GET_ITEM(key, i);
            if (!PyTuple_Check(e)) continue; /* a scalar */
            const int64_t *i_extent = l->extents + 2 * t++;
            if (PyTuple_GET_SIZE(e) != 7) return 0;
            long long i_range[2];
            if (input == out || i_extent[0] > i_extent[1]) continue;
            if (!byte_range(input, PyTuple_GET_ITEM(e, 0), i_extent, i_range)) return 0;
            if (i_range[0] >= o_range[1] || o_range[0] >= i_range[1]) continue;
            int same = i_range[0] == o_range[0] && i_range[1] == o_range[1] && PyTuple_GET_ITEM(e, 0) == o[0] &&
                       PyObject_RichCompareBool(PyTuple_GET_ITEM(e, 2), o[2], Py_EQ) == 1 &&
                       PyObject_RichCompareBool(PyTuple_GET_ITEM(e, 1), o[1], Py_EQ) == 1;
            if (!same) return 0;
        }
    }
    return 1;
}

/* Launch `l` on `args` (signature `key`) and on the outputs `given` (NULL, or one per output,
 * None where `l`'s layout is allocated); the output(s), or NULL with or without an exception
 * set (without: a given output Python must check, another device current or a failed launch,
 * for the Python path). */
static PyObject *run_launch(const Launch *l, PyObject *key, PyObject *args, PyObject *given) {
    if (given != NULL && !outputs_clear(l, key, args, given)) return NULL;
    if (on_record_device(l->device_index) != 1) return NULL;
    int recorded = 0; /* 1: record the call for autograd once launched (recording.h) */
    if (l->recorder != NULL) {
        recorded = given == NULL && aten_recordable != NULL ? aten_recordable(args) : -1;
        if (recorded < 0) return NULL;
    }
    Py_ssize_t n_out = PyTuple_GET_SIZE(l->layouts);
    if (given != NULL && PyTuple_GET_SIZE(given) != n_out) return NULL;
    PyObject *outs = PyTuple_New(n_out);
    if (outs == NULL) return NULL;
    for (Py_ssize_t k = 0; k < n_out; ++k) {
        PyObject *layout = PyTuple_GET_ITEM(l->layouts, k), *out = given ? PyTuple_GET_ITEM(given, k) : Py_None;
        out = out != Py_None ? Py_NewRef(out)
                             : allocate(l->shape, PyTuple_GET_ITEM(layout, 0), PyTuple_GET_ITEM(layout, 1), l->device);
        if (out == NULL) {
            Py_DECREF(outs);
            return NULL;
        }
        PyTuple_SET_ITEM(outs, k, out);
    }
    PyObject *stream_value = PyObject_CallOneArg(raw_stream, l->device_index);
    void *stream = stream_value == NULL ? NULL : PyLong_AsVoidPtr(stream_value);
    Py_XDECREF(stream_value);
    if (PyErr_Occurred()) {
        Py_DECREF(outs);
        return NULL;
    }
    int code = pack_and_launch((cu_launch_kernel_t)(uintptr_t)l->cu_launch, (void *)(uintptr_t)l->function, l->grid[0],
                               l->grid[1], l->grid[2], l->threads, l->shared, stream, l->kinds, l->fixed, args, outs);
    if (code != 0) {
        Py_DECREF(outs);
        return NULL;
    }
    PyObject *result = outs;
    if (n_out == 1) {
        result = Py_NewRef(PyTuple_GET_ITEM(outs, 0));
        Py_DECREF(outs);
    }
    if (recorded && aten_record(result, args, l->recorder) < 0) Py_CLEAR(result); /* Python runs it again */
    return result;
}

static PyObject *run_programs(PyObject *programs, PyObject *key, PyObject *args, PyObject *given); /* program.h */

/* A cached call's whole path: the output(s), or NULL (no exception) with *key the signature (NULL
 * where building it failed) for the Python path to go on with. `outs`: NULL, or the outputs the
 * call gives (one per output, None where not given). A call no plan serves is launched by a
 * shape program of its class (`programs`, program.h), where one serves it. Served by a plan, *key
 * stays the signature and *record (where not NULL) is set to the plan's Record, both new
 * references; served by a program, both are NULL. */
static PyObject *serve(PyObject *plans, PyObject *args, PyObject *outs, PyObject *programs, PyObject **key_out,
                       PyObject **record_out) {
    PyObject *key = *key_out = build_signature(args, outs);
    if (record_out != NULL) *record_out = NULL;
    if (key == NULL) {
        PyErr_Clear();  /* the Python path builds the signature again and reports what is wrong */
        return NULL;
    }
    PyObject *given = gives_outputs(outs) ? outs : NULL;
    PyObject *plan = Py_XNewRef(PyDict_GetItemWithError(plans, key));
    PyObject *record = plan == NULL ? NULL : PyObject_GetAttr(plan, name_hit);
    PyErr_Clear();
    int usable = record != NULL && Py_TYPE(record) == &RecordType;
    PyObject *result = NULL;
    int derivable = plan == NULL && programs != NULL && PyDict_GET_SIZE(programs);
    if ((usable || derivable) && hooks_quiet()) {
        if (usable) result = run_launch(&((Record *)record)->launch, key, args, given);
        else result = run_programs(programs, key, args, given);
    }
    Py_XDECREF(plan);
    if (result == NULL) {
        Py_XDECREF(record);
        PyErr_Clear();
        return NULL;
    }
    if (usable) {  /* served by a plan: the LRU's order (a program's call has no plan to move) */
        PyObject *moved = PyObject_CallMethodOneArg(plans, name_move_to_end, key);
        Py_XDECREF(moved);
    } else {
        Py_CLEAR(*key_out);
    }
    if (usable && record_out != NULL) *record_out = record;
    else Py_XDECREF(record);
    if (PyErr_Occurred()) PyErr_Clear();
    return result;
}

/* hit(plans, args, miss[, programs[, outs]]): see the header of launch.c. */
static PyObject *hit(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 5 || !PyDict_Check(argv[0]) || !PyTuple_Check(argv[1]) ||
        (nargs >= 4 && !PyDict_Check(argv[3])) || (nargs == 5 && argv[4] != Py_None && !PyTuple_Check(argv[4]))) {
        PyErr_SetString(PyExc_TypeError, "hit() takes a dict, a tuple, the miss value, optionally a dict and a tuple of outputs");
        return NULL;
    }
    if (!configured()) return NULL;
    PyObject *key, *miss = argv[2], *outs = nargs == 5 && argv[4] != Py_None ? argv[4] : NULL;
    PyObject *result = serve(argv[0], argv[1], outs, nargs >= 4 ? argv[3] : NULL, &key, NULL);
    if (result != NULL) {
        Py_XDECREF(key);
        return result;
    }
    if (key == NULL) return Py_NewRef(miss);
    PyObject *missed = PyTuple_Pack(2, miss, key);  /* the signature goes back with the miss */
    Py_DECREF(key);
    if (missed == NULL) PyErr_Clear();
    return missed != NULL ? missed : Py_NewRef(miss);
}
