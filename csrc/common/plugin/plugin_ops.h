// PluginOps: the one table through which the core calls a device plugin,
// whatever 1.x version of the ABI (csrc/include/horovod_accel/plugin.h) the
// plugin was built against.
//
// NOTE [One table per plugin]: a plugin's exported tables are read once, at
// load (PluginLibrary::Open), by the adapter of its ABI version
// (plugin_abi.cc picks it; plugin_abi_v1_<minor>.cc fills this table). The
// rest of the core - PluginDevice, PluginBackend - calls only this table and
// never asks which version a plugin speaks: what a version lacks is already
// a fallback or an explicit "not offered" here. Supporting a new minor
// version is one new adapter file (docs/design/plugins.md, "ABI versions").
//
// What an entry holds, once the loader accepted the plugin:
//  - required entries: never null (MissingRequiredEntries names any that
//    are, and the loader refuses the plugin);
//  - entries with a fallback (comm_init, release_unique_id): never null; the
//    adapter puts the plugin's call there, or the fallback the comment names;
//  - optional entries the core composes around (allgatherv, alltoallv,
//    launch_host_func, and scale / reduce_into): null means "not offered",
//    and the caller does what the comment says instead.
//
// Lifetime: the entries point into the plugin library (the std::function
// entries capture only such pointers): valid while the PluginLibrary that
// holds this table lives. Filled once at load, then only read: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "horovod_accel/plugin.h"

namespace hvda {

// The plugin's device table, as the core uses it (plugin.h documents each
// call; the types are the ABI's own).
struct PluginDeviceOps {
  // Whether the plugin gave a device table at least as large as ABI 1.0's
  // (the smallest there ever is); when false every entry below is null.
  bool readable = false;

  decltype(hvda_device_ops_v1::device_count) device_count = nullptr;
  decltype(hvda_device_ops_v1::set_device) set_device = nullptr;
  decltype(hvda_device_ops_v1::mem_alloc) mem_alloc = nullptr;
  decltype(hvda_device_ops_v1::mem_free) mem_free = nullptr;
  decltype(hvda_device_ops_v1::host_alloc) host_alloc = nullptr;
  decltype(hvda_device_ops_v1::host_free) host_free = nullptr;
  decltype(hvda_device_ops_v1::memcpy_async) memcpy_async = nullptr;
  decltype(hvda_device_ops_v1::memset_async) memset_async = nullptr;
  decltype(hvda_device_ops_v1::stream_create) stream_create = nullptr;
  decltype(hvda_device_ops_v1::stream_wrap) stream_wrap = nullptr;
  decltype(hvda_device_ops_v1::stream_destroy) stream_destroy = nullptr;
  decltype(hvda_device_ops_v1::stream_synchronize) stream_synchronize = nullptr;
  decltype(hvda_device_ops_v1::stream_wait_event) stream_wait_event = nullptr;
  decltype(hvda_device_ops_v1::event_create) event_create = nullptr;
  decltype(hvda_device_ops_v1::event_destroy) event_destroy = nullptr;
  decltype(hvda_device_ops_v1::event_record) event_record = nullptr;
  decltype(hvda_device_ops_v1::event_query) event_query = nullptr;
  decltype(hvda_device_ops_v1::event_synchronize) event_synchronize = nullptr;
  decltype(hvda_device_ops_v1::batched_copy) batched_copy = nullptr;

  // Null: not offered; the core's host kernels run it after a stream
  // synchronize (PluginDevice). Allowed only with memory_host_accessible.
  decltype(hvda_device_ops_v1::scale) scale = nullptr;
  decltype(hvda_device_ops_v1::reduce_into) reduce_into = nullptr;
  // Null: not offered; the core polls events instead of being called back.
  decltype(hvda_device_ops_v1::launch_host_func) launch_host_func = nullptr;
  // Memory from mem_alloc is host memory of this process (plugin.h,
  // memory_host_accessible); false where the plugin's version has no flag.
  bool memory_host_accessible = false;
  // Null: not offered (plugin.h, ABI 1.2); framework streams other than
  // native handles cannot be used with this device then.
  decltype(hvda_device_ops_v1::stream_from_framework) stream_from_framework = nullptr;
};

// The plugin's collective library, as the core uses it.
struct PluginCollectiveOps {
  // As PluginDeviceOps::readable, for the ccl table.
  bool readable = false;

  decltype(hvda_ccl_ops_v1::unique_id_size) unique_id_size = nullptr;
  decltype(hvda_ccl_ops_v1::get_unique_id) get_unique_id = nullptr;
  // Required of every plugin (plugin.h), so checked at load; the core never
  // calls it here: it creates communicators through comm_init, which calls
  // this where the plugin has nothing newer.
  decltype(hvda_ccl_ops_v1::comm_init_rank) comm_init_rank = nullptr;
  decltype(hvda_ccl_ops_v1::comm_destroy) comm_destroy = nullptr;
  decltype(hvda_ccl_ops_v1::comm_abort) comm_abort = nullptr;
  decltype(hvda_ccl_ops_v1::comm_get_async_error) comm_get_async_error = nullptr;
  decltype(hvda_ccl_ops_v1::supports) supports = nullptr;
  decltype(hvda_ccl_ops_v1::allreduce) allreduce = nullptr;
  decltype(hvda_ccl_ops_v1::broadcast) broadcast = nullptr;
  decltype(hvda_ccl_ops_v1::allgather) allgather = nullptr;
  decltype(hvda_ccl_ops_v1::reduce_scatter) reduce_scatter = nullptr;
  decltype(hvda_ccl_ops_v1::send) send = nullptr;
  decltype(hvda_ccl_ops_v1::recv) recv = nullptr;
  decltype(hvda_ccl_ops_v1::group_start) group_start = nullptr;
  decltype(hvda_ccl_ops_v1::group_end) group_end = nullptr;

  // Null: not offered; the core composes them (plugin.h, "supports").
  decltype(hvda_ccl_ops_v1::allgatherv) allgatherv = nullptr;
  decltype(hvda_ccl_ops_v1::alltoallv) alltoallv = nullptr;

  // Joins a communicator with the core's settings: the plugin's
  // comm_init_rank_config where it has one; otherwise comm_init_rank with
  // config.init_timeout_seconds (the operation timeout then does not reach
  // the plugin). Blocks as comm_init_rank does; config is read during the
  // call only.
  using CommInit = std::function<hvda_status(const void* id, size_t id_bytes, int nranks, int rank,
                                             int device, const hvda_comm_config_v1& config,
                                             hvda_comm_t* comm)>;
  CommInit comm_init;
  // The plugin call comm_init makes ("comm_init_rank_config" or
  // "comm_init_rank"), for messages; set by the adapters. Static storage.
  const char* comm_init_name = nullptr;
  // Releases what get_unique_id acquired for an id (plugin.h,
  // unique_id_release): the plugin's call, or nothing where it has none
  // (its ids hold no resources). Its status is not reported: a release
  // happens on the way out of communicator creation, success or not.
  std::function<void(const void* id, size_t id_bytes)> release_unique_id;
};

struct PluginOps {
  // The plugin table's own calls (required).
  decltype(hvda_plugin_v1::probe) probe = nullptr;
  decltype(hvda_plugin_v1::init) init = nullptr;
  decltype(hvda_plugin_v1::finalize) finalize = nullptr;
  decltype(hvda_plugin_v1::last_error) last_error = nullptr;

  PluginDeviceOps device;
  PluginCollectiveOps collectives;
};

// The required entries of `ops` that are null, named as plugin.h names the
// fields ("probe", "device.scale", "ccl.recv"), in the header's order; a
// table that was not readable is one item ("device (table missing or
// smaller than ABI 1.0's)"). scale and reduce_into are required unless
// memory_host_accessible. Empty: the plugin is complete.
std::vector<std::string> MissingRequiredEntries(const PluginOps& ops);

}  // namespace hvda
