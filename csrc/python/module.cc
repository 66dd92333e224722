// The horovod_accel._core extension: thin bindings over the C++ core. See
// docs/design/core_binding.md for the contract.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/dtype.h"
#include "mpi/hvda_mpi_shim.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

py::dict BuildInfo() {
  py::dict d;
  d["version"] = HVDA_VERSION;
  d["compiler"] = HVDA_BUILD_COMPILER;  // CMakeLists.txt
  d["source"] = HVDA_BUILD_SOURCE;
  d["gloo_built"] = true;
  d["mpi_built"] = false;
  d["nccl_built"] = 0;
  d["cuda_built"] = false;
  d["rocm_built"] = false;
  d["ddl_built"] = false;
  d["ccl_built"] = false;
  d["controllers"] = std::vector<std::string>{"gloo"};
  d["cpu_operations"] = std::vector<std::string>{"shm", "gloo"};
  d["devices"] = std::vector<std::string>{"cpu"};
  return d;
}


}  // namespace


}  // namespace python
}  // namespace hvda

PYBIND11_MODULE(_core, m) {
  using namespace hvda;
  m.doc() = "horovod_accel core runtime (framework-neutral)";
  static py::exception<std::runtime_error> collective_error(m, "CollectiveError", PyExc_RuntimeError);
  m.attr("DTYPE_UINT8") = static_cast<int>(DataType::kUInt8);
  m.attr("DTYPE_INT8") = static_cast<int>(DataType::kInt8);
  m.attr("DTYPE_INT16") = static_cast<int>(DataType::kInt16);
  m.attr("DTYPE_UINT16") = static_cast<int>(DataType::kUInt16);
  m.attr("DTYPE_INT32") = static_cast<int>(DataType::kInt32);
  m.attr("DTYPE_INT64") = static_cast<int>(DataType::kInt64);
  m.attr("DTYPE_FLOAT16") = static_cast<int>(DataType::kFloat16);
  m.attr("DTYPE_BFLOAT16") = static_cast<int>(DataType::kBFloat16);
  m.attr("DTYPE_FLOAT32") = static_cast<int>(DataType::kFloat32);
  m.attr("DTYPE_FLOAT64") = static_cast<int>(DataType::kFloat64);
  m.attr("DTYPE_BOOL") = static_cast<int>(DataType::kBool);
  m.attr("OP_AVERAGE") = static_cast<int>(ReduceOp::kAverage);
  m.attr("OP_SUM") = static_cast<int>(ReduceOp::kSum);
  m.attr("OP_ADASUM") = static_cast<int>(ReduceOp::kAdasum);
  m.attr("OP_MIN") = static_cast<int>(ReduceOp::kMin);
  m.attr("OP_MAX") = static_cast<int>(ReduceOp::kMax);
  m.attr("OP_PRODUCT") = static_cast<int>(ReduceOp::kProduct);
  // The shim ABI this core was built for; common/mpi.py checks the shim against it.
  m.attr("MPI_SHIM_ABI") = HVDA_MPI_SHIM_ABI;
  m.def("build_info", &python::BuildInfo, "What this build contains (for --check-build).");
  python::BindWork(m);
  python::BindSettings(m);
  python::BindRuntime(m);
  python::BindFastEnqueue(m);
  python::BindEnqueue(m);
  python::BindCoreCApi(m);
  python::BindPluginMemory(m);
  python::BindPlugins(m);
}
