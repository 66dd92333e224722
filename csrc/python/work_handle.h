// Internal to the _core extension: _core.Work, the Python handle of one
// enqueued operation (a core Work), as a plain CPython type.
//
// NOTE [Work handle]: every op hands one of these to Python, and a small
// allreduce's cost is mostly such per-op overhead. A pybind11 class instance
// costs an allocation and a hash insert into pybind11's instance registry
// when it is made and the reverse when it dies, plus pybind11's generic
// dispatch on every method call; this type is a PyObject holding a
// shared_ptr<Work>, with METH_FASTCALL methods. The type caster below makes
// every binding that returns std::shared_ptr<Work> (alone or in a vector)
// hand out this type, so there is one Work type. It must be visible in every
// translation unit that converts a shared_ptr<Work> (bindings.h includes it).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "common/work.h"

namespace hvda {
namespace python {

// A new _core.Work owning a reference to `work` (never null). New reference;
// nullptr with a Python error set if allocation fails. Needs the GIL and
// BindWork to have run.
PyObject* NewWorkHandle(std::shared_ptr<Work> work);
// The Work of a _core.Work, or null if `o` is not one. Borrowed.
const std::shared_ptr<Work>* WorkOf(PyObject* o);

}  // namespace python
}  // namespace hvda

namespace pybind11 {
namespace detail {

template <>
struct type_caster<std::shared_ptr<hvda::Work>> {
  PYBIND11_TYPE_CASTER(std::shared_ptr<hvda::Work>, const_name("Work"));

  bool load(handle src, bool) {
    const std::shared_ptr<hvda::Work>* w = hvda::python::WorkOf(src.ptr());
    if (w == nullptr) return false;
    value = *w;
    return true;
  }

  static handle cast(const std::shared_ptr<hvda::Work>& w, return_value_policy, handle) {
    if (!w) return none().release();
    PyObject* o = hvda::python::NewWorkHandle(w);
    if (o == nullptr) throw error_already_set();
    return o;
  }
};

}  // namespace detail
}  // namespace pybind11
