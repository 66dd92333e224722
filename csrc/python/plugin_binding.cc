// Device plugin discovery for Python (`horovodrun --check-build`,
// horovod_accel/common/plugins.py). See docs/design/plugins.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common/plugin/plugin_discovery.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace hvda {
namespace python {

void BindPlugins(py::module_& m) {
  m.attr("PLUGIN_ABI") = std::to_string(HVDA_PLUGIN_ABI_MAJOR) + "." +
                         std::to_string(HVDA_PLUGIN_ABI_MINOR);
  m.def("resolve_plugin_specs", &ResolvePluginSpecs, py::arg("specs"), py::arg("search_dirs"),
        "'gcu,/p/libx.so' -> library paths: a name x is libhorovod_accel_x.so from the first "
        "search dir that has it, else left for the dynamic linker.");
  m.def(
      "probe_plugin",
      [](const std::string& path) {
        PluginReport r;
        {
          py::gil_scoped_release release;
          HostApi host(nullptr);
          r = ProbePlugin(path, host);
        }
        py::dict d;
        d["path"] = r.path;
        d["name"] = r.name;
        d["version"] = r.version;
        d["device_type"] = r.device_type;
        d["abi"] = r.abi;
        d["available"] = r.available;
        d["why"] = r.why;
        return d;
      },
      py::arg("path"),
      "Loads, validates and probes the plugin at path, then unloads it: {path, name, version, "
      "device_type, abi, available, why}.");
}

}  // namespace python
}  // namespace hvda
