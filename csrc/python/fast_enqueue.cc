// Runtime.enqueue_allreduce as a METH_FASTCALL method.
//
// NOTE [Per-op binding]: a small allreduce's cost is mostly per-op overhead,
// and pybind11's generic dispatch (argument loaders for ten arguments, then
// the call) took about a third of the binding's time per op. This method
// reads the ten positional arguments straight from the vector CPython
// passes:
//   enqueue_allreduce(name: str, process_set: int, input: int, output: int,
//                     dtype: int, shape: sequence of int, device: -1 | DeviceRef,
//                     op: int, prescale: float, postscale: float) -> Work
// It reads and checks them with the rules every enqueue method shares
// (EnqueueCall and the Check* rules, NOTE [One home for enqueue rules] in
// enqueue_args.h), so its errors are those of the pybind11 definitions of
// the other ops (enqueue_binding.cc) for the same bad argument.
#include <pybind11/pybind11.h>

#include "python/bindings.h"
#include "python/enqueue_args.h"
#include "python/guarded_call.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

constexpr const char* kSignature =
    "enqueue_allreduce(name, process_set, input, output, dtype, shape, device, op, prescale, "
    "postscale)";

PyObject* EnqueueAllreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames) {
  return Guarded([&] {
    const EnqueueCall c(kSignature, 10, args, nargs, kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    Runtime& rt = py::handle(self).cast<Runtime&>();
    Py_ssize_t next = 0;
    EnqueueArgs a = ReadTensor(c, RequestType::kAllreduce, /*has_output=*/true, &next);
    ReadReduction(c, next, &a);
    return NewWorkHandle(SubmitOne(rt, std::move(a)));
  });
}

}  // namespace

void BindFastEnqueue(py::module_& m) {
  // Lives as long as the module (CPython keeps a pointer to it in the
  // method descriptor); never written after initialisation.
  static PyMethodDef def = {
      "enqueue_allreduce",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&EnqueueAllreduce)),
      METH_FASTCALL | METH_KEYWORDS,
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
