// Runtime.enqueue_* for every op but the per-op allreduce (fast_enqueue.cc):
// pybind11 definitions that take their positional arguments as given and
// read them with EnqueueCall, so an argument is checked by the same rules,
// with the same messages, as enqueue_allreduce's (NOTE [One home for enqueue
// rules] in enqueue_args.h). Signatures and results: docs/design/core_binding.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/enqueue_args.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

using Works = std::vector<std::shared_ptr<Work>>;

// Defines Runtime.<name> as a method taking `arity` positional arguments
// (named in `signature`, which also becomes its docstring): body(rt, call)
// returns what the method returns.
template <typename Body>
void DefEnqueue(py::object& cls, const char* name, const char* signature, Py_ssize_t arity,
                Body body) {
  cls.attr(name) = py::cpp_function(
      [signature, arity, body](Runtime& rt, const py::args& args, const py::kwargs& kwargs) {
        const EnqueueCall c(signature, arity, PySequence_Fast_ITEMS(args.ptr()),
                            PyTuple_GET_SIZE(args.ptr()), PyDict_GET_SIZE(kwargs.ptr()));
        return body(rt, c);
      },
      py::is_method(cls), py::name(name), py::doc(signature));
}

// The grouped ops' leading arguments, (names, process_set, inputs[, outputs],
// dtypes, shapes, device), one EnqueueArgs per name. `outputs` may be empty
// (the core allocates). *next: the index of the argument after them.
std::vector<EnqueueArgs> ReadGroup(const EnqueueCall& c, RequestType type, bool has_outputs,
                                   Py_ssize_t* next) {
  Py_ssize_t i = 0;
  const std::vector<std::string> names = c.StrList(i++, "names");
  const int ps = c.Int32(i++, "process_set");
  const std::vector<uintptr_t> ins = c.AddressList(i++, "inputs");
  const std::vector<uintptr_t> outs =
      has_outputs ? c.AddressList(i++, "outputs") : std::vector<uintptr_t>();
  const std::vector<int> dtypes = c.Int32List(i++, "dtypes");
  const std::vector<Shape> shapes = c.ShapeList(i++, "shapes");
  const DeviceArg device = c.Device(i++, "device");
  *next = i;
  Check(CheckGroupLength(ins.size(), names.size(), "inputs"));
  Check(CheckGroupLength(dtypes.size(), names.size(), "dtypes"));
  Check(CheckGroupLength(shapes.size(), names.size(), "shapes"));
  if (!outs.empty()) Check(CheckGroupLength(outs.size(), names.size(), "outputs"));
  std::vector<EnqueueArgs> ops;
  ops.reserve(names.size());
  for (size_t k = 0; k < names.size(); ++k)
    ops.push_back(Args(type, names[k], ps, ins[k], outs.empty() ? 0 : outs[k], dtypes[k],
                       shapes[k], device));
  return ops;
}

// A grouped allreduce / reducescatter: the group's arguments, then (op,
// prescale, postscale) for every tensor.
Works GroupedReduction(Runtime& rt, const EnqueueCall& c, RequestType type) {
  Py_ssize_t next = 0;
  std::vector<EnqueueArgs> ops = ReadGroup(c, type, /*has_outputs=*/true, &next);
  EnqueueArgs reduction;
  ReadReduction(c, next, &reduction);
  for (EnqueueArgs& a : ops) {
    a.op = reduction.op;
    a.prescale = reduction.prescale;
    a.postscale = reduction.postscale;
  }
  return Submit(rt, std::move(ops));
}

}  // namespace

void BindEnqueue(py::module_& m) {
  py::object cls = m.attr("Runtime");
  DefEnqueue(cls, "enqueue_grouped_allreduce",
             "enqueue_grouped_allreduce(names, process_set, inputs, outputs, dtypes, shapes, "
             "device, op, prescale, postscale)",
             10, [](Runtime& rt, const EnqueueCall& c) {
               return GroupedReduction(rt, c, RequestType::kAllreduce);
             });
  DefEnqueue(cls, "enqueue_allgather",
             "enqueue_allgather(name, process_set, input, dtype, shape, device)", 6,
             [](Runtime& rt, const EnqueueCall& c) {
               Py_ssize_t next = 0;
               return SubmitOne(rt, ReadTensor(c, RequestType::kAllgather, false, &next));
             });
  DefEnqueue(cls, "enqueue_grouped_allgather",
             "enqueue_grouped_allgather(names, process_set, inputs, dtypes, shapes, device)", 6,
             [](Runtime& rt, const EnqueueCall& c) {
               Py_ssize_t next = 0;
               return Submit(rt, ReadGroup(c, RequestType::kAllgather, false, &next));
             });
  DefEnqueue(cls, "enqueue_broadcast",
             "enqueue_broadcast(name, process_set, input, output, dtype, shape, device, "
             "root_rank)",
             8, [](Runtime& rt, const EnqueueCall& c) {
               Py_ssize_t next = 0;
               EnqueueArgs a = ReadTensor(c, RequestType::kBroadcast, true, &next);
               a.root_rank = c.Int32(next, "root_rank");
               return SubmitOne(rt, std::move(a));
             });
  DefEnqueue(cls, "enqueue_alltoall",
             "enqueue_alltoall(name, process_set, input, dtype, shape, device, splits)", 7,
             [](Runtime& rt, const EnqueueCall& c) {
               Py_ssize_t next = 0;
               EnqueueArgs a = ReadTensor(c, RequestType::kAlltoall, false, &next);
               a.splits = c.Int64s(next, "splits");
               return SubmitOne(rt, std::move(a));
             });
  DefEnqueue(cls, "enqueue_reducescatter",
             "enqueue_reducescatter(name, process_set, input, output, dtype, shape, device, op, "
             "prescale, postscale)",
             10, [](Runtime& rt, const EnqueueCall& c) {
               Py_ssize_t next = 0;
               EnqueueArgs a = ReadTensor(c, RequestType::kReducescatter, true, &next);
               ReadReduction(c, next, &a);
               return SubmitOne(rt, std::move(a));
             });
  DefEnqueue(cls, "enqueue_grouped_reducescatter",
             "enqueue_grouped_reducescatter(names, process_set, inputs, outputs, dtypes, shapes, "
             "device, op, prescale, postscale)",
             10, [](Runtime& rt, const EnqueueCall& c) {
               return GroupedReduction(rt, c, RequestType::kReducescatter);
             });
}

}  // namespace python
}  // namespace hvda
