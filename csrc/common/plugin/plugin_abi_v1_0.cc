// Plugin ABI 1.0 -> PluginOps (the adapter contract: plugin_abi_adapters.h).
// 1.0 is also the base every later adapter starts from: it reads the fields
// 1.0 defined and puts the documented fallbacks where later versions added
// calls - so a 1.1 plugin that declares abi_minor 0 gets exactly 1.0's
// behaviour, whatever its struct_size.
#include <cstddef>

#include "common/plugin/plugin_abi_adapters.h"

namespace hvda {
namespace {

// Each 1.0 table up to its last required field: a smaller struct_size
// predates 1.0, and the table is not read at all.
constexpr size_t kDeviceMinSize = offsetof(hvda_device_ops_v1, batched_copy) + sizeof(void*);
constexpr size_t kCollectivesMinSize = offsetof(hvda_ccl_ops_v1, group_end) + sizeof(void*);

void ReadDeviceTable(const hvda_device_ops_v1* table, PluginDeviceOps* ops) {
  if (table == nullptr || table->struct_size < kDeviceMinSize) return;
  ops->readable = true;
  ops->device_count = table->device_count;
  ops->set_device = table->set_device;
  ops->mem_alloc = table->mem_alloc;
  ops->mem_free = table->mem_free;
  ops->host_alloc = table->host_alloc;
  ops->host_free = table->host_free;
  ops->memcpy_async = table->memcpy_async;
  ops->memset_async = table->memset_async;
  ops->stream_create = table->stream_create;
  ops->stream_wrap = table->stream_wrap;
  ops->stream_destroy = table->stream_destroy;
  ops->stream_synchronize = table->stream_synchronize;
  ops->stream_wait_event = table->stream_wait_event;
  ops->event_create = table->event_create;
  ops->event_destroy = table->event_destroy;
  ops->event_record = table->event_record;
  ops->event_query = table->event_query;
  ops->event_synchronize = table->event_synchronize;
  ops->scale = table->scale;
  ops->reduce_into = table->reduce_into;
  ops->batched_copy = table->batched_copy;
  // Optional, after the required part: a table may end before it.
  if (HVDA_HAS_FIELD(table, hvda_device_ops_v1, launch_host_func))
    ops->launch_host_func = table->launch_host_func;
  // 1.0 has no flag: memory from mem_alloc is device memory, the plugin's
  // scale / reduce_into are required.
  ops->memory_host_accessible = false;
}

void ReadCollectivesTable(const hvda_ccl_ops_v1* table, PluginCollectiveOps* ops) {
  if (table == nullptr || table->struct_size < kCollectivesMinSize) return;
  ops->readable = true;
  ops->unique_id_size = table->unique_id_size;
  ops->get_unique_id = table->get_unique_id;
  ops->comm_init_rank = table->comm_init_rank;
  ops->comm_destroy = table->comm_destroy;
  ops->comm_abort = table->comm_abort;
  ops->comm_get_async_error = table->comm_get_async_error;
  ops->supports = table->supports;
  ops->allreduce = table->allreduce;
  ops->broadcast = table->broadcast;
  ops->allgather = table->allgather;
  ops->reduce_scatter = table->reduce_scatter;
  ops->send = table->send;
  ops->recv = table->recv;
  ops->group_start = table->group_start;
  ops->group_end = table->group_end;
  // Optional, after the required part: a table may end before them.
  if (HVDA_HAS_FIELD(table, hvda_ccl_ops_v1, allgatherv)) ops->allgatherv = table->allgatherv;
  if (HVDA_HAS_FIELD(table, hvda_ccl_ops_v1, alltoallv)) ops->alltoallv = table->alltoallv;
  // 1.0 creates a communicator with its creation timeout only: the
  // operation timeout of the config does not reach the plugin.
  const auto comm_init_rank = table->comm_init_rank;
  ops->comm_init = [comm_init_rank](const void* id, size_t id_bytes, int nranks, int rank,
                                    int device, const hvda_comm_config_v1& config,
                                    hvda_comm_t* comm) {
    return comm_init_rank(id, id_bytes, nranks, rank, device, config.init_timeout_seconds, comm);
  };
  ops->comm_init_name = "comm_init_rank";
  // 1.0 has no release: its ids hold nothing the core could give back.
  ops->release_unique_id = [](const void*, size_t) {};
}

}  // namespace

void AdaptAbi1_0(const hvda_plugin_v1& plugin, PluginOps* ops) {
  ops->probe = plugin.probe;
  ops->init = plugin.init;
  ops->finalize = plugin.finalize;
  ops->last_error = plugin.last_error;
  ReadDeviceTable(plugin.device, &ops->device);
  ReadCollectivesTable(plugin.ccl, &ops->collectives);
}

}  // namespace hvda
