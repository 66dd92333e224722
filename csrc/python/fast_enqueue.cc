// Runtime.enqueue_allreduce as a METH_FASTCALL method.
//
// NOTE [Per-op binding]: a small allreduce's cost is mostly per-op overhead,
// and pybind11's generic dispatch (argument loaders for ten arguments, then
// the call) took about a third of the binding's time per op. This method
// reads the same ten positional arguments straight from the vector CPython
// passes and converts them with the C API. Its arguments, results and
// exceptions are those of the pybind11 definition it replaces:
//   enqueue_allreduce(name: str, process_set: int, input: int, output: int,
//                     dtype: int, shape: sequence of int, device: -1 | DeviceRef,
//                     op: int, prescale: float, postscale: float) -> Work
// ValueError for an argument the core refuses (unknown dtype, name in
// flight, ...), NotImplementedError for a valid request this build does not
// offer (Adasum on a process set), TypeError for a wrong Python type or argument count,
// CollectiveError for a core failure.
#include <pybind11/pybind11.h>

#include <climits>
#include <string>

#include "python/enqueue_args.h"
#include "python/guarded_call.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

constexpr const char* kSignature =
    "enqueue_allreduce(name, process_set, input, output, dtype, shape, device, op, prescale, "
    "postscale)";

[[noreturn]] void TypeError(const std::string& what) {
  throw py::type_error(std::string(kSignature) + ": " + what);
}

// The C API functions below set a Python error and return -1 / null on
// failure; this turns that into a C++ exception carrying it.
void ThrowIfPythonError() {
  if (PyErr_Occurred()) throw py::error_already_set();
}

std::string StrArg(PyObject* o, const char* what) {
  if (!PyUnicode_Check(o)) TypeError(std::string(what) + " must be a str");
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(o, &n);
  if (s == nullptr) throw py::error_already_set();
  return std::string(s, static_cast<size_t>(n));
}

long long IntArg(PyObject* o) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1) ThrowIfPythonError();
  return v;
}

// An int argument the core stores as a C int; OverflowError outside its range
// (pybind11's definition refused those too, instead of truncating them).
int Int32Arg(PyObject* o, const char* what) {
  const long long v = IntArg(o);
  if (v < INT_MIN || v > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError,
                    (std::string(kSignature) + ": " + what + " " + std::to_string(v) +
                     " is out of range")
                        .c_str());
    throw py::error_already_set();
  }
  return static_cast<int>(v);
}

uintptr_t AddressArg(PyObject* o) {
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (v == static_cast<unsigned long long>(-1)) ThrowIfPythonError();
  return static_cast<uintptr_t>(v);
}

double FloatArg(PyObject* o) {
  double v = PyFloat_AsDouble(o);
  if (v == -1.0) ThrowIfPythonError();
  return v;
}

// A tuple (torch.Size is a subclass, which PySequence_Fast would copy into a
// new list), a list, or any other sequence of ints.
Shape ShapeArg(PyObject* o) {
  if (PyTuple_Check(o)) {
    const Py_ssize_t n = PyTuple_GET_SIZE(o);
    Shape shape(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) shape[static_cast<size_t>(i)] = IntArg(PyTuple_GET_ITEM(o, i));
    return shape;
  }
  py::object seq = py::reinterpret_steal<py::object>(
      PySequence_Fast(o, "shape must be a sequence of ints"));
  if (!seq) throw py::error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  Shape shape(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) shape[static_cast<size_t>(i)] = IntArg(items[i]);
  return shape;
}

PyObject* EnqueueAllreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  return Guarded([&] {
    if (nargs != 10) TypeError("takes 10 positional arguments, got " + std::to_string(nargs));
    Runtime& rt = py::handle(self).cast<Runtime&>();
    EnqueueArgs a = Args(RequestType::kAllreduce, StrArg(args[0], "name"),
                         Int32Arg(args[1], "process_set"), AddressArg(args[2]),
                         AddressArg(args[3]), Int32Arg(args[4], "dtype"), ShapeArg(args[5]),
                         py::handle(args[6]));
    a.op = static_cast<ReduceOp>(Int32Arg(args[7], "op"));
    a.prescale = FloatArg(args[8]);
    a.postscale = FloatArg(args[9]);
    return NewWorkHandle(SubmitOne(rt, std::move(a)));
  });
}

}  // namespace

void BindFastEnqueue(py::module_& m) {
  // Lives as long as the module (CPython keeps a pointer to it in the
  // method descriptor); never written after initialisation.
  static PyMethodDef def = {
      "enqueue_allreduce", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&EnqueueAllreduce)),
      METH_FASTCALL,
      "enqueue_allreduce(name, process_set, input, output, dtype, shape, device, op, prescale, "
      "postscale) -> Work: enqueues one allreduce (NOTE [Per-op binding] in fast_enqueue.cc)."};
  py::object cls = m.attr("Runtime");
  py::object descr = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def));
  if (!descr) throw py::error_already_set();
  cls.attr("enqueue_allreduce") = descr;
}

}  // namespace python
}  // namespace hvda
