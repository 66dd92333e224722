#include "common/plugin/plugin_abi.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "common/plugin/plugin_abi_adapters.h"

namespace hvda {
namespace {

// The plugin table up to its last field of ABI 1.0 (ccl): a smaller
// struct_size predates 1.0 (not a plugin), and its version fields cannot be
// trusted.
constexpr size_t kPluginMinSize = offsetof(hvda_plugin_v1, ccl) + sizeof(void*);

struct AbiAdapter {
  uint32_t minor;
  void (*adapt)(const hvda_plugin_v1& plugin, PluginOps* ops);
};

// Every minor version of major HVDA_PLUGIN_ABI_MAJOR this core reads, oldest
// first (plugin_abi_adapters.h says how to add one).
constexpr AbiAdapter kAdapters[] = {
    {0, AdaptAbi1_0},
    {1, AdaptAbi1_1},
    {2, AdaptAbi1_2},
};
static_assert(kAdapters[std::size(kAdapters) - 1].minor == HVDA_PLUGIN_ABI_MINOR,
              "plugin.h's newest minor version needs its adapter here (plugin_abi_adapters.h)");

// The newest adapter not newer than the plugin's version (plugin_abi.h).
const AbiAdapter& AdapterFor(uint32_t minor) {
  const AbiAdapter* chosen = &kAdapters[0];
  for (const AbiAdapter& adapter : kAdapters)
    if (adapter.minor <= minor) chosen = &adapter;
  return *chosen;
}

std::string Join(const std::vector<std::string>& items) {
  std::string joined;
  for (size_t i = 0; i < items.size(); ++i) joined += (i ? ", " : "") + items[i];
  return joined;
}

}  // namespace

std::string PluginAbiVersion(const hvda_plugin_v1& plugin) {
  return std::to_string(plugin.abi_major) + "." + std::to_string(plugin.abi_minor);
}

std::string AdaptPlugin(const hvda_plugin_v1& plugin, PluginOps* ops) {
  if (plugin.struct_size < kPluginMinSize)
    return "its plugin table is " + std::to_string(plugin.struct_size) +
           " bytes, smaller than ABI 1.0's " + std::to_string(kPluginMinSize);
  if (plugin.abi_major != HVDA_PLUGIN_ABI_MAJOR)
    return "it was built for plugin ABI " + PluginAbiVersion(plugin) + ", this core speaks " +
           std::to_string(HVDA_PLUGIN_ABI_MAJOR) + "." + std::to_string(HVDA_PLUGIN_ABI_MINOR);
  // A field of every version's header table, checked here before the
  // adapter so that a plugin's problems are reported in the header's order.
  if (plugin.name == nullptr || plugin.name[0] == '\0') return "it has no name";
  *ops = PluginOps{};
  AdapterFor(plugin.abi_minor).adapt(plugin, ops);
  const std::vector<std::string> missing = MissingRequiredEntries(*ops);
  if (!missing.empty()) return "required functions are missing: " + Join(missing);
  return "";
}

}  // namespace hvda
