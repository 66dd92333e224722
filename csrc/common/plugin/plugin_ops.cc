#include "common/plugin/plugin_ops.h"

namespace hvda {
namespace {

template <typename Entry>
void Require(const char* name, const Entry& entry, std::vector<std::string>* missing) {
  if (!entry) missing->push_back(name);
}

void RequireDevice(const PluginDeviceOps& d, std::vector<std::string>* m) {
  if (!d.readable) {
    m->push_back("device (table missing or smaller than ABI 1.0's)");
    return;
  }
  Require("device.device_count", d.device_count, m);
  Require("device.set_device", d.set_device, m);
  Require("device.mem_alloc", d.mem_alloc, m);
  Require("device.mem_free", d.mem_free, m);
  Require("device.host_alloc", d.host_alloc, m);
  Require("device.host_free", d.host_free, m);
  Require("device.memcpy_async", d.memcpy_async, m);
  Require("device.memset_async", d.memset_async, m);
  Require("device.stream_create", d.stream_create, m);
  Require("device.stream_wrap", d.stream_wrap, m);
  Require("device.stream_destroy", d.stream_destroy, m);
  Require("device.stream_synchronize", d.stream_synchronize, m);
  Require("device.stream_wait_event", d.stream_wait_event, m);
  Require("device.event_create", d.event_create, m);
  Require("device.event_destroy", d.event_destroy, m);
  Require("device.event_record", d.event_record, m);
  Require("device.event_query", d.event_query, m);
  Require("device.event_synchronize", d.event_synchronize, m);
  // Host-accessible memory lets the core run these two itself.
  if (!d.memory_host_accessible) {
    Require("device.scale", d.scale, m);
    Require("device.reduce_into", d.reduce_into, m);
  }
  Require("device.batched_copy", d.batched_copy, m);
}

void RequireCollectives(const PluginCollectiveOps& c, std::vector<std::string>* m) {
  if (!c.readable) {
    m->push_back("ccl (table missing or smaller than ABI 1.0's)");
    return;
  }
  Require("ccl.unique_id_size", c.unique_id_size, m);
  Require("ccl.get_unique_id", c.get_unique_id, m);
  Require("ccl.comm_init_rank", c.comm_init_rank, m);
  Require("ccl.comm_destroy", c.comm_destroy, m);
  Require("ccl.comm_abort", c.comm_abort, m);
  Require("ccl.comm_get_async_error", c.comm_get_async_error, m);
  Require("ccl.supports", c.supports, m);
  Require("ccl.allreduce", c.allreduce, m);
  Require("ccl.broadcast", c.broadcast, m);
  Require("ccl.allgather", c.allgather, m);
  Require("ccl.reduce_scatter", c.reduce_scatter, m);
  Require("ccl.send", c.send, m);
  Require("ccl.recv", c.recv, m);
  Require("ccl.group_start", c.group_start, m);
  Require("ccl.group_end", c.group_end, m);
  // Every adapter fills these two (with a fallback where the plugin has no
  // call of its own): empty only when an adapter of the core is wrong.
  Require("comm_init (an adapter bug in horovod_accel: please report it)", c.comm_init, m);
  Require("release_unique_id (an adapter bug in horovod_accel: please report it)",
          c.release_unique_id, m);
}

}  // namespace

std::vector<std::string> MissingRequiredEntries(const PluginOps& ops) {
  std::vector<std::string> missing;
  Require("probe", ops.probe, &missing);
  Require("init", ops.init, &missing);
  Require("finalize", ops.finalize, &missing);
  Require("last_error", ops.last_error, &missing);
  RequireDevice(ops.device, &missing);
  RequireCollectives(ops.collectives, &missing);
  return missing;
}

}  // namespace hvda
