// Settings bindings: the one settings table (common/util/settings_table.h)
// as data for the Python view (horovod_accel/common/settings.py), its
// parser, and JobSpec, which init() fills and hands to Runtime.init.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/job_spec.h"
#include "common/util/settings.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

const char* KindName(SettingKind k) {
  switch (k) {
    case SettingKind::kInt: return "int";
    case SettingKind::kFloat: return "float";
    case SettingKind::kBool: return "bool";
    case SettingKind::kAutoBool: return "bool or unset";
    case SettingKind::kString: return "string";
  }
  return "?";
}

py::list SettingsTableRows() {
  py::list out;
  for (const auto& s : SettingsTable()) {
    py::dict row;
    row["name"] = s.env;
    row["field"] = s.field;
    row["scope"] = s.scope == SettingScope::kJob    ? "job"
                   : s.scope == SettingScope::kCore ? "core"
                                                    : "python";
    row["type"] = KindName(s.kind);
    row["default"] = s.default_value;
    row["range"] = s.RangeText();
    row["upstream"] = s.upstream;
    row["doc"] = s.doc;
    out.append(row);
  }
  return out;
}

// The typed value of `text` for setting `name` (empty: its default);
// ValueError with the core's message when it does not parse.
py::object ParseSettingValue(const std::string& name, const std::string& text) {
  const SettingInfo* info = FindSetting(name);
  if (info == nullptr) throw py::key_error(name + " is not a setting of the table");
  SettingValue v;
  Status st = ParseSetting(*info, text, &v);
  if (!st.ok()) throw py::value_error(st.reason());
  switch (info->kind) {
    case SettingKind::kInt: return py::int_(v.i);
    case SettingKind::kFloat: return py::float_(v.f);
    case SettingKind::kBool: return py::bool_(v.b);
    case SettingKind::kAutoBool:
      return v.tri ? py::object(py::bool_(*v.tri)) : py::object(py::none());
    case SettingKind::kString: break;
  }
  return py::str(v.s);
}

// JobSpec.<field> for a field of its Topology, as Python sees it.
template <int Topology::*Field>
struct TopoField {
  static int Get(const JobSpec& j) { return j.topo.*Field; }
  static void Set(JobSpec& j, int v) { j.topo.*Field = v; }
};

}  // namespace

void BindSettings(py::module_& m) {
  m.def("settings_table", &SettingsTableRows,
        "Every setting of the one table: dicts of name, field, scope (job: set by the launcher and "
        "passed in a JobSpec; core: read by init(); python: read by the Python package), type, "
        "default, range, upstream, doc.");
  m.def("parse_setting", &ParseSettingValue, py::arg("name"), py::arg("text"),
        "The typed value of `text` for setting `name` ('' gives the default); ValueError "
        "naming the variable when it does not parse or is out of range.");
  py::class_<JobSpec>(m, "JobSpec",
                      "Who this rank is in the job and how it reaches its peers "
                      "(common/job_spec.h); init() fills it (horovod_accel/common/job.py).")
      .def(py::init<>())
      .def_property("rank", TopoField<&Topology::rank>::Get, TopoField<&Topology::rank>::Set)
      .def_property("size", TopoField<&Topology::size>::Get, TopoField<&Topology::size>::Set)
      .def_property("local_rank", TopoField<&Topology::local_rank>::Get,
                    TopoField<&Topology::local_rank>::Set)
      .def_property("local_size", TopoField<&Topology::local_size>::Get,
                    TopoField<&Topology::local_size>::Set)
      .def_property("cross_rank", TopoField<&Topology::cross_rank>::Get,
                    TopoField<&Topology::cross_rank>::Set)
      .def_property("cross_size", TopoField<&Topology::cross_size>::Get,
                    TopoField<&Topology::cross_size>::Set)
      .def_readwrite("store_addr", &JobSpec::store_addr)
      .def_readwrite("store_port", &JobSpec::store_port)
      .def_readwrite("secret", &JobSpec::secret)
      .def_readwrite("elastic_round", &JobSpec::elastic_round)
      .def_readwrite("mpi_shim", &JobSpec::mpi_shim)
      .def_readwrite("mpi_comm", &JobSpec::mpi_comm);
}

}  // namespace python
}  // namespace hvda
