// Internal to the _core extension: the exception boundary of the methods
// written against the CPython C API (METH_FASTCALL functions), which must
// not let a C++ exception escape into the interpreter.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

namespace hvda {
namespace python {

// Runs fn (returning a new reference, or nullptr with a Python error set) and
// turns a pybind11 or C++ exception it throws into the matching Python
// error: nullptr is returned then.
template <typename Fn>
PyObject* Guarded(Fn&& fn) {
  try {
    return fn();
  } catch (pybind11::error_already_set& e) {
    e.restore();
  } catch (pybind11::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace python
}  // namespace hvda
