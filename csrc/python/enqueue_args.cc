#include "python/enqueue_args.h"

#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {

void SetDevice(const py::handle& device, EnqueueArgs* a) {
  // CPU tensors (-1), the per-op common case, skip pybind11's type lookup.
  if (!PyLong_CheckExact(device.ptr())) {
    if (py::isinstance<DeviceRef>(device)) {
      const auto& d = device.cast<const DeviceRef&>();
      a->device = d.index;
      a->device_type = d.type;
      a->stream = reinterpret_cast<void*>(d.stream);
      return;
    }
  }
  a->device = device.cast<int>();
  if (a->device >= 0)
    throw py::value_error("an accelerator tensor must be described by a DeviceRef (type, index, "
                          "stream), not a bare index");
}

EnqueueArgs Args(RequestType type, std::string name, int ps, uintptr_t in, uintptr_t out,
                 int dtype, Shape shape, const py::handle& device) {
  if (!IsValidDataType(dtype)) throw py::value_error("unknown dtype code " + std::to_string(dtype));
  EnqueueArgs a;
  a.type = type;
  a.name = std::move(name);
  a.process_set_id = ps;
  a.input = reinterpret_cast<const void*>(in);
  a.output = reinterpret_cast<void*>(out);
  a.dtype = static_cast<DataType>(dtype);
  a.shape = std::move(shape);
  SetDevice(device, &a);
  return a;
}

std::vector<std::shared_ptr<Work>> Submit(Runtime& rt, std::vector<EnqueueArgs> ops) {
  std::vector<std::shared_ptr<Work>> works;
  Status st = rt.Enqueue(std::move(ops), &works);
  if (!st.ok()) RaiseStatus(st);
  return works;
}

std::shared_ptr<Work> SubmitOne(Runtime& rt, EnqueueArgs a) {
  std::shared_ptr<Work> work;
  Status st = rt.EnqueueOne(std::move(a), &work);
  if (!st.ok()) RaiseStatus(st);
  return work;
}

}  // namespace python
}  // namespace hvda
