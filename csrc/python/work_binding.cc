// Work and OutputBuffer bindings.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/work.h"
#include "python/bindings.h"
#include "python/guarded_call.h"
#include "python/work_handle.h"

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

// A _core.Work (NOTE [Work handle] in work_handle.h).
struct WorkObject {
  PyObject_HEAD
  std::shared_ptr<Work> work;  // never null once made by NewWorkHandle
};

// The type object, as CPython extensions keep their types: set once by
// BindWork while the module initialises (GIL held) and only read afterwards;
// the module holds the reference, so it lives as long as the interpreter.
PyTypeObject* g_work_type = nullptr;

Work& Self(PyObject* self) { return *reinterpret_cast<WorkObject*>(self)->work; }

// The one float argument of wait()/finish(), positional or by `keyword`;
// *out is left as it is when the argument is absent and not `required`.
// False with a Python error set for a bad call.
bool TimeoutArg(const char* method, const char* keyword, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames, bool required, double* out) {
  PyObject* value = nargs >= 1 ? args[0] : nullptr;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs + nkw > 1) {
    PyErr_Format(PyExc_TypeError, "Work.%s() takes one argument (%s)", method, keyword);
    return false;
  }
  if (nkw == 1) {
    if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), keyword) != 0) {
      PyErr_Format(PyExc_TypeError, "Work.%s() got an unexpected keyword argument %R", method,
                   PyTuple_GET_ITEM(kwnames, 0));
      return false;
    }
    value = args[0];
  }
  if (value == nullptr) {
    if (required) {
      PyErr_Format(PyExc_TypeError, "Work.%s() missing its argument (%s)", method, keyword);
      return false;
    }
    return true;
  }
  *out = PyFloat_AsDouble(value);
  return !(*out == -1.0 && PyErr_Occurred());
}

PyObject* WorkWaitOrFinish(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames, bool finish) {
  double timeout = -1.0;
  if (!TimeoutArg(finish ? "finish" : "wait", finish ? "timeout" : "timeout_seconds", args, nargs,
                  kwnames, finish, &timeout))
    return nullptr;
  return Guarded([&] {
    return PyBool_FromLong(WaitAndCheck(Self(self), timeout, finish));
  });
}

PyObject* WorkWait(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return WorkWaitOrFinish(self, args, nargs, kwnames, false);
}

PyObject* WorkFinish(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return WorkWaitOrFinish(self, args, nargs, kwnames, true);
}

PyObject* WorkIsCompleted(PyObject* self, PyObject*) {
  return PyBool_FromLong(Self(self).IsCompleted());
}

PyObject* WorkReleaseName(PyObject* self, PyObject*) {
  Self(self).ReleaseName();
  Py_RETURN_NONE;
}

PyObject* WorkOutput(PyObject* self, PyObject*) {
  return Guarded([&]() -> PyObject* {
    const Work& w = Self(self);
    if (w.device_output) {
      DeviceOutput d{w.device_output, w.output_shape, static_cast<int>(w.output_dtype)};
      return py::cast(std::move(d)).release().ptr();
    }
    if (!w.output) Py_RETURN_NONE;
    OutputBuffer b{w.output, w.output_shape, static_cast<int>(w.output_dtype)};
    return py::cast(std::move(b)).release().ptr();
  });
}

PyObject* WorkReceivedSplits(PyObject* self, PyObject*) {
  return Guarded([&] { return py::cast(Self(self).received_splits).release().ptr(); });
}

PyObject* WorkJoinResult(PyObject* self, PyObject*) {
  return PyLong_FromLong(Self(self).join_result);
}

void WorkDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<WorkObject*>(self)->work.~shared_ptr<Work>();
  type->tp_free(self);
  Py_DECREF(type);  // heap types: each instance holds a reference to its type
}

PyObject* WorkRepr(PyObject* self) {
  return PyUnicode_FromFormat("<horovod_accel._core.Work %s>",
                              Self(self).IsCompleted() ? "completed" : "pending");
}

// The method table and type spec live as long as the module (CPython keeps
// pointers to them); never written after initialisation.
PyMethodDef kWorkMethods[] = {
    {"is_completed", &WorkIsCompleted, METH_NOARGS, "True once the op has completed."},
    {"wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&WorkWait)),
     METH_FASTCALL | METH_KEYWORDS,
     "wait(timeout_seconds=-1.0): blocks (GIL released) until done; False on timeout; raises "
     "CollectiveError on failure."},
    {"finish", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&WorkFinish)),
     METH_FASTCALL | METH_KEYWORDS,
     "finish(timeout): wait(timeout), then (once complete) release_name(): False while the op "
     "still runs; True once it succeeded; raises, with the name released, if it failed."},
    {"release_name", &WorkReleaseName, METH_NOARGS,
     "Frees the op's name for reuse (NOTE [Name reservation]); idempotent."},
    {"output", &WorkOutput, METH_NOARGS,
     "The core-allocated result (OutputBuffer or DeviceOutput), or None."},
    {"received_splits", &WorkReceivedSplits, METH_NOARGS, "alltoall: rows received per rank."},
    {"join_result", &WorkJoinResult, METH_NOARGS, "join: the last rank that joined."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot kWorkSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(&WorkDealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(&WorkRepr)},
    {Py_tp_methods, kWorkMethods},
    {Py_tp_doc, const_cast<char*>("The handle of one enqueued operation (made by the core; not "
                                  "constructible from Python).")},
    {0, nullptr}};

PyType_Spec kWorkSpec = {"horovod_accel._core.Work", sizeof(WorkObject), 0,
                         Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, kWorkSlots};

}  // namespace

PyObject* NewWorkHandle(std::shared_ptr<Work> work) {
  PyObject* o = g_work_type->tp_alloc(g_work_type, 0);
  if (o == nullptr) return nullptr;
  new (&reinterpret_cast<WorkObject*>(o)->work) std::shared_ptr<Work>(std::move(work));
  return o;
}

const std::shared_ptr<Work>* WorkOf(PyObject* o) {
  if (g_work_type == nullptr || Py_TYPE(o) != g_work_type) return nullptr;
  return &reinterpret_cast<WorkObject*>(o)->work;
}

void RaiseStatus(const Status& st) {
  if (st.code() == StatusCode::kInvalidArgument) throw py::value_error(st.reason());
  if (st.code() == StatusCode::kUnimplemented) {
    PyErr_SetString(PyExc_NotImplementedError, st.reason().c_str());
    throw py::error_already_set();
  }
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

  PyObject* type = PyType_FromSpec(&kWorkSpec);
  if (type == nullptr) throw py::error_already_set();
  g_work_type = reinterpret_cast<PyTypeObject*>(type);
  m.add_object("Work", py::reinterpret_steal<py::object>(type));
}

}  // namespace python
}  // namespace hvda
