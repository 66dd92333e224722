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

  std::string Str(Py_ssize_t i, const char* what) const;
  // A Python int that fits a C int (OverflowError otherwise).
  int Int32(Py_ssize_t i, const char* what) const;
  // A Python int >= 0 (a memory address; OverflowError otherwise).
  uintptr_t Address(Py_ssize_t i, const char* what) const;
  // A float, or anything float() takes without parsing (an int, a numpy scalar).
  double Float(Py_ssize_t i, const char* what) const;
  // A sequence of ints (a tuple, a torch.Size, a list, a range, ...).
  Shape Int64s(Py_ssize_t i, const char* what) const;
  // An int (-1: CPU) or a DeviceRef; Args applies CheckDevice.
  DeviceArg Device(Py_ssize_t i, const char* what) const;

  // Grouped ops: a sequence (not a str) of the element kinds above.
  std::vector<std::string> StrList(Py_ssize_t i, const char* what) const;
  std::vector<int> Int32List(Py_ssize_t i, const char* what) const;
  std::vector<uintptr_t> AddressList(Py_ssize_t i, const char* what) const;
  std::vector<Shape> ShapeList(Py_ssize_t i, const char* what) const;

 private:
  [[noreturn]] void Fail(PyObject* type, const std::string& message) const;
  std::string Str(PyObject* o, const std::string& what) const;
  int Int32(PyObject* o, const std::string& what) const;
  uintptr_t Address(PyObject* o, const std::string& what) const;
  Shape Int64s(PyObject* o, const std::string& what) const;
  // The items of the sequence `o` (a new reference holding them alive);
  // TypeError for a non-sequence or a str.
  pybind11::object Items(PyObject* o, const std::string& what, const char* of) const;

  const char* signature_;
  PyObject* const* args_;
};

// ---------------------------------------------------------------- submitting

// The fields every op shares, from values EnqueueCall read. Applies the
// value rules (CheckDtypeCode, then CheckDevice): ValueError.
EnqueueArgs Args(RequestType type, std::string name, int ps, uintptr_t in, uintptr_t out,
                 int dtype, Shape shape, const DeviceArg& device);

// The leading arguments every single-tensor method takes, (name,
// process_set, input[, output], dtype, shape, device) from argument 0, read
// and passed to Args. *next: the index of the argument after them.
EnqueueArgs ReadTensor(const EnqueueCall& c, RequestType type, bool has_output, Py_ssize_t* next);
// The trailing (op, prescale, postscale) of the reducing ops, from argument i.
void ReadReduction(const EnqueueCall& c, Py_ssize_t i, EnqueueArgs* a);

// Enqueues ops as one group (Runtime::Enqueue); raises the Python exception
// of a refused enqueue (RaiseStatus).
std::vector<std::shared_ptr<Work>> Submit(Runtime& rt, std::vector<EnqueueArgs> ops);
// One op, moved in (Runtime::EnqueueOne: no vectors on the per-op path).
std::shared_ptr<Work> SubmitOne(Runtime& rt, EnqueueArgs a);

}  // namespace python
}  // namespace hvda
