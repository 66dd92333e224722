#include "python/enqueue_args.h"

#include <climits>

#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {

// ---------------------------------------------------------------- value rules

Status CheckDtypeCode(int code) {
  if (IsValidDataType(code)) return Status::OK();
  return Status::InvalidArgument("unknown dtype code " + std::to_string(code));
}

Status CheckDevice(const DeviceArg& device) {
  if (device.ref != nullptr || device.bare_index < 0) return Status::OK();
  return Status::InvalidArgument(
      "an accelerator tensor must be described by a DeviceRef (type, index, stream), not a bare "
      "index");
}

Status CheckGroupLength(size_t got, size_t names, const char* what) {
  if (got == names) return Status::OK();
  return Status::InvalidArgument(std::string("grouped op: ") + what + " has the wrong length (" +
                                 std::to_string(got) + " entries for " + std::to_string(names) +
                                 " names)");
}

// ---------------------------------------------------------------- type rules

namespace {

const char* TypeName(PyObject* o) { return Py_TYPE(o)->tp_name; }

// str(o), for a message; "?" if that fails.
std::string Text(PyObject* o) {
  py::object s = py::reinterpret_steal<py::object>(PyObject_Str(o));
  if (!s) {
    PyErr_Clear();
    return "?";
  }
  const char* c = PyUnicode_AsUTF8(s.ptr());
  if (c == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return c;
}

// After a C API conversion of `o` failed with a Python error set: true (error
// cleared) if it was `type`.
bool Took(PyObject* type) {
  if (!PyErr_ExceptionMatches(type)) return false;
  PyErr_Clear();
  return true;
}

}  // namespace

EnqueueCall::EnqueueCall(const char* signature, Py_ssize_t arity, PyObject* const* args,
                         Py_ssize_t nargs, Py_ssize_t nkwargs)
    : signature_(signature), args_(args) {
  if (nkwargs > 0) Fail(PyExc_TypeError, Label{nullptr}, "takes no keyword arguments");
  if (nargs != arity)
    Fail(PyExc_TypeError, Label{nullptr},
         "takes " + std::to_string(arity) + " positional arguments, got " + std::to_string(nargs));
}

EnqueueCall::Label EnqueueCall::Label::At(Py_ssize_t k) const {
  Label l = *this;
  l.index[index[0] < 0 ? 0 : 1] = k;
  return l;
}

std::string EnqueueCall::Label::Text() const {
  std::string t = name;
  for (Py_ssize_t k : index)
    if (k >= 0) t += "[" + std::to_string(k) + "]";
  return t;
}

void EnqueueCall::Fail(PyObject* type, const Label& what, const std::string& message) const {
  std::string text = std::string(signature_) + ": ";
  if (what.name != nullptr) text += what.Text() + " ";
  PyErr_SetString(type, (text + message).c_str());
  throw py::error_already_set();
}

std::string EnqueueCall::Str(PyObject* o, const Label& what) const {
  if (!PyUnicode_Check(o))
    Fail(PyExc_TypeError, what, std::string("must be a str, not ") + TypeName(o));
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(o, &n);
  if (s == nullptr) throw py::error_already_set();  // e.g. a lone surrogate
  return std::string(s, static_cast<size_t>(n));
}

int EnqueueCall::Int32(PyObject* o, const Label& what) const {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    if (Took(PyExc_TypeError))
      Fail(PyExc_TypeError, what, std::string("must be an int, not ") + TypeName(o));
    if (Took(PyExc_OverflowError)) Fail(PyExc_OverflowError, what, Text(o) + " is out of range");
    throw py::error_already_set();
  }
  // Never truncated: a dtype or process set beyond a C int must not wrap to
  // another valid value.
  if (v < INT_MIN || v > INT_MAX) Fail(PyExc_OverflowError, what, Text(o) + " is out of range");
  return static_cast<int>(v);
}

uintptr_t EnqueueCall::Address(PyObject* o, const Label& what) const {
  // PyLong_AsUnsignedLongLong takes ints only; an integer-like object (a
  // numpy integer) is converted first, as PyLong_AsLongLong does for Int32.
  py::object index;
  if (!PyLong_Check(o) && PyIndex_Check(o)) {
    index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!index) throw py::error_already_set();
  }
  const unsigned long long v = PyLong_AsUnsignedLongLong(index ? index.ptr() : o);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    if (Took(PyExc_TypeError))
      Fail(PyExc_TypeError, what,
           std::string("must be an int (a memory address), not ") + TypeName(o));
    if (Took(PyExc_OverflowError))
      Fail(PyExc_OverflowError, what,
           Text(o) + " is out of range (a memory address is an int >= 0)");
    throw py::error_already_set();
  }
  return static_cast<uintptr_t>(v);
}

Shape EnqueueCall::Int64s(PyObject* o, const Label& what) const {
  auto item = [&](PyObject* x, Py_ssize_t k) -> int64_t {
    const long long v = PyLong_AsLongLong(x);
    if (v == -1 && PyErr_Occurred()) {
      if (Took(PyExc_TypeError))
        Fail(PyExc_TypeError, what.At(k), std::string("must be an int, not ") + TypeName(x));
      if (Took(PyExc_OverflowError))
        Fail(PyExc_OverflowError, what.At(k), Text(x) + " is out of range");
      throw py::error_already_set();
    }
    return v;
  };
  // A tuple (torch.Size is a subclass, which PySequence_Fast would copy into
  // a new list) is read in place.
  if (PyTuple_Check(o)) {
    const Py_ssize_t n = PyTuple_GET_SIZE(o);
    Shape out(static_cast<size_t>(n));
    for (Py_ssize_t k = 0; k < n; ++k)
      out[static_cast<size_t>(k)] = item(PyTuple_GET_ITEM(o, k), k);
    return out;
  }
  py::object seq = Items(o, what, "ints");
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  Shape out(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) out[static_cast<size_t>(k)] = item(items[k], k);
  return out;
}

py::object EnqueueCall::Items(PyObject* o, const Label& what, const char* of) const {
  if (!PyUnicode_Check(o) && !PyBytes_Check(o)) {
    py::object seq = py::reinterpret_steal<py::object>(PySequence_Fast(o, ""));
    if (seq) return seq;
    if (!Took(PyExc_TypeError)) throw py::error_already_set();
  }
  Fail(PyExc_TypeError, what, std::string("must be a sequence of ") + of + ", not " + TypeName(o));
}

double EnqueueCall::Float(PyObject* o, const Label& what) const {
  const double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) {
    if (Took(PyExc_TypeError))
      Fail(PyExc_TypeError, what, std::string("must be a float, not ") + TypeName(o));
    throw py::error_already_set();
  }
  return v;
}

DeviceArg EnqueueCall::Device(PyObject* o, const Label& what) const {
  DeviceArg d;
  if (py::isinstance<DeviceRef>(o)) {
    d.ref = &py::handle(o).cast<const DeviceRef&>();
    return d;
  }
  if (!PyLong_Check(o) && !PyIndex_Check(o))
    Fail(PyExc_TypeError, what, std::string("must be -1 (CPU) or a DeviceRef, not ") + TypeName(o));
  d.bare_index = Int32(o, what);
  return d;
}

template <typename T>
std::vector<T> EnqueueCall::ListOf(Py_ssize_t i, const char* what, const char* of,
                                   T (EnqueueCall::*read)(PyObject*, const Label&) const) const {
  const Label label{what};
  py::object seq = Items(args_[i], label, of);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  std::vector<T> out;
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) out.push_back((this->*read)(items[k], label.At(k)));
  return out;
}

std::vector<std::string> EnqueueCall::StrList(Py_ssize_t i, const char* what) const {
  return ListOf(i, what, "str", &EnqueueCall::Str);
}

std::vector<int> EnqueueCall::Int32List(Py_ssize_t i, const char* what) const {
  return ListOf(i, what, "ints", &EnqueueCall::Int32);
}

std::vector<uintptr_t> EnqueueCall::AddressList(Py_ssize_t i, const char* what) const {
  return ListOf(i, what, "ints", &EnqueueCall::Address);
}

std::vector<Shape> EnqueueCall::ShapeList(Py_ssize_t i, const char* what) const {
  return ListOf(i, what, "shapes", &EnqueueCall::Int64s);
}

// ---------------------------------------------------------------- submitting

EnqueueArgs Args(RequestType type, std::string name, int ps, uintptr_t in, uintptr_t out,
                 int dtype, Shape shape, const DeviceArg& device) {
  Check(CheckDtypeCode(dtype));
  Check(CheckDevice(device));
  EnqueueArgs a;
  a.type = type;
  a.name = std::move(name);
  a.process_set_id = ps;
  a.input = reinterpret_cast<const void*>(in);
  a.output = reinterpret_cast<void*>(out);
  a.dtype = static_cast<DataType>(dtype);
  a.shape = std::move(shape);
  if (device.ref == nullptr) {
    a.device = device.bare_index;
  } else {
    a.device = device.ref->index;
    a.device_type = device.ref->type;
    a.stream = reinterpret_cast<void*>(device.ref->stream);
  }
  return a;
}

std::vector<std::shared_ptr<Work>> Submit(Runtime& rt, std::vector<EnqueueArgs> ops) {
  std::vector<std::shared_ptr<Work>> works;
  Check(rt.Enqueue(std::move(ops), &works));
  return works;
}

std::shared_ptr<Work> SubmitOne(Runtime& rt, EnqueueArgs a) {
  std::shared_ptr<Work> work;
  Check(rt.EnqueueOne(std::move(a), &work));
  return work;
}

}  // namespace python
}  // namespace hvda
