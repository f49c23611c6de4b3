/* Shape programs: a new shape of a known call launched from C with no plan, by evaluating what
 * Python traced (plans/symbolic.py, plans/shape_programs.py); included by launch.c after hit.h.
 *
 * A program was traced from one call of a plain call class: its *leaves* are each tensor's
 * sizes then strides, inputs then given outputs, in signature order (shape_class() lists them);
 * its nodes compute, from the leaves, the outputs' shape and strides, the kernel's index values
 * and the grid; its guards are every comparison the analysis made on the way. A call whose
 * leaves satisfy every guard takes the same decisions, so it launches the program's kernel with
 * the nodes' values. Nothing here decides layout: the opcodes are plain integer arithmetic
 * (Python's floor division and modulo) and comparisons, and any overflow, division by zero or
 * false guard means the program does not serve the call (the Python path does).
 *
 * Programs are typed objects (ProgramType), built once in Python by keyword:
 *   program(nodes=, guards=, values=, grid=, out_shape=, out_strides=, out_dtypes=, device=,
 *           device_index=, cu_launch=, function=, threads=, shared=, kinds=, index_kind=, scratch=,
 *           extents=)
 * nodes and guards are packed int64 triples (op, a, b); values, out_shape and each of
 * out_strides packed int64 node numbers; index_kind "i" or "l" packs every index value in
 * 32 or 64 bits, followed by `scratch` zero slots; extents packed node pairs, the dense extent
 * of each tensor input then each output (hit.h's Launch.extents). The opcodes come from
 * plans/symbolic.py (opcodes() below returns the numbering Python must use).
 */

#define MAX_NODES 4096
#define MAX_OPERANDS 16
#define MAX_LEAVES (2 * MAX_RANK * MAX_OPERANDS)

enum { OP_LEAF, OP_CONST, OP_ADD, OP_SUB, OP_MUL, OP_FLOORDIV, OP_MOD, OP_ABS };
enum { GUARD_LT, GUARD_LE, GUARD_EQ, GUARD_NE };

typedef struct {
    PyObject_HEAD
    Py_ssize_t n_nodes, n_guards, n_values, n_out, rank;
    int64_t *nodes, *guards;           /* triples */
    int64_t *values, *out_shape, *out_strides; /* node numbers; out_strides n_out x rank */
    int64_t *extents; Py_ssize_t n_extents;    /* node pairs: hit.h's Launch.extents */
    int64_t grid, scratch;
    unsigned int threads, shared;
    unsigned long long cu_launch, function;
    char index_kind;
    PyObject *out_dtypes, *device, *device_index, *kinds;
} Program;

static void program_dealloc(PyObject *self) {
    Program *p = (Program *)self;
    PyMem_Free(p->nodes);
    PyMem_Free(p->guards);
    PyMem_Free(p->values);
    PyMem_Free(p->out_shape);
    PyMem_Free(p->out_strides);
    PyMem_Free(p->extents);
    Py_XDECREF(p->out_dtypes);
    Py_XDECREF(p->device);
    Py_XDECREF(p->device_index);
    Py_XDECREF(p->kinds);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tritonwise_launch.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A traced shape program: new shapes of one call class launched from C (program.h).",
};

/* A copy of packed int64s `bytes` (a multiple of `width` of them, or fails), their count in *n. */
static int64_t *int64s(PyObject *bytes, Py_ssize_t width, Py_ssize_t *n) {
    if (!PyBytes_Check(bytes) || PyBytes_GET_SIZE(bytes) % (8 * width) != 0) {
        PyErr_SetString(PyExc_TypeError, "program: packed int64 fields must be bytes of whole records");
        return NULL;
    }
    *n = PyBytes_GET_SIZE(bytes) / (8 * width);
    int64_t *copy = PyMem_Malloc(PyBytes_GET_SIZE(bytes) + 8);
    if (copy == NULL) return (int64_t *)PyErr_NoMemory();
    memcpy(copy, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
    return copy;
}

/* Whether every node and guard reads only earlier nodes, and every node number is a node. */
static int well_formed(const Program *p) {
    for (Py_ssize_t k = 0; k < p->n_nodes; ++k) {
        int64_t op = p->nodes[3 * k], a = p->nodes[3 * k + 1], b = p->nodes[3 * k + 2];
        if (op < OP_LEAF || op > OP_ABS) return 0;
        if (op == OP_LEAF && (a < 0 || a >= MAX_LEAVES)) return 0;
        if (op >= OP_ADD && (a < 0 || a >= k || (op != OP_ABS && (b < 0 || b >= k)))) return 0;
    }
    for (Py_ssize_t k = 0; k < p->n_guards; ++k) {
        int64_t op = p->guards[3 * k], a = p->guards[3 * k + 1], b = p->guards[3 * k + 2];
        if (op < GUARD_LT || op > GUARD_NE || a < 0 || b < 0 || a >= p->n_nodes || b >= p->n_nodes) return 0;
    }
    const int64_t *lists[4] = {p->values, p->out_shape, p->out_strides, p->extents};
    Py_ssize_t sizes[4] = {p->n_values, p->rank, p->n_out * p->rank, 2 * p->n_extents};
    for (int l = 0; l < 4; ++l)
        for (Py_ssize_t k = 0; k < sizes[l]; ++k)
            if (lists[l][k] < 0 || lists[l][k] >= p->n_nodes) return 0;
    return p->grid >= 0 && p->grid < p->n_nodes;
}

static PyObject *program(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"nodes", "guards", "values", "grid", "out_shape", "out_strides", "out_dtypes",
                            "device", "device_index", "cu_launch", "function", "threads", "shared", "kinds",
                            "index_kind", "scratch", "extents", NULL};
    PyObject *nodes, *guards, *values, *out_shape, *out_strides, *out_dtypes, *device, *device_index, *kinds, *extents;
    unsigned long long cu_launch, function;
    unsigned int threads, shared;
    long long grid, scratch;
    const char *index_kind;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$SSSLSO!O!OOKKIISsLS", names, &nodes, &guards, &values, &grid,
                                     &out_shape, &PyTuple_Type, &out_strides, &PyTuple_Type, &out_dtypes, &device,
                                     &device_index, &cu_launch, &function, &threads, &shared, &kinds, &index_kind,
                                     &scratch, &extents))
        return NULL;
    if (PyType_Ready(&ProgramType) < 0) return NULL;
    Program *p = PyObject_New(Program, &ProgramType);
    if (p == NULL) return NULL;
    p->nodes = p->guards = p->values = p->out_shape = p->out_strides = p->extents = NULL;
    p->out_dtypes = Py_NewRef(out_dtypes);
    p->device = Py_NewRef(device);
    p->device_index = Py_NewRef(device_index);
    p->cu_launch = cu_launch, p->function = function;
    p->kinds = Py_NewRef(kinds);
    p->grid = grid, p->threads = threads, p->shared = shared, p->scratch = scratch;
    p->index_kind = index_kind[0];
    p->n_out = PyTuple_GET_SIZE(out_strides);
    p->nodes = int64s(nodes, 3, &p->n_nodes);
    p->guards = p->nodes ? int64s(guards, 3, &p->n_guards) : NULL;
    p->values = p->guards ? int64s(values, 1, &p->n_values) : NULL;
    p->out_shape = p->values ? int64s(out_shape, 1, &p->rank) : NULL;
    Py_ssize_t n_strides = 0;
    p->out_strides = p->out_shape ? PyMem_Malloc(8 * (p->n_out * p->rank + 1)) : NULL;
    for (Py_ssize_t o = 0; p->out_strides != NULL && o < p->n_out; ++o) {
        int64_t *one = int64s(PyTuple_GET_ITEM(out_strides, o), 1, &n_strides);
        int fits = one != NULL && n_strides == p->rank;
        if (fits) memcpy(p->out_strides + o * p->rank, one, 8 * p->rank);
        PyMem_Free(one);
        if (!fits) {
            PyMem_Free(p->out_strides);
            p->out_strides = NULL;
        }
    }
    p->extents = p->out_strides ? int64s(extents, 2, &p->n_extents) : NULL;
    int fine = p->extents != NULL && p->n_extents <= MAX_PARAMS &&
               PyTuple_GET_SIZE(out_dtypes) == p->n_out && p->rank <= MAX_RANK &&
               p->n_nodes <= MAX_NODES && (p->index_kind == 'i' || p->index_kind == 'l') && scratch >= 0 &&
               p->n_values + scratch <= MAX_PARAMS && well_formed(p);
    if (!fine) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "program: malformed shape program");
        Py_DECREF(p);
        return NULL;
    }
    return (PyObject *)p;
}

/* opcodes(): the numbering of node and guard opcodes, for plans/symbolic.py to check against. */
static PyObject *opcodes(PyObject *self, PyObject *unused) {
    return Py_BuildValue("{s(iiiiiiii)s(iiii)}", "nodes", OP_LEAF, OP_CONST, OP_ADD, OP_SUB, OP_MUL, OP_FLOORDIV,
                         OP_MOD, OP_ABS, "guards", GUARD_LT, GUARD_LE, GUARD_EQ, GUARD_NE);
}

/* The value of node k from earlier ones; 0 where it has none (overflow, a zero divisor, a leaf
 * the call lacks). Floor division and modulo as Python's. */
static int evaluate(const Program *p, Py_ssize_t k, const int64_t *leaves, Py_ssize_t n_leaves, int64_t *v) {
    int64_t op = p->nodes[3 * k], a = p->nodes[3 * k + 1], b = p->nodes[3 * k + 2];
    switch (op) {
    case OP_LEAF:
        if (a >= n_leaves) return 0;
        v[k] = leaves[a];
        return 1;
    case OP_CONST: v[k] = a; return 1;
    case OP_ADD: return !__builtin_add_overflow(v[a], v[b], &v[k]);
    case OP_SUB: return !__builtin_sub_overflow(v[a], v[b], &v[k]);
    case OP_MUL: return !__builtin_mul_overflow(v[a], v[b], &v[k]);
    case OP_ABS:
        if (v[a] == INT64_MIN) return 0;
        v[k] = v[a] < 0 ? -v[a] : v[a];
        return 1;
    default: {
        int64_t x = v[a], y = v[b];
        if (y == 0 || (x == INT64_MIN && y == -1)) return 0;
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
            q -= 1;
            r += y;
        }
        v[k] = op == OP_FLOORDIV ? q : r;
        return 1;
    }
    }
}

static int holds(const int64_t *g, const int64_t *v) {
    int64_t a = v[g[1]], b = v[g[2]];
    switch (g[0]) {
    case GUARD_LT: return a < b;
    case GUARD_LE: return a <= b;
    case GUARD_EQ: return a == b;
    default: return a != b;
    }
}

/* Every node of `p` on `leaves` into `v`, each guard checked once its operands are there; 0
 * where the program does not serve these leaves. */
static int serves(const Program *p, const int64_t *leaves, Py_ssize_t n_leaves, int64_t *v) {
    Py_ssize_t done = 0;
    for (Py_ssize_t g = 0; g <= p->n_guards; ++g) {
        const int64_t *guard = g < p->n_guards ? p->guards + 3 * g : NULL;
        Py_ssize_t needed = guard == NULL ? p->n_nodes : 1 + (guard[1] > guard[2] ? guard[1] : guard[2]);
        for (; done < needed; ++done)
            if (!evaluate(p, done, leaves, n_leaves, v)) return 0;
        if (guard != NULL && !holds(guard, v)) return 0;
    }
    return 1;
}

/* The class of signature `key` (its first `n_args` entries the arguments', the rest given
 * outputs') into `parts`: per plain tensor (dtype, rank, device, aligned), per given output
 * ("out", dtype, rank, device, aligned), None per output not given, a scalar's entry as it is;
 * and its leaves (each tensor's sizes then strides, in order) into `leaves`. The number of
 * leaves, or -1 where a tensor is not plain (negative, requiring grad, a subclass or buffer). */
static Py_ssize_t read_class(PyObject *key, Py_ssize_t n_args, PyObject *parts, int64_t *leaves, PyObject *tensors) {
    Py_ssize_t n = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(key); ++k) {
        PyObject *e = PyTuple_GET_ITEM(key, k), *part;
        int output = k >= n_args;
        int tensor = PyTuple_CheckExact(e) &&
                     (output ? PyTuple_GET_SIZE(e) == 8 && PyTuple_GET_ITEM(e, 0) == tensor_type : PyTuple_GET_SIZE(e) == 7);
        if (tensor) {
            PyObject *const *f = &PyTuple_GET_ITEM(e, output);
            Py_ssize_t rank = PyTuple_Check(f[1]) ? PyTuple_GET_SIZE(f[1]) : -1;
            if (f[5] != Py_False || f[6] != Py_False || rank < 0 || rank > MAX_RANK || !PyTuple_Check(f[2]) ||
                PyTuple_GET_SIZE(f[2]) != rank || n + 2 * rank > MAX_LEAVES)
                return -1;
            for (Py_ssize_t d = 0; d < 2 * rank; ++d) {
                leaves[n + d] = PyLong_AsLongLong(PyTuple_GET_ITEM(f[1 + d / rank], d % rank));
                if (PyErr_Occurred()) return -1;
            }
            if (tensors != NULL) {
                PyObject *pair = PyTuple_Pack(2, f[1], f[2]);
                int appended = pair != NULL && PyList_Append(tensors, pair) == 0;
                Py_XDECREF(pair);
                if (!appended) return -1;
            }
            n += 2 * rank;
            part = output ? Py_BuildValue("(sOnOO)", "out", f[0], rank, f[3], f[4])
                          : Py_BuildValue("(OnOO)", f[0], rank, f[3], f[4]);
        } else if (output && e == (PyObject *)Py_TYPE(Py_None)) {
            part = Py_NewRef(Py_None);
        } else if (output || PyTuple_Check(e)) {
            return -1; /* a subclass, a StridedBuffer, an output of another kind */
        } else {
            part = Py_NewRef(e);
        }
        if (part == NULL) return -1;
        PyTuple_SET_ITEM(parts, k, part);
    }
    return n;
}

/* Allocate the outputs `given` (NULL or one per output) does not give, as `p` computed them in
 * `v`, and launch `p`'s kernel with its index values; the output(s), or NULL. */
static PyObject *launch_program(const Program *p, const int64_t *v, PyObject *key, PyObject *args, PyObject *given) {
    Py_ssize_t n_fixed = p->n_values + p->scratch;
    int64_t grid = v[p->grid];
    PyObject *fixed = PyBytes_FromStringAndSize(NULL, 8 * n_fixed);
    PyObject *shape = PyTuple_New(p->rank), *layouts = PyTuple_New(p->n_out), *result = NULL;
    if (fixed == NULL || shape == NULL || layouts == NULL || grid < 0 || grid > UINT32_MAX) goto done;
    char *slots = PyBytes_AS_STRING(fixed);
    memset(slots, 0, 8 * n_fixed);
    for (Py_ssize_t k = 0; k < p->n_values; ++k) {
        int64_t value = v[p->values[k]];
        if (p->index_kind == 'i') {
            if (value < INT32_MIN || value > INT32_MAX) goto done;
            int32_t narrow = (int32_t)value;
            memcpy(slots + 8 * k, &narrow, 4);
        } else memcpy(slots + 8 * k, &value, 8);
    }
    for (Py_ssize_t d = 0; d < p->rank; ++d) PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(v[p->out_shape[d]]));
    for (Py_ssize_t o = 0; o < p->n_out; ++o) {
        PyObject *strides = PyTuple_New(p->rank);
        for (Py_ssize_t d = 0; strides != NULL && d < p->rank; ++d)
            PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(v[p->out_strides[o * p->rank + d]]));
        PyObject *layout = strides == NULL ? NULL : PyTuple_Pack(2, strides, PyTuple_GET_ITEM(p->out_dtypes, o));
        Py_XDECREF(strides);
        if (layout == NULL) goto done;
        PyTuple_SET_ITEM(layouts, o, layout);
    }
    int64_t extents[2 * MAX_PARAMS]; /* one pair per operand: never more than a kernel's parameters */
    for (Py_ssize_t k = 0; k < 2 * p->n_extents; ++k) extents[k] = v[p->extents[k]];
    if (!PyErr_Occurred()) {
        Launch launch = {shape, layouts, p->device, p->device_index, p->kinds, fixed, p->cu_launch, p->function,
                         {(unsigned int)grid, 1, 1}, p->threads, p->shared, extents, p->n_extents};
        result = run_launch(&launch, key, args, given);
    }
done:
    Py_XDECREF(layouts);
    Py_XDECREF(shape);
    Py_XDECREF(fixed);
    return result;
}

/* The call of signature `key` launched by the first program of its class in `programs` (class ->
 * list of Program) that serves it; NULL (no exception) where none does. */
static PyObject *run_programs(PyObject *programs, PyObject *key, PyObject *args, PyObject *given) {
    int64_t leaves[MAX_LEAVES], v[MAX_NODES];
    PyObject *parts = PyTuple_New(PyTuple_GET_SIZE(key)), *list = NULL, *result = NULL;
    Py_ssize_t n_leaves = parts == NULL ? -1 : read_class(key, PyTuple_GET_SIZE(args), parts, leaves, NULL);
    if (n_leaves >= 0) list = Py_XNewRef(PyDict_GetItemWithError(programs, parts));
    for (Py_ssize_t k = 0; list != NULL && PyList_Check(list) && k < PyList_GET_SIZE(list); ++k) {
        PyObject *item = PyList_GET_ITEM(list, k);
        if (Py_TYPE(item) != &ProgramType || !serves((Program *)item, leaves, n_leaves, v)) continue;
        Py_INCREF(item); /* the list may grow while a launch releases the GIL */
        result = launch_program((Program *)item, v, key, args, given);
        Py_DECREF(item);
        break; /* the programs of a class exclude each other: no other serves it */
    }
    Py_XDECREF(list);
    Py_XDECREF(parts);
    PyErr_Clear();
    return result;
}

/* shape_class(key, n_args): (class, [(sizes, strides) per tensor, in leaf order]) of a call
 * signature as run_programs reads it, or None where it has a tensor that is not plain. */
static PyObject *shape_class(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "shape_class() takes a signature and its number of arguments");
        return NULL;
    }
    if (!configured()) return NULL;
    int64_t leaves[MAX_LEAVES];
    Py_ssize_t n_args = PyLong_AsSsize_t(args[1]);
    PyObject *parts = PyTuple_New(PyTuple_GET_SIZE(args[0])), *tensors = PyList_New(0), *result = NULL;
    if (parts != NULL && tensors != NULL && !PyErr_Occurred()) {
        if (read_class(args[0], n_args, parts, leaves, tensors) >= 0) result = PyTuple_Pack(2, parts, tensors);
        else if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
    }
    Py_XDECREF(parts);
    Py_XDECREF(tensors);
    return result;
}

/* evaluate(program, leaves): the node values a program computes for `leaves` (a tuple of ints),
 * or None where it does not serve them (explain()'s rung, and tests). */
static PyObject *evaluate_program(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || Py_TYPE(args[0]) != &ProgramType || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) > MAX_LEAVES) {
        PyErr_SetString(PyExc_TypeError, "evaluate() takes a Program and a tuple of leaves");
        return NULL;
    }
    const Program *p = (const Program *)args[0];
    int64_t leaves[MAX_LEAVES], v[MAX_NODES];
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    for (Py_ssize_t k = 0; k < n; ++k) leaves[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(args[1], k));
    if (PyErr_Occurred()) return NULL;
    if (!serves(p, leaves, n, v)) Py_RETURN_NONE;
    PyObject *values = PyTuple_New(p->n_nodes);
    for (Py_ssize_t k = 0; values != NULL && k < p->n_nodes; ++k) PyTuple_SET_ITEM(values, k, PyLong_FromLongLong(v[k]));
    return values;
}
