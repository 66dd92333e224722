// The plugin ABI's versions, handled in one place (NOTE [One table per
// plugin] in plugin_ops.h): AdaptPlugin checks a plugin's header table and
// hands it to the adapter of its ABI minor version, which fills the core's
// PluginOps. Nothing else in the core reads abi_major / abi_minor.
//
// Which adapter reads a plugin built against 1.m: the one for the newest
// version this core knows that is not newer than 1.m. A plugin built
// against a newer minor than the core's (1.2 under a 1.1 core) is read as
// the newest known version: minor versions only append fields, so the
// fields that version knows are where it expects them, and the rest stay
// unread (plugin.h, "versioning"; the plugin's entry point decides whether
// it can serve an older core). Another major version is refused.
#pragma once

#include <string>

#include "common/plugin/plugin_ops.h"
#include "horovod_accel/plugin.h"

namespace hvda {

// Fills *ops from `plugin` (as its entry point returned it) and checks the
// result. Returns "" when the plugin is usable, else one clause saying why
// it is not, for the loader's message ("it was built for plugin ABI 2.0,
// this core speaks 1.1"; "required functions are missing: ccl.recv").
// Reads only the fields the plugin's version defines and its struct_size
// covers. *ops then points into the plugin library (see PluginOps).
std::string AdaptPlugin(const hvda_plugin_v1& plugin, PluginOps* ops);

// "1.0": the ABI version the plugin says it was built against, for reports
// (--check-build, and AdaptPlugin's wrong-major message). Only for a plugin
// whose table passed AdaptPlugin's struct_size check.
std::string PluginAbiVersion(const hvda_plugin_v1& plugin);

}  // namespace hvda
