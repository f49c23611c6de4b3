/* Recording a cached call for autograd in C++ (included by aten.cpp): the node a recorded call's
 * outputs take as grad_fn, and the two helpers launch.c calls around a recording plan's launch.
 *
 *   int tritonwise_recordable(PyObject *args)
 *       1 where the call must be recorded (grad mode on), 0 where it runs plain (grad mode off,
 *       as Python's autograd.call runs it), -1 where C must leave the call to Python (a tensor
 *       with a forward-mode gradient).
 *   int tritonwise_record(PyObject *results, PyObject *args, PyObject *recorder)
 *       make the launched call's floating outputs (`results`: a tensor or a tuple) the outputs
 *       of a new RecordedCall over the tensor arguments; 0, or -1 with an exception set.
 *
 * `recorder` is what features/autograd.py's recorder() builds once per recorded signature:
 * (backward, differentiable), `backward(args, grads, needs)` the Python function that computes
 * the input gradients (features/autograd.py's `backward_of`, bound to the function), and
 * `differentiable` one bool per output. The node keeps the tensor arguments as SavedVariables
 * (version-checked, under saved-tensor hooks, as save_for_backward keeps them) and the scalar
 * arguments as they were passed; its backward calls `backward` with the arguments, one gradient
 * per output (None where none flows) and whether each argument's gradient is needed.
 *
 * torch 2.13 made autograd nodes intrusive_ptr's, before it shared_ptr's: `NodeHandle` is
 * whichever the installed headers use.
 */
#include <ATen/core/grad_mode.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <type_traits>
#include <vector>

namespace {

using torch::autograd::Node;
using NodeHandle = decltype(std::declval<torch::autograd::Edge>().function);

/* The GIL for a scope, on whatever thread (the autograd engine's run without it). */
struct Gil {
    PyGILState_STATE state = PyGILState_Ensure();
    ~Gil() { PyGILState_Release(state); }
};

struct RecordedCall : Node {
    PyObject *backward = nullptr;   /* backward(args, grads, needs) */
    PyObject *arguments = nullptr;  /* the call's arguments, each tensor as None */
    std::vector<torch::autograd::SavedVariable> tensors;
    std::vector<Py_ssize_t> positions; /* each saved tensor's argument position; next edge k is tensor k's */
    std::vector<bool> differentiable;  /* per output; input metadata k is the k-th differentiable one */

    ~RecordedCall() override {
        if (!Py_IsInitialized()) return;  /* at exit: the interpreter owns nothing any more */
        Gil gil;
        Py_XDECREF(backward);
        Py_XDECREF(arguments);
    }

    std::string name() const override { return "TritonwiseBackward"; }

    void release_variables() override {
        for (auto &t : tensors) t.reset_data(); /* unpack() then raises what torch raises for a freed graph */
    }

    torch::autograd::variable_list apply(torch::autograd::variable_list &&grads) override {
        Gil gil;
        PyObject *args = python_arguments(), *flowing = args == nullptr ? nullptr : python_grads(grads);
        PyObject *needs = flowing == nullptr ? nullptr : python_needs();
        PyObject *result =
            needs == nullptr ? nullptr : PyObject_CallFunctionObjArgs(backward, args, flowing, needs, NULL);
        Py_XDECREF(args);
        Py_XDECREF(flowing);
        Py_XDECREF(needs);
        torch::autograd::variable_list inputs_grads(positions.size());
        PyObject *items = result == nullptr ? nullptr : PySequence_Fast(result, "the backward returns a sequence");
        Py_XDECREF(result);
        if (items == nullptr) throw_error();
        for (size_t k = 0; k < positions.size(); ++k) {
            Py_ssize_t at = positions[k];
            PyObject *g = at < PySequence_Fast_GET_SIZE(items) ? PySequence_Fast_GET_ITEM(items, at) : Py_None;
            if (THPVariable_Check(g)) inputs_grads[k] = THPVariable_Unpack(g);
        }
        Py_DECREF(items);
        return inputs_grads;
    }

  private:
    [[noreturn]] static void throw_error() { /* the Python exception set, for the engine to re-raise */
        python_error error;
        error.persist();
        throw error;
    }

    /* The call's arguments with the saved tensors in their places, detached as _Record's saved
     * ones are, so the backward's own calls take the C path (unpacking raises, before any Python
     * object is made, for a freed graph or a tensor changed in place). */
    PyObject *python_arguments() {
        std::vector<at::Tensor> unpacked;
        for (const auto &t : tensors) unpacked.push_back(t.unpack().detach());
        PyObject *args = PyTuple_New(PyTuple_GET_SIZE(arguments));
        for (Py_ssize_t k = 0; args != nullptr && k < PyTuple_GET_SIZE(arguments); ++k)
            PyTuple_SET_ITEM(args, k, Py_NewRef(PyTuple_GET_ITEM(arguments, k)));
        for (size_t k = 0; args != nullptr && k < tensors.size(); ++k) {
            PyObject *tensor = THPVariable_Wrap(unpacked[k]);
            if (tensor == nullptr) Py_CLEAR(args);
            else Py_SETREF(PyTuple_GET_ITEM(args, positions[k]), tensor);
        }
        return args;
    }

    /* One gradient per output, None for the outputs that are not differentiable or got none. */
    PyObject *python_grads(const torch::autograd::variable_list &grads) {
        PyObject *flowing = PyTuple_New(static_cast<Py_ssize_t>(differentiable.size()));
        for (size_t k = 0, g = 0; flowing != nullptr && k < differentiable.size(); ++k) {
            bool given = differentiable[k] && g < grads.size() && grads[g].defined();
            PyObject *item = given ? THPVariable_Wrap(grads[g]) : Py_NewRef(Py_None);
            g += differentiable[k];
            if (item == nullptr) Py_CLEAR(flowing);
            else PyTuple_SET_ITEM(flowing, static_cast<Py_ssize_t>(k), item);
        }
        return flowing;
    }

    /* Per argument, whether its gradient is needed. */
    PyObject *python_needs() {
        PyObject *needs = PyTuple_New(PyTuple_GET_SIZE(arguments));
        for (Py_ssize_t k = 0; needs != nullptr && k < PyTuple_GET_SIZE(arguments); ++k)
            PyTuple_SET_ITEM(needs, k, Py_NewRef(Py_False));
        for (size_t k = 0; needs != nullptr && k < positions.size(); ++k)
            Py_SETREF(PyTuple_GET_ITEM(needs, positions[k]), PyBool_FromLong(should_compute_output(k)));
        return needs;
    }
};

/* A new T held as the installed torch holds nodes (a template, so that only that branch compiles). */
template <typename T, typename Handle = NodeHandle>
Handle new_node() {
    if constexpr (std::is_same_v<Handle, std::shared_ptr<Node>>) {
        return Handle(new T());
    } else {
        return c10::make_intrusive<T>();
    }
}

}  // namespace

extern "C" int tritonwise_recordable(PyObject *args) {
    if (!at::GradMode::is_enabled()) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args); ++k) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        if (THPVariable_Check(a) && THPVariable_Unpack(a)._fw_grad(/*level=*/0).defined()) return -1;
    }
    return 1;
}

extern "C" int tritonwise_record(PyObject *results, PyObject *args, PyObject *recorder) {
    PyObject *backward, *differentiable;
    if (!PyArg_ParseTuple(recorder, "OO!", &backward, &PyTuple_Type, &differentiable)) return -1;
    Py_ssize_t n_out = PyTuple_GET_SIZE(differentiable);
    bool one = THPVariable_Check(results);
    if (!one && !(PyTuple_Check(results) && PyTuple_GET_SIZE(results) == n_out)) {
        PyErr_SetString(PyExc_ValueError, "record: the results do not match the recorder's outputs");
        return -1;
    }
    try {
        NodeHandle handle = new_node<RecordedCall>();
        auto *node = static_cast<RecordedCall *>(handle.get());
        torch::autograd::edge_list edges;
        node->backward = Py_NewRef(backward);
        node->arguments = PyTuple_New(PyTuple_GET_SIZE(args)); /* the node's own from here: freed with it */
        if (node->arguments == nullptr) return -1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args); ++k) {
            PyObject *a = PyTuple_GET_ITEM(args, k);
            bool tensor = THPVariable_Check(a);
            PyTuple_SET_ITEM(node->arguments, k, Py_NewRef(tensor ? Py_None : a));
            if (!tensor) continue;
            const at::Tensor &t = THPVariable_Unpack(a);
            edges.push_back(torch::autograd::impl::gradient_edge(t));
            node->tensors.emplace_back(t, /*is_output=*/false);
            node->positions.push_back(k);
        }
        node->set_next_edges(std::move(edges));
        for (Py_ssize_t k = 0; k < n_out; ++k) {
            bool flows = PyObject_IsTrue(PyTuple_GET_ITEM(differentiable, k)) == 1;
            node->differentiable.push_back(flows);
            if (!flows) continue;
            at::Tensor out = THPVariable_Unpack(one ? results : PyTuple_GET_ITEM(results, k));
            torch::autograd::create_gradient_edge(out, handle);
        }
        return 0;
    } catch (python_error &e) {
        e.restore();
        return -1;
    } catch (const std::exception &e) {
        set_error(e);
        return -1;
    }
}
