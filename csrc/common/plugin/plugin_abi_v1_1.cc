// Plugin ABI 1.1 -> PluginOps (the adapter contract: plugin_abi_adapters.h):
// 1.0's tables, then the three fields 1.1 appended, each used only where the
// plugin's table covers it and filled it in.
#include "common/plugin/plugin_abi_adapters.h"

namespace hvda {

void AdaptAbi1_1(const hvda_plugin_v1& plugin, PluginOps* ops) {
  AdaptAbi1_0(plugin, ops);

  const hvda_device_ops_v1* device = plugin.device;
  if (ops->device.readable && HVDA_HAS_FIELD(device, hvda_device_ops_v1, memory_host_accessible))
    ops->device.memory_host_accessible = device->memory_host_accessible != 0;

  const hvda_ccl_ops_v1* ccl = plugin.ccl;
  if (!ops->collectives.readable) return;
  if (HVDA_HAS_FIELD(ccl, hvda_ccl_ops_v1, unique_id_release) && ccl->unique_id_release) {
    const auto release = ccl->unique_id_release;
    ops->collectives.release_unique_id = [release](const void* id, size_t id_bytes) {
      release(id, id_bytes);
    };
  }
  if (HVDA_HAS_FIELD(ccl, hvda_ccl_ops_v1, comm_init_rank_config) && ccl->comm_init_rank_config) {
    const auto init = ccl->comm_init_rank_config;
    ops->collectives.comm_init = [init](const void* id, size_t id_bytes, int nranks, int rank,
                                        int device_index, const hvda_comm_config_v1& config,
                                        hvda_comm_t* comm) {
      return init(id, id_bytes, nranks, rank, device_index, &config, comm);
    };
    ops->collectives.comm_init_name = "comm_init_rank_config";
  }
}

}  // namespace hvda
