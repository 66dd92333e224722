// Work and OutputBuffer bindings.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/work.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

// A core-allocated result exposed through the buffer protocol. Holds the
// HostBuffer alive for as long as any Python object (e.g. a torch tensor made
// with torch.frombuffer) references this view.
struct OutputBuffer {
  std::shared_ptr<HostBuffer> buffer;
  std::vector<int64_t> shape;
  int dtype = 0;
};

// A core-allocated result in accelerator memory: the adapter allocates a
// tensor on the device and copies it there (copy_to), ordered on the
// framework's stream.
struct DeviceOutput {
  std::shared_ptr<DeviceBuffer> buffer;
  std::vector<int64_t> shape;
  int dtype = 0;
};

// Work.wait / Work.finish: waits up to `timeout` (GIL released, and not at
// all when already done); false while the op still runs. Once done, frees
// the op's name if `release_name`, then raises CollectiveError if it failed.
bool WaitAndCheck(Work& w, double timeout, bool release_name) {
  bool done = w.IsCompleted();
  if (!done) {
    py::gil_scoped_release release;
    done = w.Wait(timeout);
  }
  if (!done) return false;
  if (release_name) w.ReleaseName();
  Status st = w.status();
  if (!st.ok())
    RaiseStatus(st.code() == StatusCode::kInvalidArgument ? Status::Unknown(st.reason()) : st);
  return true;
}

}  // namespace

void RaiseStatus(const Status& st) {
  if (st.code() == StatusCode::kInvalidArgument) throw py::value_error(st.reason());
  py::object exc = py::module_::import("horovod_accel._core").attr("CollectiveError");
  PyErr_SetString(exc.ptr(), st.reason().c_str());
  throw py::error_already_set();
}

void BindWork(py::module_& m) {
  py::class_<OutputBuffer>(m, "OutputBuffer", py::buffer_protocol())
      .def_readonly("shape", &OutputBuffer::shape)
      .def_readonly("dtype", &OutputBuffer::dtype)
      .def_property_readonly("nbytes", [](const OutputBuffer& b) { return b.buffer->bytes(); })
      .def_buffer([](OutputBuffer& b) {
        return py::buffer_info(b.buffer->data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.buffer->bytes())}, {1}, false);
      });

  py::class_<DeviceOutput>(m, "DeviceOutput")
      .def_readonly("shape", &DeviceOutput::shape)
      .def_readonly("dtype", &DeviceOutput::dtype)
      .def_property_readonly("nbytes", [](const DeviceOutput& b) { return b.buffer->bytes(); })
      .def(
          "copy_to",
          [](const DeviceOutput& b, uintptr_t dst, uintptr_t stream) {
            Status st;
            {
              py::gil_scoped_release release;
              st = b.buffer->CopyTo(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(stream));
            }
            if (!st.ok()) RaiseStatus(st);
          },
          py::arg("dst"), py::arg("stream") = 0,
          "Copies the result to device memory dst (nbytes), ordered on the native stream; blocks "
          "until done.");

  py::class_<Work, std::shared_ptr<Work>>(m, "Work")
      .def("is_completed", &Work::IsCompleted)
      .def(
          "wait", [](Work& w, double timeout) { return WaitAndCheck(w, timeout, false); },
          py::arg("timeout_seconds") = -1.0,
          "Blocks (GIL released) until done; False on timeout; raises CollectiveError on failure.")
      .def("output",
           [](const Work& w) -> py::object {
             if (w.device_output) {
               DeviceOutput d{w.device_output, w.output_shape, static_cast<int>(w.output_dtype)};
               return py::cast(std::move(d));
             }
             if (!w.output) return py::none();
             OutputBuffer b{w.output, w.output_shape, static_cast<int>(w.output_dtype)};
             return py::cast(std::move(b));
           })
      .def(
          "finish", [](Work& w, double timeout) { return WaitAndCheck(w, timeout, true); },
          py::arg("timeout"),
          "wait(timeout), then (once complete) release_name(): False while the op still runs; "
          "True once it succeeded; raises, with the name released, if it failed.")
      .def("release_name", &Work::ReleaseName,
           "Frees the op's name for reuse (NOTE [Name reservation]); idempotent.")
      .def("received_splits", [](const Work& w) { return w.received_splits; })
      .def("join_result", [](const Work& w) { return w.join_result; });
}

}  // namespace python
}  // namespace hvda
