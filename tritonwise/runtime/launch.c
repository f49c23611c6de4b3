/* tritonwise's kernel launcher: one call from Python packs a launch plan's parameters and
 * starts the kernel through cuLaunchKernel.
 *
 *   launch(cu_launch_kernel, function, grid_x, grid_y, grid_z, threads, shared, stream,
 *          kinds, fixed, inputs, outputs) -> CUresult
 *
 * `cu_launch_kernel` is the address of the driver's cuLaunchKernel (or of a stand-in, in tests).
 * `kinds` has one byte per value of `inputs` then `outputs` (tuples or lists):
 *   'p' an object with data_ptr()   'b' int8   'h' int16   'i' int32   'l' int64
 *   'B' uint8   'H' uint16   'I' uint32   'K' uint64   'f' float32   'd' float64
 * `fixed` holds the parameters that never change for a plan (index arguments, scratch
 * pointers), already packed by the caller as one 8-byte slot each.
 *
 * Every parameter lives in an 8-byte slot of this call's stack; the driver reads as many bytes
 * as the kernel's parameter has, from the start of the slot (x86-64 and aarch64 are little
 * endian). The slots are this call's own, packed while holding the GIL; the driver call then
 * releases it, as Triton's launcher does, so threads driving other devices are not held up.
 * Once use_aten() has given it aten.cpp's helpers (runtime/aten.py), a plain tensor's data
 * pointer and hit()'s outputs are taken through ATen rather than torch's Python API.
 *
 *   hit(plans, args, miss[, programs[, outs]]) -> the call's output(s), or (`miss`, signature), or `miss`
 *
 * `hit` (hit.h) is a cached call's whole path: signature, plan (or shape program, program.h),
 * outputs, stream and launch; wherever Python must decide it launches nothing and returns the
 * miss. `configure` gives it the Python objects it calls; `call_method` (call.h) makes a
 * pointwise function's __call__ of it, with a plan index (index.h) in front of hit()'s lookup.
 * Built on first use by runtime/native.py; nothing includes cuda.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_PARAMS 128

typedef int (*cu_launch_kernel_t)(void *function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                  unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared,
                                  void *stream, void **params, void **extra);

typedef PyObject *(*aten_empty_strided_t)(PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device);
typedef int (*aten_data_ptr_t)(PyObject *tensor, uint64_t *address);
typedef PyObject *(*aten_tensor_key_t)(PyObject *tensor);
typedef Py_ssize_t (*aten_tensor_words_t)(PyObject *tensor, int64_t *words, Py_ssize_t room);
typedef int (*aten_recordable_t)(PyObject *args);
typedef int (*aten_record_t)(PyObject *results, PyObject *args, PyObject *recorder);

static PyObject *data_ptr_name = NULL;
/* aten.cpp's helpers once runtime/aten.py has handed over their addresses (use_aten), else NULL */
static aten_empty_strided_t aten_empty_strided = NULL;
static aten_data_ptr_t aten_data_ptr = NULL;
static aten_tensor_key_t aten_tensor_key = NULL;
static aten_tensor_words_t aten_tensor_words = NULL;
static aten_recordable_t aten_recordable = NULL;
static aten_record_t aten_record = NULL;

/* Writes `value` into `slot` as kind `kind`; 0 with an exception set on failure. Integers are
 * range-checked, then their low bytes copied (little endian: they are the narrow value). */
static int pack(char kind, PyObject *value, uint64_t *slot, Py_ssize_t index) {
    if (kind == 'p') {
        int done = aten_data_ptr == NULL ? -1 : aten_data_ptr(value, slot);
        if (done >= 0) return done;  /* -1: not a plain tensor, asked of its data_ptr method */
        PyObject *address = PyObject_CallMethodNoArgs(value, data_ptr_name);
        if (address == NULL) return 0;
        *slot = PyLong_AsUnsignedLongLong(address);
        Py_DECREF(address);
        return !PyErr_Occurred();
    }
    if (kind == 'f') {
        float f = (float)PyFloat_AsDouble(value);
        memcpy(slot, &f, sizeof f);
        return !PyErr_Occurred();
    }
    if (kind == 'd') {
        double d = PyFloat_AsDouble(value);
        memcpy(slot, &d, sizeof d);
        return !PyErr_Occurred();
    }
    long long low = 0, high = 0;
    unsigned long long unsigned_high = 0;
    size_t size = 0;
    switch (kind) {
    case 'b': low = INT8_MIN, high = INT8_MAX, size = 1; break;
    case 'h': low = INT16_MIN, high = INT16_MAX, size = 2; break;
    case 'i': low = INT32_MIN, high = INT32_MAX, size = 4; break;
    case 'l': low = INT64_MIN, high = INT64_MAX, size = 8; break;
    case 'B': unsigned_high = UINT8_MAX, size = 1; break;
    case 'H': unsigned_high = UINT16_MAX, size = 2; break;
    case 'I': unsigned_high = UINT32_MAX, size = 4; break;
    case 'K': unsigned_high = UINT64_MAX, size = 8; break;
    default:
        PyErr_Format(PyExc_ValueError, "launch: unknown parameter kind '%c'", kind);
        return 0;
    }
    int in_range;
    if (unsigned_high) {
        unsigned long long u = PyLong_AsUnsignedLongLong(value);
        if (PyErr_Occurred()) return 0;
        in_range = u <= unsigned_high;
        memcpy(slot, &u, size);
    } else {
        long long i = PyLong_AsLongLong(value);
        if (PyErr_Occurred()) return 0;
        in_range = low <= i && i <= high;
        memcpy(slot, &i, size);
    }
    if (!in_range) {
        PyErr_Format(PyExc_OverflowError, "launch: the value of parameter %zd does not fit its type", index);
        return 0;
    }
    return 1;
}

/* Packs `inputs` then `outputs` (PySequence_Fast results) by `kinds`, appends `fixed` and
 * launches; the CUresult, or -1 with an exception set when a value cannot be packed. A grid with
 * no program (a size-0 task) launches nothing and succeeds: the driver refuses it (error 1). */
static int pack_and_launch(cu_launch_kernel_t cu_launch_kernel, void *function, unsigned grid_x, unsigned grid_y,
                           unsigned grid_z, unsigned threads, unsigned shared, void *stream, PyObject *kinds,
                           PyObject *fixed, PyObject *inputs, PyObject *outputs) {
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(inputs), n_out = PySequence_Fast_GET_SIZE(outputs);
    Py_ssize_t n_var = n_in + n_out, n_fixed = PyBytes_GET_SIZE(fixed) / 8;
    const char *kind = PyBytes_AS_STRING(kinds);
    if (grid_x == 0 || grid_y == 0 || grid_z == 0) return 0;
    uint64_t slots[MAX_PARAMS];
    void *params[MAX_PARAMS];
    if (PyBytes_GET_SIZE(kinds) != n_var || n_var + n_fixed > MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "launch: %zd kinds for %zd values (at most %d parameters)",
                     PyBytes_GET_SIZE(kinds), n_var, MAX_PARAMS);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n_var; ++k) {
        PyObject *value = k < n_in ? PySequence_Fast_GET_ITEM(inputs, k) : PySequence_Fast_GET_ITEM(outputs, k - n_in);
        slots[k] = 0;
        if (!pack(kind[k], value, &slots[k], k)) return -1;
    }
    memcpy(&slots[n_var], PyBytes_AS_STRING(fixed), (size_t)n_fixed * 8);
    for (Py_ssize_t k = 0; k < n_var + n_fixed; ++k) params[k] = &slots[k];
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = cu_launch_kernel(function, grid_x, grid_y, grid_z, threads, 1, 1, shared, stream, params, NULL);
    Py_END_ALLOW_THREADS
    return code;
}

static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "launch() takes 12 arguments");
        return NULL;
    }
    cu_launch_kernel_t cu_launch_kernel = (cu_launch_kernel_t)PyLong_AsVoidPtr(*args++);
    if (cu_launch_kernel == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "launch: null cuLaunchKernel address");
        return NULL;
    }
    void *function = PyLong_AsVoidPtr(args[0]);
    unsigned grid_x = (unsigned)PyLong_AsUnsignedLong(args[1]);
    unsigned grid_y = (unsigned)PyLong_AsUnsignedLong(args[2]);
    unsigned grid_z = (unsigned)PyLong_AsUnsignedLong(args[3]);
    unsigned threads = (unsigned)PyLong_AsUnsignedLong(args[4]);
    unsigned shared = (unsigned)PyLong_AsUnsignedLong(args[5]);
    void *stream = PyLong_AsVoidPtr(args[6]);
    if (PyErr_Occurred()) return NULL;
    PyObject *kinds = args[7], *fixed = args[8];
    if (!PyBytes_Check(kinds) || !PyBytes_Check(fixed)) {
        PyErr_SetString(PyExc_TypeError, "launch: kinds and fixed must be bytes");
        return NULL;
    }
    PyObject *inputs = PySequence_Fast(args[9], "launch: inputs must be a sequence");
    if (inputs == NULL) return NULL;
    PyObject *outputs = PySequence_Fast(args[10], "launch: outputs must be a sequence");
    if (outputs == NULL) {
        Py_DECREF(inputs);
        return NULL;
    }
    int code = pack_and_launch(cu_launch_kernel, function, grid_x, grid_y, grid_z, threads, shared, stream, kinds,
                               fixed, inputs, outputs);
    Py_DECREF(inputs);
    Py_DECREF(outputs);
    return code < 0 ? NULL : PyLong_FromLong(code);
}

/* use_aten(empty_strided, data_ptr, tensor_key, tensor_words, recordable, record): aten.cpp's
 * helpers' addresses, or six zeros to stop using them. */
static PyObject *use_aten(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    void *address[6];
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "use_aten() takes 6 arguments");
        return NULL;
    }
    for (int k = 0; k < 6; ++k) address[k] = PyLong_AsVoidPtr(args[k]);
    if (PyErr_Occurred()) return NULL;
    aten_empty_strided = (aten_empty_strided_t)address[0];
    aten_data_ptr = (aten_data_ptr_t)address[1];
    aten_tensor_key = (aten_tensor_key_t)address[2];
    aten_tensor_words = (aten_tensor_words_t)address[3];
    aten_recordable = (aten_recordable_t)address[4];
    aten_record = (aten_record_t)address[5];
    Py_RETURN_NONE;
}

#include "hit.h"
#include "program.h"
#include "index.h"
#include "call.h"

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "Pack parameters and launch; returns the CUresult."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL, "Give hit() the Python objects it calls."},
    {"signature", (PyCFunction)(void (*)(void))signature, METH_FASTCALL, "call_signature(args), built in C."},
    {"hit", (PyCFunction)(void (*)(void))hit, METH_FASTCALL, "A cached call's whole path, or `miss`."},
    {"call_words", (PyCFunction)(void (*)(void))call_words_of, METH_FASTCALL, "A call's words (index.h)."},
    {"call_method", (PyCFunction)(void (*)(void))call_method, METH_FASTCALL, "A pointwise function's __call__ in C."},
    {"call_tables", (PyCFunction)(void (*)(void))call_tables, METH_VARARGS | METH_KEYWORDS, "What __call__ reads (call.h)."},
    {"use_aten", (PyCFunction)(void (*)(void))use_aten, METH_FASTCALL, "Allocate and read pointers through aten.cpp."},
    {"record", (PyCFunction)(void (*)(void))record, METH_VARARGS | METH_KEYWORDS, "A plan's launch record (hit.h)."},
    {"recording", (PyCFunction)(void (*)(void))recording, METH_FASTCALL, "A record that records for autograd (hit.h)."},
    {"program", (PyCFunction)(void (*)(void))program, METH_VARARGS | METH_KEYWORDS, "A shape program (program.h)."},
    {"shape_class", (PyCFunction)(void (*)(void))shape_class, METH_FASTCALL, "A signature's class and leaves."},
    {"evaluate", (PyCFunction)(void (*)(void))evaluate_program, METH_FASTCALL, "A program's node values."},
    {"opcodes", opcodes, METH_NOARGS, "The opcode numbering of shape programs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tritonwise_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tritonwise_launch(void) {
    data_ptr_name = PyUnicode_InternFromString("data_ptr");
    if (data_ptr_name == NULL || !intern_names() || !intern_call_names()) return NULL;
    return PyModule_Create(&module);
}
