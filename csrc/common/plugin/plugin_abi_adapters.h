// One adapter per supported plugin ABI minor version (plugin_abi_v1_<minor>.cc),
// used only by the dispatch in plugin_abi.cc (kAdapters there).
//
// Contract of every adapter: `plugin` has the core's ABI major and a header
// table at least as large as ABI 1.0's (the dispatch checked both). It
// reads exactly the fields its version defines, each only where the table's
// struct_size covers it (HVDA_HAS_FIELD), and fills every entry of *ops: the
// plugin's calls, and for what its version lacks the fallback or "not
// offered" marker that PluginOps documents. It does not judge completeness
// (MissingRequiredEntries does, on the result). No side effects.
//
// Adding ABI 1.m: a file plugin_abi_v1_m.cc whose adapter runs the previous
// version's and then reads the fields 1.m appended, its declaration here, a
// row in kAdapters, and its tests (tests/cpp/plugin_abi_adapter_test.cc).
#pragma once

#include "common/plugin/plugin_ops.h"
#include "horovod_accel/plugin.h"

namespace hvda {

// ABI 1.0: the tables as first published; no 1.1 field is read.
void AdaptAbi1_0(const hvda_plugin_v1& plugin, PluginOps* ops);
// ABI 1.1: 1.0's, plus memory_host_accessible, unique_id_release and
// comm_init_rank_config.
void AdaptAbi1_1(const hvda_plugin_v1& plugin, PluginOps* ops);
// ABI 1.2: 1.1's, plus stream_from_framework.
void AdaptAbi1_2(const hvda_plugin_v1& plugin, PluginOps* ops);

}  // namespace hvda
