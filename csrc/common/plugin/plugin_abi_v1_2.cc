// Plugin ABI 1.2 -> PluginOps (the adapter contract: plugin_abi_adapters.h):
// 1.1's tables, then the one field 1.2 appended, used only where the plugin's
// table covers it.
#include "common/plugin/plugin_abi_adapters.h"

namespace hvda {

void AdaptAbi1_2(const hvda_plugin_v1& plugin, PluginOps* ops) {
  AdaptAbi1_1(plugin, ops);
  const hvda_device_ops_v1* device = plugin.device;
  if (ops->device.readable && HVDA_HAS_FIELD(device, hvda_device_ops_v1, stream_from_framework))
    ops->device.stream_from_framework = device->stream_from_framework;
}

}  // namespace hvda
