/* ATen helpers for launch.c: the two steps of a cached call that cost most through torch's
 * Python API, done on the C++ tensor instead (runtime/aten.py builds this file against the
 * installed torch and hands launch.c their addresses):
 *
 *   PyObject *tritonwise_empty_strided(shape, strides, dtype, device)
 *       torch.empty_strided(shape, strides, dtype=dtype, device=device) through at::empty_strided,
 *       or for the current CUDA device straight from its caching allocator: a new tensor; NULL
 *       with an exception set on failure; NULL without one where the call must go through
 *       Python instead (a torch function mode is active, an argument of another type).
 *   int tritonwise_data_ptr(PyObject *tensor, uint64_t *address)
 *       tensor.data_ptr() of an exact torch.Tensor or Parameter: 1, 0 with an exception set,
 *       or -1 for any other object (launch.c then calls its data_ptr method).
 *   PyObject *tritonwise_tensor_key(PyObject *tensor)
 *       runtime/arguments.py's key of a plain tensor, (dtype, shape, stride(), device,
 *       16-byte aligned, is_neg(), requires_grad), equal to what Python builds; NULL with an
 *       exception set where reading one raises (the first, as in Python), NULL without one for
 *       anything but an exact torch.Tensor or Parameter. The shape is asked of Python: torch.Size
 *       has no constructor torch exports.
 *   Py_ssize_t tritonwise_tensor_words(PyObject *tensor, int64_t *words, Py_ssize_t room)
 *       the same key's fields as int64 words, for index.h's table of recent calls: a header
 *       (dtype, device, the three flags, rank: tensor_word below) then the sizes, then the
 *       strides; the number of words written, or -1 (no exception) where the tensor is not an
 *       exact torch.Tensor or Parameter, its rank does not fit `room`, or reading it raises.
 *   tritonwise_recordable, tritonwise_record: a cached call recorded for autograd (recording.h).
 *
 * No C++ exception leaves this file.
 */
#include <Python.h>

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <ATen/ops/empty_strided.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdint>
#include <exception>

namespace {

constexpr Py_ssize_t MAX_RANK = 64;

/* The integers of a tuple into `values`; false (no exception kept) if it is not one of them. */
bool read_ints(PyObject *tuple, int64_t *values, Py_ssize_t rank) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != rank) return false;
    for (Py_ssize_t k = 0; k < rank; ++k) {
        values[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, k));
        if (values[k] == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
    }
    return true;
}

/* The exception `e` as the RuntimeError torch's Python bindings raise for it. */
void set_error(const std::exception &e) {
    auto *error = dynamic_cast<const c10::Error *>(&e);
    PyErr_SetString(PyExc_RuntimeError, error != nullptr ? error->what_without_backtrace() : e.what());
}

PyObject *int_tuple(at::IntArrayRef values) {
    PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
    for (size_t k = 0; tuple != nullptr && k < values.size(); ++k) {
        PyObject *value = PyLong_FromLongLong(values[k]);
        if (value == nullptr) Py_CLEAR(tuple);
        else PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(k), value);
    }
    return tuple;
}

PyObject *shape_name = nullptr;

/* Whether an allocation must go through torch's dispatcher: a dispatch mode would see it, or
 * deterministic mode fills new memory. Else a CUDA allocation takes the CUDA caching allocator
 * directly (what at::empty_strided reaches for CUDA, without the dispatch: 0.5-0.7 µs less per
 * call on an H100 host, docs/performance.md). */
bool needs_dispatch() {
    const at::Context &context = at::globalContext();
    return c10::impl::TorchDispatchModeTLS::any_modes_set() ||
           (context.deterministicAlgorithms() && context.deterministicFillUninitializedMemory());
}

}  // namespace

#include "recording.h"

extern "C" PyObject *tritonwise_empty_strided(PyObject *shape, PyObject *strides, PyObject *dtype, PyObject *device) {
    if (!PyTuple_Check(shape) || !THPDtype_Check(dtype) || !THPDevice_Check(device)) return nullptr;
    if (at::impl::torch_function_mode_enabled()) return nullptr;  /* the mode must see the call */
    Py_ssize_t rank = PyTuple_GET_SIZE(shape);
    int64_t sizes[MAX_RANK], steps[MAX_RANK];
    if (rank > MAX_RANK || !read_ints(shape, sizes, rank) || !read_ints(strides, steps, rank)) return nullptr;
    try {
        const at::Device &where = reinterpret_cast<THPDevice *>(device)->device;
        at::ScalarType type = reinterpret_cast<THPDtype *>(dtype)->scalar_type;
        at::IntArrayRef size(sizes, rank), stride(steps, rank);
        if (where.is_cuda() && !needs_dispatch()) {
            at::Tensor t(at::detail::empty_strided_generic(size, stride, c10::GetAllocator(c10::DeviceType::CUDA),
                                                           c10::DispatchKeySet(c10::DispatchKey::CUDA), type));
            if (t.device() == where) return THPVariable_Wrap(std::move(t));
        }
        return THPVariable_Wrap(at::empty_strided(size, stride, at::TensorOptions().dtype(type).device(where)));
    } catch (const std::exception &e) {
        set_error(e);
        return nullptr;
    }
}

extern "C" int tritonwise_data_ptr(PyObject *tensor, uint64_t *address) {
    if (!THPVariable_CheckExact(tensor)) return -1;
    try {
        *address = reinterpret_cast<uint64_t>(THPVariable_Unpack(tensor).data_ptr());
        return 1;
    } catch (const std::exception &e) {
        set_error(e);
        return 0;
    }
}

extern "C" PyObject *tritonwise_tensor_key(PyObject *tensor) {
    if (!THPVariable_CheckExact(tensor)) return nullptr;
    PyObject *key = PyTuple_New(7);
    if (key == nullptr) return nullptr;
    try {
        const at::Tensor &t = THPVariable_Unpack(tensor);
        PyObject *dtype = reinterpret_cast<PyObject *>(torch::getTHPDtype(t.scalar_type()));
        PyTuple_SET_ITEM(key, 0, Py_NewRef(dtype));
        PyObject *shape = PyObject_GetAttr(tensor, shape_name);
        if (shape == nullptr) {
            Py_DECREF(key);
            return nullptr;
        }
        PyTuple_SET_ITEM(key, 1, shape);
        PyObject *strides = int_tuple(t.strides());
        PyObject *device = strides == nullptr ? nullptr : THPDevice_New(t.device());
        if (device == nullptr) {
            Py_XDECREF(strides);
            Py_DECREF(key);
            return nullptr;
        }
        PyTuple_SET_ITEM(key, 2, strides);
        PyTuple_SET_ITEM(key, 3, device);
        PyTuple_SET_ITEM(key, 4, PyBool_FromLong((reinterpret_cast<uintptr_t>(t.data_ptr()) & 15) == 0));
        PyTuple_SET_ITEM(key, 5, PyBool_FromLong(t.is_neg()));
        PyTuple_SET_ITEM(key, 6, PyBool_FromLong(t.requires_grad()));
        return key;
    } catch (const std::exception &e) {
        Py_DECREF(key);  /* the items set so far go with it */
        set_error(e);
        return nullptr;
    }
}

/* The header word of a tensor's words: every field of the key but the shape and strides, each
 * in its own bits (index.h tells a tensor's header from a scalar's by bit 63). */
static int64_t tensor_word(const at::Tensor &t) {
    uint64_t device = static_cast<uint64_t>(static_cast<uint8_t>(t.device().type())) << 8 |
                      static_cast<uint8_t>(t.device().index() + 1);
    uint64_t flags = ((reinterpret_cast<uintptr_t>(t.data_ptr()) & 15) == 0) | t.is_neg() << 1 |
                     t.requires_grad() << 2;
    return static_cast<int64_t>(1ULL << 63 | static_cast<uint64_t>(t.dim()) << 40 | flags << 32 | device << 16 |
                                static_cast<uint8_t>(t.scalar_type()));
}

extern "C" Py_ssize_t tritonwise_tensor_words(PyObject *tensor, int64_t *words, Py_ssize_t room) {
    if (!THPVariable_CheckExact(tensor)) return -1;
    try {
        const at::Tensor &t = THPVariable_Unpack(tensor);
        Py_ssize_t rank = t.dim();
        if (1 + 2 * rank > room) return -1;
        words[0] = tensor_word(t);
        for (Py_ssize_t k = 0; k < rank; ++k) {
            words[1 + k] = t.size(k);
            words[1 + rank + k] = t.stride(k);
        }
        return 1 + 2 * rank;
    } catch (const std::exception &) {
        return -1;  /* the key's own reading raises it again, on the path that reports it */
    }
}

static PyObject *addresses(PyObject *, PyObject *) {
    return Py_BuildValue("(KKKKKK)", reinterpret_cast<unsigned long long>(&tritonwise_empty_strided),
                         reinterpret_cast<unsigned long long>(&tritonwise_data_ptr),
                         reinterpret_cast<unsigned long long>(&tritonwise_tensor_key),
                         reinterpret_cast<unsigned long long>(&tritonwise_tensor_words),
                         reinterpret_cast<unsigned long long>(&tritonwise_recordable),
                         reinterpret_cast<unsigned long long>(&tritonwise_record));
}

static PyMethodDef methods[] = {
    {"addresses", addresses, METH_NOARGS,
     "The helpers' addresses: empty_strided, data_ptr, tensor_key, tensor_words, recordable, record."},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tritonwise_aten", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__tritonwise_aten(void) {
    shape_name = PyUnicode_InternFromString("shape");
    return shape_name == nullptr ? nullptr : PyModule_Create(&module);
}
