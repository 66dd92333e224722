// Device memory of a plugin without a framework: `_core.PluginMemory` and
// `Runtime.plugin_memory(type, index)` / `Runtime.plugin_activity(type)`.
//
// The conformance suite's plugin-memory mode (docs/conformance.md) uses
// them when a vendor has a plugin but no framework device yet: buffers come
// from the plugin's mem_alloc, values cross with its memcpy_async, and the
// ops themselves go through the same enqueue bindings as a framework's
// tensors (a DeviceRef with native stream 0: the device's default stream,
// as plugin.h says of frameworks without streams).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "common/plugin/plugin_device.h"
#include "common/runtime.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

// One device's memory, reached through the plugin. Every copy is on the
// device's default stream (stream_wrap(NULL)) and blocks until it has run,
// so a buffer written here is ready for any op enqueued afterwards, and one
// read here after its op completed holds the op's result.
// Lifetime: holds the PluginDevice (and so the plugin library); memory it
// allocated must be freed through it, after every op using it completed.
class PluginMemory {
 public:
  explicit PluginMemory(std::shared_ptr<PluginDevice> device) : device_(std::move(device)) {
    Check(device_->execution().WrapStream(nullptr, &stream_));
  }

  uintptr_t Alloc(size_t bytes) {
    void* p = nullptr;
    Check(device_->memory().Allocate(bytes, &p));
    return reinterpret_cast<uintptr_t>(p);
  }
  void Free(uintptr_t p) { device_->memory().Free(reinterpret_cast<void*>(p)); }

  void FromHost(uintptr_t dst, uintptr_t host_src, size_t bytes) {
    Status st = device_->memory().CopyFromHostAsync(
        reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(host_src), bytes, stream_.get());
    if (st.ok()) st = device_->execution().SynchronizeStream(stream_.get());
    Check(st);
  }
  void ToHost(uintptr_t host_dst, uintptr_t src, size_t bytes) {
    Status st = device_->memory().CopyToHostAsync(
        reinterpret_cast<void*>(host_dst), reinterpret_cast<const void*>(src), bytes, stream_.get());
    if (st.ok()) st = device_->execution().SynchronizeStream(stream_.get());
    Check(st);
  }

  std::string type() const { return device_->library().device_type(); }
  int index() const { return device_->index(); }

 private:
  std::shared_ptr<PluginDevice> device_;
  std::unique_ptr<Stream> stream_;  // the wrapped default stream; before device_ dies
};

}  // namespace

void BindPluginMemory(py::module_& m) {
  py::class_<PluginMemory>(m, "PluginMemory",
                           "Memory of this rank's accelerator, through its device plugin "
                           "(Runtime.plugin_memory). Copies block until done.")
      .def("alloc", &PluginMemory::Alloc, py::arg("nbytes"),
           py::call_guard<py::gil_scoped_release>(),
           "mem_alloc(nbytes) -> device address (0 bytes: a unique freeable address)")
      .def("free", &PluginMemory::Free, py::arg("ptr"), py::call_guard<py::gil_scoped_release>(),
           "mem_free; only once no op still uses the memory")
      .def("copy_from_host", &PluginMemory::FromHost, py::arg("dst"), py::arg("host_src"),
           py::arg("nbytes"), py::call_guard<py::gil_scoped_release>())
      .def("copy_to_host", &PluginMemory::ToHost, py::arg("host_dst"), py::arg("src"),
           py::arg("nbytes"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("type", &PluginMemory::type)
      .def_property_readonly("index", &PluginMemory::index);

  py::object cls = m.attr("Runtime");
  cls.attr("plugin_memory") = py::cpp_function(
      [](Runtime& rt, const std::string& device_type, int index) {
        std::shared_ptr<PluginDevice> device;
        Check(rt.BindAccelerator(device_type, index, &device));
        return std::make_unique<PluginMemory>(std::move(device));
      },
      py::is_method(cls), py::name("plugin_memory"), py::arg("device_type"), py::arg("index"),
      "Binds this rank's accelerator to device_type:index (every accelerator op of this rank "
      "must then use it) and returns its PluginMemory. ValueError when not initialized or no "
      "plugin serves device_type.");
  cls.attr("plugin_activity") = py::cpp_function(
      [](Runtime& rt, const std::string& device_type) {
        std::vector<std::pair<std::string, uint64_t>> counts;
        Check(rt.PluginActivityOf(device_type, &counts));
        py::dict d;
        for (const auto& kv : counts) d[py::str(kv.first)] = kv.second;
        return d;
      },
      py::is_method(cls), py::name("plugin_activity"), py::arg("device_type"),
      "{kind: count}: the collectives the core ran through device_type's plugin since it was "
      "loaded (allreduce, allgather, broadcast, alltoall, reducescatter, barrier).");
}

}  // namespace python
}  // namespace hvda
