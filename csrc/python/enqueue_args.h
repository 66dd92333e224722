// Internal to the _core extension: how the enqueue bindings turn Python
// arguments into the core's EnqueueArgs and submit them.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/runtime.h"
#include "python/work_handle.h"

namespace hvda {
namespace python {

using Shape = std::vector<int64_t>;

// Where a tensor lives, as the framework adapter says it: -1 (CPU, upstream's
// convention) or a DeviceRef (accelerator type, index, native stream).
struct DeviceRef {
  std::string type;
  int index = 0;
  uintptr_t stream = 0;  // the framework's current native stream; 0: default stream
};

// Fills a's device fields from `device` (-1 or a DeviceRef); ValueError for
// anything else. The caller holds the GIL.
void SetDevice(const pybind11::handle& device, EnqueueArgs* a);

// The fields every enqueue binding shares; ValueError for an unknown dtype
// code or device.
EnqueueArgs Args(RequestType type, std::string name, int ps, uintptr_t in, uintptr_t out,
                 int dtype, Shape shape, const pybind11::handle& device);

// Enqueues ops as one group (Runtime::Enqueue); raises the Python exception
// of a refused enqueue (RaiseStatus).
std::vector<std::shared_ptr<Work>> Submit(Runtime& rt, std::vector<EnqueueArgs> ops);
// One op, moved in (Runtime::EnqueueOne: no vectors on the per-op path).
std::shared_ptr<Work> SubmitOne(Runtime& rt, EnqueueArgs a);

// Replaces Runtime.enqueue_allreduce, which pybind11 defined, by the
// METH_FASTCALL method of fast_enqueue.cc (same arguments and behaviour).
// Called once, after BindRuntime.
void BindFastEnqueue(pybind11::module_& m);

}  // namespace python
}  // namespace hvda
