// Internal to the _core extension: each binding file registers one part.
#pragma once

#include <pybind11/pybind11.h>

#include "common/util/status.h"
#include "python/work_handle.h"

namespace hvda {
namespace python {

void BindWork(pybind11::module_& m);
void BindRuntime(pybind11::module_& m);
void BindSettings(pybind11::module_& m);
// Add Runtime.enqueue_allreduce (fast_enqueue.cc) and the other ops'
// Runtime.enqueue_* (enqueue_binding.cc); after BindRuntime.
void BindFastEnqueue(pybind11::module_& m);
void BindEnqueue(pybind11::module_& m);
void BindPlugins(pybind11::module_& m);
// Adds Runtime.c_api() (csrc/include/horovod_accel/core_api.h); after BindRuntime.
void BindCoreCApi(pybind11::module_& m);
// Adds PluginMemory, Runtime.plugin_memory() and Runtime.plugin_activity()
// (plugin_memory_binding.cc); after BindRuntime.
void BindPluginMemory(pybind11::module_& m);

// Raises the Python exception matching a non-OK Status: ValueError for
// InvalidArgument, _core.CollectiveError (a RuntimeError) otherwise.
[[noreturn]] void RaiseStatus(const Status& st);
// RaiseStatus(st) unless st is OK.
inline void Check(const Status& st) {
  if (!st.ok()) RaiseStatus(st);
}

}  // namespace python
}  // namespace hvda
