// Runtime bindings: init/shutdown/topology, join and barrier, process sets,
// timeline. The tensor ops' Runtime.enqueue_*: fast_enqueue.cc, enqueue_binding.cc.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/runtime.h"
#include "devices/cpu/register.h"
#include "python/bindings.h"
#include "python/enqueue_args.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

Topology Topo(const Runtime& rt) {
  Topology t;
  Check(rt.GetTopology(&t));
  return t;
}

int SetRank(Runtime& rt, int id) {
  int set_rank = -1;
  Check(rt.ProcessSetRank(id, &set_rank));
  return set_rank;
}

}  // namespace

void BindRuntime(py::module_& m) {
  py::class_<DeviceRef>(m, "DeviceRef",
                        "Where an accelerator tensor lives: the framework's device type, index "
                        "and current native stream handle (0: the default stream).")
      .def(py::init([](std::string type, int index, uintptr_t stream) {
             return DeviceRef{std::move(type), index, stream};
           }),
           py::arg("type"), py::arg("index"), py::arg("stream") = 0)
      .def_readonly("type", &DeviceRef::type)
      .def_readonly("index", &DeviceRef::index)
      .def_readonly("stream", &DeviceRef::stream);

  py::class_<Runtime>(m, "Runtime")
      // The binding knows the concrete devices; the core is handed them.
      .def(py::init([] { return std::make_unique<Runtime>(RegisterCpuDevice); }))
      .def(
          "init",
          [](Runtime& rt, JobSpec job, const std::vector<std::vector<int>>& sets, bool dynamic,
             const std::vector<std::string>& plugins) {
            // The edge: the core's settings are read from the environment
            // here, once per init(); the job's identity comes in `job`.
            Status st = Settings::FromEnvironment(&job.settings);
            if (st.ok()) {
              py::gil_scoped_release release;
              st = rt.Init(job, sets, dynamic, plugins);
            }
            if (!st.ok()) {
              if (st.code() == StatusCode::kInvalidArgument) throw py::value_error(st.reason());
              throw std::runtime_error(st.reason());
            }
          },
          py::arg("job"), py::arg("process_sets") = std::vector<std::vector<int>>(),
          py::arg("dynamic") = false,
          py::arg("plugins") = std::vector<std::string>())
      .def("shutdown", [](Runtime& rt) {
        py::gil_scoped_release release;
        rt.Shutdown();
      })
      .def("is_initialized", &Runtime::initialized)
      .def("generation_ended", &Runtime::GenerationEnded,
           "True once the job of this generation ended under this rank (see Runtime).")
      .def("generation_end_told", &Runtime::GenerationEndTold,
           "generation_ended(), and a failure that reports it reached this rank's program "
           "(NOTE [Told of the end] in common/generation_end.h).")
      .def("rank", [](const Runtime& rt) { return Topo(rt).rank; })
      .def("size", [](const Runtime& rt) { return Topo(rt).size; })
      .def("local_rank", [](const Runtime& rt) { return Topo(rt).local_rank; })
      .def("local_size", [](const Runtime& rt) { return Topo(rt).local_size; })
      .def("cross_rank", [](const Runtime& rt) { return Topo(rt).cross_rank; })
      .def("cross_size", [](const Runtime& rt) { return Topo(rt).cross_size; })
      .def("is_homogeneous", [](const Runtime& rt) { Topo(rt); return rt.IsHomogeneous(); })
      .def("backends", &Runtime::GlobalBackends)
      .def("enqueue_join", [](Runtime& rt, int device) {
        Topo(rt);
        return rt.EnqueueJoin(device);
      })
      .def("enqueue_barrier",
           [](Runtime& rt, int ps) {
             std::shared_ptr<Work> w;
             Check(rt.EnqueueBarrier(ps, &w));
             return w;
           })
      .def("add_process_set",
           [](Runtime& rt, std::vector<int> ranks) {
             int id = -1;
             Status st;
             {
               py::gil_scoped_release release;
               st = rt.AddProcessSet(std::move(ranks), &id);
             }
             Check(st);
             return id;
           })
      .def("remove_process_set",
           [](Runtime& rt, int id) {
             bool removed = false;
             Status st;
             {
               py::gil_scoped_release release;
               st = rt.RemoveProcessSet(id, &removed);
             }
             Check(st);
             return removed;
           })
      .def("process_set_ids", &Runtime::ProcessSetIds)
      .def("process_set_ranks",
           [](Runtime& rt, int id) {
             std::vector<int> ranks;
             Check(rt.ProcessSetRanks(id, &ranks));
             return ranks;
           })
      .def("process_set_rank", &SetRank)
      .def("process_set_size",
           [](Runtime& rt, int id) {
             std::vector<int> ranks;
             Check(rt.ProcessSetRanks(id, &ranks));
             return static_cast<int>(ranks.size());
           })
      .def("process_set_included", [](Runtime& rt, int id) { return SetRank(rt, id) >= 0; })
      .def("start_timeline",
           [](Runtime& rt, const std::string& path, bool mark) { Check(rt.StartTimeline(path, mark)); },
           py::arg("path"), py::arg("mark_cycles") = false)
      .def("stop_timeline", [](Runtime& rt) { Check(rt.StopTimeline()); });
}

}  // namespace python
}  // namespace hvda
