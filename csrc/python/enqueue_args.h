// Internal to the _core extension: the one home of the enqueue bindings'
// argument rules, and how they submit what they read.
//
// NOTE [One home for enqueue rules]: Runtime.enqueue_* come in two kinds, the
// METH_FASTCALL per-op allreduce (fast_enqueue.cc, NOTE [Per-op binding]) and
// pybind11 definitions for every other op (enqueue_binding.cc). Both read
// their positional arguments through EnqueueCall and check the values with
// the Check* rules below, so the same bad argument gets the same exception
// and message whichever method it reaches:
//   - Python types and ranges (EnqueueCall): TypeError for a wrong argument
//     count, a keyword argument or a wrong type, OverflowError for an int
//     the core cannot hold (never truncated into another valid value);
//   - values the binding refuses (Check*: dtype code, bare accelerator index,
//     group lengths): a Status, raised as ValueError;
//   - what the core refuses (shapes, reduce op, process set, root rank,
//     splits, Adasum, a name in flight; BuildRequest in
//     csrc/common/request_builder.cc and Runtime): the core's Status, raised
//     by Submit / SubmitOne (RaiseStatus in bindings.h).
// Every method reads the tensor's arguments (ReadTensor / the grouped
// ReadGroup), applies the value rules (Args), then reads the op's own
// trailing arguments (ReadReduction, root_rank, splits) and submits; the
// first error raises. No binding checks an argument itself; the C API
// (core_c_api.cc) shares CheckDtypeCode. tests/python/test_enqueue_paths_agree.py
// feeds both kinds the same bad arguments and expects the same errors.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/runtime.h"
#include "python/work_handle.h"

namespace hvda {
namespace python {

using Shape = std::vector<int64_t>;

// Where a tensor lives, as the framework adapter says it: -1 (CPU, upstream's
// convention) or a DeviceRef (accelerator type, index, native stream).
struct DeviceRef {
  std::string type;
  int index = 0;
  uintptr_t stream = 0;  // the framework's current native stream; 0: default stream
};

// A tensor's device as one enqueue call was given it: a bare index (only -1,
// the CPU, is valid) or a DeviceRef, borrowed from the call's argument (valid
// until the call returns).
struct DeviceArg {
  int bare_index = -1;
  const DeviceRef* ref = nullptr;
};

// ---------------------------------------------------------------- value rules
// Each takes converted C++ values and returns OK or InvalidArgument with the
// user-facing message. Thread-safe; no GIL needed.

// `code` is one of _core.DTYPE_*: "unknown dtype code N" otherwise.
Status CheckDtypeCode(int code);
// A bare device index is the CPU (-1): an accelerator index must come as a
// DeviceRef.
Status CheckDevice(const DeviceArg& device);
// A grouped op's per-tensor list `what` has one entry per name.
Status CheckGroupLength(size_t got, size_t names, const char* what);

// ---------------------------------------------------------------- type rules

// The positional arguments of one call of an enqueue method, read with the
// rules of NOTE [One home for enqueue rules]. Every reader raises a Python
// exception (thrown as pybind11::error_already_set) whose message starts with
// the method's signature and names the argument. Borrows `args` for the
// duration of the call; needs the GIL.
class EnqueueCall {
 public:
  // signature: "enqueue_x(a, b, ...)" (a string literal: it is kept); arity:
  // how many positional arguments it takes. TypeError unless nargs == arity
  // and there are no keyword arguments (nkwargs: how many were given).
  EnqueueCall(const char* signature, Py_ssize_t arity, PyObject* const* args, Py_ssize_t nargs,
              Py_ssize_t nkwargs);

  // The readers of one argument. The per-op common case (an exact str,
  // int or float) is read inline; anything else, and every error, goes to
  // the general reader in enqueue_args.cc (NOTE [Per-op binding]: calls
  // are a visible share of a small op).
  std::string Str(Py_ssize_t i, const char* what) const;
  // A Python int that fits a C int (OverflowError otherwise).
  int Int32(Py_ssize_t i, const char* what) const;
  // A Python int >= 0 (a memory address; OverflowError otherwise).
  uintptr_t Address(Py_ssize_t i, const char* what) const;
  // A float, or anything float() takes without parsing (an int, a numpy scalar).
  double Float(Py_ssize_t i, const char* what) const;
  // A sequence of ints (a tuple, a torch.Size, a list, a range, ...).
  Shape Int64s(Py_ssize_t i, const char* what) const { return Int64s(args_[i], Label{what}); }
  // An int (-1: CPU) or a DeviceRef; Args applies CheckDevice.
  DeviceArg Device(Py_ssize_t i, const char* what) const;

  // Grouped ops: a sequence (not a str) of the element kinds above.
  std::vector<std::string> StrList(Py_ssize_t i, const char* what) const;
  std::vector<int> Int32List(Py_ssize_t i, const char* what) const;
  std::vector<uintptr_t> AddressList(Py_ssize_t i, const char* what) const;
  std::vector<Shape> ShapeList(Py_ssize_t i, const char* what) const;

 private:
  // What a message calls an argument or an element of one ("shape",
  // "shapes[0][1]"): spelled out only when an error is raised, so reading a
  // good argument builds no string.
  struct Label {
    const char* name;
    Py_ssize_t index[2] = {-1, -1};
    Label At(Py_ssize_t k) const;  // element k of what this names
    std::string Text() const;
  };

  [[noreturn]] void Fail(PyObject* type, const Label& what, const std::string& message) const;
  // The general readers.
  std::string Str(PyObject* o, const Label& what) const;
  int Int32(PyObject* o, const Label& what) const;
  uintptr_t Address(PyObject* o, const Label& what) const;
  double Float(PyObject* o, const Label& what) const;
  Shape Int64s(PyObject* o, const Label& what) const;
  DeviceArg Device(PyObject* o, const Label& what) const;
  // The items of the sequence `o` (a new reference holding them alive);
  // TypeError for a non-sequence or a str.
  pybind11::object Items(PyObject* o, const Label& what, const char* of) const;
  // Argument i as a sequence (Items) of elements read by `read`, a general
  // reader above (e.g. &EnqueueCall::Int32).
  template <typename T>
  std::vector<T> ListOf(Py_ssize_t i, const char* what, const char* of,
                        T (EnqueueCall::*read)(PyObject*, const Label&) const) const;

  const char* signature_;
  PyObject* const* args_;
};

inline std::string EnqueueCall::Str(Py_ssize_t i, const char* what) const {
  PyObject* o = args_[i];
  if (PyUnicode_CheckExact(o)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s != nullptr) return std::string(s, static_cast<size_t>(n));
    PyErr_Clear();  // the general reader raises it again
  }
  return Str(o, Label{what});
}

inline int EnqueueCall::Int32(Py_ssize_t i, const char* what) const {
  PyObject* o = args_[i];
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    const long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow == 0 && v >= INT_MIN && v <= INT_MAX) return static_cast<int>(v);
  }
  return Int32(o, Label{what});
}

inline uintptr_t EnqueueCall::Address(Py_ssize_t i, const char* what) const {
  PyObject* o = args_[i];
  if (PyLong_CheckExact(o)) {
    const unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v != static_cast<unsigned long long>(-1) || !PyErr_Occurred())
      return static_cast<uintptr_t>(v);
    PyErr_Clear();  // the general reader raises it again
  }
  return Address(o, Label{what});
}

inline double EnqueueCall::Float(Py_ssize_t i, const char* what) const {
  PyObject* o = args_[i];
  if (PyFloat_CheckExact(o)) return PyFloat_AS_DOUBLE(o);
  return Float(o, Label{what});
}

inline DeviceArg EnqueueCall::Device(Py_ssize_t i, const char* what) const {
  PyObject* o = args_[i];
  if (PyLong_CheckExact(o)) {  // CPU tensors (-1), the per-op common case
    int overflow = 0;
    const long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow == 0 && v >= INT_MIN && v <= INT_MAX)
      return DeviceArg{static_cast<int>(v), nullptr};
  }
  return Device(o, Label{what});
}

// ---------------------------------------------------------------- submitting

// The fields every op shares, from values EnqueueCall read. Applies the
// value rules (CheckDtypeCode, then CheckDevice): ValueError.
EnqueueArgs Args(RequestType type, std::string name, int ps, uintptr_t in, uintptr_t out,
                 int dtype, Shape shape, const DeviceArg& device);

// The leading arguments every single-tensor method takes, (name,
// process_set, input[, output], dtype, shape, device) from argument 0, read
// and passed to Args. *next: the index of the argument after them.
// (Inline: the per-op path.)
inline EnqueueArgs ReadTensor(const EnqueueCall& c, RequestType type, bool has_output,
                              Py_ssize_t* next) {
  Py_ssize_t i = 0;
  std::string name = c.Str(i++, "name");
  const int ps = c.Int32(i++, "process_set");
  const uintptr_t in = c.Address(i++, "input");
  const uintptr_t out = has_output ? c.Address(i++, "output") : 0;
  const int dtype = c.Int32(i++, "dtype");
  Shape shape = c.Int64s(i++, "shape");
  const DeviceArg device = c.Device(i++, "device");
  *next = i;
  return Args(type, std::move(name), ps, in, out, dtype, std::move(shape), device);
}

// The trailing (op, prescale, postscale) of the reducing ops, from argument i.
inline void ReadReduction(const EnqueueCall& c, Py_ssize_t i, EnqueueArgs* a) {
  a->op = static_cast<ReduceOp>(c.Int32(i, "op"));
  a->prescale = c.Float(i + 1, "prescale");
  a->postscale = c.Float(i + 2, "postscale");
}

// Enqueues ops as one group (Runtime::Enqueue); raises the Python exception
// of a refused enqueue (RaiseStatus).
std::vector<std::shared_ptr<Work>> Submit(Runtime& rt, std::vector<EnqueueArgs> ops);
// One op, moved in (Runtime::EnqueueOne: no vectors on the per-op path).
std::shared_ptr<Work> SubmitOne(Runtime& rt, EnqueueArgs a);

}  // namespace python
}  // namespace hvda
