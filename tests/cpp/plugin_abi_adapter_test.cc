// The plugin ABI's adapters and their dispatch (csrc/common/plugin/
// plugin_abi*.cc, NOTE [One table per plugin] in plugin_ops.h), on plugin
// tables built in memory: which fields each version's adapter reads, the
// fallbacks it puts where the plugin's version has no call, and the
// dispatch's refusals. (The same adapters over real plugin libraries, 1.0
// and 1.1 builds: plugin_abi_test.cc.)
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/plugin/plugin_abi.h"
#include "common/plugin/plugin_ops.h"

namespace hvda {
namespace {

// A call that does nothing and returns 0 (HVDA_OK, 0 bytes, NULL), for any
// function-pointer field of the ABI's tables.
template <typename Fn>
struct Stub;
template <typename Result, typename... Args>
struct Stub<Result (*)(Args...)> {
  static Result Call(Args...) { return Result{}; }
};
template <typename Fn>
void SetStub(Fn* field) {
  *field = &Stub<Fn>::Call;
}

// What the recording calls below saw. One test at a time uses it (gtest
// runs tests sequentially); the fixture resets it.
struct Recorded {
  int init_rank_calls = 0, init_config_calls = 0, releases = 0;
  double init_rank_timeout = -1, config_init_timeout = -1, config_op_timeout = -1;
  size_t released_bytes = 0;
};
Recorded& Calls() {
  static Recorded recorded;
  return recorded;
}

hvda_status RecordInitRank(const void*, size_t, int, int, int, double timeout_seconds,
                           hvda_comm_t*) {
  ++Calls().init_rank_calls;
  Calls().init_rank_timeout = timeout_seconds;
  return HVDA_OK;
}
hvda_status RecordInitConfig(const void*, size_t, int, int, int, const hvda_comm_config_v1* config,
                             hvda_comm_t*) {
  ++Calls().init_config_calls;
  Calls().config_init_timeout = config->init_timeout_seconds;
  Calls().config_op_timeout = config->op_timeout_seconds;
  return HVDA_OK;
}
hvda_status RecordRelease(const void*, size_t id_bytes) {
  ++Calls().releases;
  Calls().released_bytes = id_bytes;
  return HVDA_OK;
}

// Where each table of ABI 1.0 ended (the first field 1.1 appended).
constexpr size_t kDevice10Size = offsetof(hvda_device_ops_v1, memory_host_accessible);
constexpr size_t kCcl10Size = offsetof(hvda_ccl_ops_v1, unique_id_release);

// A complete plugin table of the current header (every field, 1.1's too,
// filled in) that says it was built against 1.`minor`; tests then cut it.
struct FakePlugin {
  hvda_plugin_v1 plugin{};
  hvda_device_ops_v1 device{};
  hvda_ccl_ops_v1 ccl{};

  explicit FakePlugin(uint32_t minor) {
    plugin.struct_size = sizeof(plugin);
    plugin.abi_major = HVDA_PLUGIN_ABI_MAJOR;
    plugin.abi_minor = minor;
    plugin.name = "fake";
    plugin.version = "0";
    plugin.device_type = "fake";
    SetStub(&plugin.probe);
    SetStub(&plugin.init);
    SetStub(&plugin.finalize);
    SetStub(&plugin.last_error);
    plugin.device = &device;
    plugin.ccl = &ccl;

    device.struct_size = sizeof(device);
    SetStub(&device.device_count);
    SetStub(&device.set_device);
    SetStub(&device.mem_alloc);
    SetStub(&device.mem_free);
    SetStub(&device.host_alloc);
    SetStub(&device.host_free);
    SetStub(&device.memcpy_async);
    SetStub(&device.memset_async);
    SetStub(&device.stream_create);
    SetStub(&device.stream_wrap);
    SetStub(&device.stream_destroy);
    SetStub(&device.stream_synchronize);
    SetStub(&device.stream_wait_event);
    SetStub(&device.event_create);
    SetStub(&device.event_destroy);
    SetStub(&device.event_record);
    SetStub(&device.event_query);
    SetStub(&device.event_synchronize);
    SetStub(&device.scale);
    SetStub(&device.reduce_into);
    SetStub(&device.batched_copy);
    SetStub(&device.launch_host_func);
    device.memory_host_accessible = 0;

    ccl.struct_size = sizeof(ccl);
    SetStub(&ccl.unique_id_size);
    SetStub(&ccl.get_unique_id);
    ccl.comm_init_rank = RecordInitRank;
    SetStub(&ccl.comm_destroy);
    SetStub(&ccl.comm_abort);
    SetStub(&ccl.comm_get_async_error);
    SetStub(&ccl.supports);
    SetStub(&ccl.allreduce);
    SetStub(&ccl.broadcast);
    SetStub(&ccl.allgather);
    SetStub(&ccl.reduce_scatter);
    SetStub(&ccl.send);
    SetStub(&ccl.recv);
    SetStub(&ccl.group_start);
    SetStub(&ccl.group_end);
    SetStub(&ccl.allgatherv);
    SetStub(&ccl.alltoallv);
    ccl.unique_id_release = RecordRelease;
    ccl.comm_init_rank_config = RecordInitConfig;
  }
  // A table as a 1.0 build leaves it: 1.0-sized, nothing past it.
  void CutToAbi10() {
    device.struct_size = kDevice10Size;
    ccl.struct_size = kCcl10Size;
  }
};

class PluginAbiAdapters : public ::testing::Test {
 protected:
  void SetUp() override { Calls() = Recorded{}; }

  // Creates a communicator through the table, with these timeouts.
  static hvda_status Join(const PluginOps& ops, double init_timeout, double op_timeout) {
    hvda_comm_config_v1 config{};
    config.struct_size = sizeof(config);
    config.init_timeout_seconds = init_timeout;
    config.op_timeout_seconds = op_timeout;
    hvda_comm_t comm = nullptr;
    const char id[4] = {1, 2, 3, 4};
    return ops.collectives.comm_init(id, sizeof(id), 2, 0, 0, config, &comm);
  }
};

// A 1.0 plugin: its calls as they are, and for what 1.0 lacks the fallbacks
// PluginOps documents.
TEST_F(PluginAbiAdapters, AnAbi10PluginGetsTheDocumentedFallbacks) {
  FakePlugin fake(0);
  fake.CutToAbi10();
  fake.device.launch_host_func = nullptr;  // optional 1.0 fields left NULL
  fake.ccl.allgatherv = nullptr;
  PluginOps ops;
  ASSERT_EQ(AdaptPlugin(fake.plugin, &ops), "");
  // The plugin's own calls, unchanged.
  EXPECT_EQ(ops.probe, fake.plugin.probe);
  EXPECT_EQ(ops.device.mem_alloc, fake.device.mem_alloc);
  EXPECT_EQ(ops.device.scale, fake.device.scale);
  EXPECT_EQ(ops.collectives.allreduce, fake.ccl.allreduce);
  EXPECT_EQ(ops.collectives.alltoallv, fake.ccl.alltoallv);
  // Optional calls it does not offer: "not offered".
  EXPECT_EQ(ops.device.launch_host_func, nullptr);
  EXPECT_EQ(ops.collectives.allgatherv, nullptr);
  // What 1.0 has no field for.
  EXPECT_FALSE(ops.device.memory_host_accessible);
  EXPECT_STREQ(ops.collectives.comm_init_name, "comm_init_rank");
  ASSERT_EQ(Join(ops, 12.5, 7.0), HVDA_OK);
  EXPECT_EQ(Calls().init_rank_calls, 1);
  EXPECT_DOUBLE_EQ(Calls().init_rank_timeout, 12.5);  // the creation timeout only
  EXPECT_EQ(Calls().init_config_calls, 0);
  ASSERT_TRUE(ops.collectives.release_unique_id);
  ops.collectives.release_unique_id("id", 2);  // nothing to release
  EXPECT_EQ(Calls().releases, 0);
}

// plugin.h: a field added in 1.x is used only when the plugin's abi_minor
// is at least x - a plugin that says 1.0 gets 1.0's behaviour even where
// its tables (built with a newer header) carry 1.1's fields.
TEST_F(PluginAbiAdapters, AnAbi10PluginsAppendedFieldsAreNotRead) {
  FakePlugin fake(0);
  fake.device.memory_host_accessible = 1;
  PluginOps ops;
  ASSERT_EQ(AdaptPlugin(fake.plugin, &ops), "");
  EXPECT_FALSE(ops.device.memory_host_accessible);
  EXPECT_STREQ(ops.collectives.comm_init_name, "comm_init_rank");
  ASSERT_EQ(Join(ops, 1.0, 2.0), HVDA_OK);
  EXPECT_EQ(Calls().init_rank_calls, 1);
  EXPECT_EQ(Calls().init_config_calls, 0);
  ops.collectives.release_unique_id("id", 2);
  EXPECT_EQ(Calls().releases, 0);

  // Nor may it leave its kernels to the core: 1.0 has no flag for that.
  fake.device.scale = nullptr;
  EXPECT_EQ(AdaptPlugin(fake.plugin, &ops), "required functions are missing: device.scale");
}

// A 1.1 plugin: its appended calls replace the fallbacks.
TEST_F(PluginAbiAdapters, AnAbi11PluginsAppendedCallsAreUsed) {
  FakePlugin fake(1);
  fake.device.memory_host_accessible = 1;
  fake.device.scale = nullptr;  // left to the core's host kernels
  fake.device.reduce_into = nullptr;
  PluginOps ops;
  ASSERT_EQ(AdaptPlugin(fake.plugin, &ops), "");
  EXPECT_TRUE(ops.device.memory_host_accessible);
  EXPECT_EQ(ops.device.scale, nullptr);
  EXPECT_EQ(ops.device.reduce_into, nullptr);
  EXPECT_STREQ(ops.collectives.comm_init_name, "comm_init_rank_config");
  ASSERT_EQ(Join(ops, 3.0, 9.0), HVDA_OK);
  EXPECT_EQ(Calls().init_rank_calls, 0);
  EXPECT_EQ(Calls().init_config_calls, 1);
  EXPECT_DOUBLE_EQ(Calls().config_init_timeout, 3.0);
  EXPECT_DOUBLE_EQ(Calls().config_op_timeout, 9.0);
  ops.collectives.release_unique_id("id", 2);
  EXPECT_EQ(Calls().releases, 1);
  EXPECT_EQ(Calls().released_bytes, 2u);
}

// A 1.1 plugin whose tables end where 1.0's did (or that left the new calls
// NULL) gets the 1.0 fallbacks: nothing past struct_size is read.
TEST_F(PluginAbiAdapters, AnAbi11PluginsFieldsPastStructSizeAreNotRead) {
  FakePlugin fake(1);
  fake.device.memory_host_accessible = 1;
  fake.CutToAbi10();
  PluginOps ops;
  ASSERT_EQ(AdaptPlugin(fake.plugin, &ops), "");
  EXPECT_FALSE(ops.device.memory_host_accessible);
  EXPECT_STREQ(ops.collectives.comm_init_name, "comm_init_rank");
  ops.collectives.release_unique_id("id", 2);
  EXPECT_EQ(Calls().releases, 0);

  FakePlugin nulls(1);
  nulls.ccl.unique_id_release = nullptr;
  nulls.ccl.comm_init_rank_config = nullptr;
  ASSERT_EQ(AdaptPlugin(nulls.plugin, &ops), "");
  EXPECT_STREQ(ops.collectives.comm_init_name, "comm_init_rank");
  ASSERT_EQ(Join(ops, 4.0, 5.0), HVDA_OK);
  EXPECT_DOUBLE_EQ(Calls().init_rank_timeout, 4.0);
  ops.collectives.release_unique_id("id", 2);
  EXPECT_EQ(Calls().releases, 0);
}

hvda_status MapStream(int, const char*, void* framework_stream, void** native) {
  *native = static_cast<char*>(framework_stream) + 1;
  return HVDA_OK;
}

// ABI 1.2's stream_from_framework is read from a 1.2 plugin only, and only
// where its table covers the field.
TEST_F(PluginAbiAdapters, TheStreamMapperIsReadFromAbi12PluginsOnly) {
  FakePlugin fake(2);
  fake.device.stream_from_framework = MapStream;
  PluginOps ops;
  ASSERT_EQ(AdaptPlugin(fake.plugin, &ops), "");
  ASSERT_EQ(ops.device.stream_from_framework, &MapStream);

  FakePlugin older(1);  // built with a newer header, says 1.1
  older.device.stream_from_framework = MapStream;
  ASSERT_EQ(AdaptPlugin(older.plugin, &ops), "");
  EXPECT_EQ(ops.device.stream_from_framework, nullptr);

  FakePlugin cut(2);
  cut.device.stream_from_framework = MapStream;
  cut.device.struct_size = offsetof(hvda_device_ops_v1, stream_from_framework);
  ASSERT_EQ(AdaptPlugin(cut.plugin, &ops), "");
  EXPECT_EQ(ops.device.stream_from_framework, nullptr);

  FakePlugin none(2);  // optional: a 1.2 plugin may leave it NULL
  ASSERT_EQ(AdaptPlugin(none.plugin, &ops), "");
  EXPECT_EQ(ops.device.stream_from_framework, nullptr);
}

TEST_F(PluginAbiAdapters, NullKernelsNeedTheHostAccessibleFlag) {
  FakePlugin fake(1);
  fake.device.scale = nullptr;
  fake.device.reduce_into = nullptr;
  PluginOps ops;
  EXPECT_EQ(AdaptPlugin(fake.plugin, &ops),
            "required functions are missing: device.scale, device.reduce_into");
}

// Minor versions only append: a plugin built against a newer minor than
// this core's is read by the newest adapter, which finds its fields where
// it expects them (the plugin's entry point decides whether it can serve an
// older core).
TEST_F(PluginAbiAdapters, ANewerMinorIsReadAsTheNewestKnownVersion) {
  FakePlugin fake(HVDA_PLUGIN_ABI_MINOR + 1);
  fake.device.memory_host_accessible = 1;
  PluginOps ops;
  ASSERT_EQ(AdaptPlugin(fake.plugin, &ops), "");
  EXPECT_TRUE(ops.device.memory_host_accessible);
  EXPECT_STREQ(ops.collectives.comm_init_name, "comm_init_rank_config");
}

TEST_F(PluginAbiAdapters, AnotherMajorVersionIsRefusedNamingBoth) {
  FakePlugin fake(3);
  fake.plugin.abi_major = HVDA_PLUGIN_ABI_MAJOR + 1;
  PluginOps ops;
  const std::string core = std::to_string(HVDA_PLUGIN_ABI_MAJOR) + "." +
                           std::to_string(HVDA_PLUGIN_ABI_MINOR);
  EXPECT_EQ(AdaptPlugin(fake.plugin, &ops),
            "it was built for plugin ABI " + std::to_string(HVDA_PLUGIN_ABI_MAJOR + 1) +
                ".3, this core speaks " + core);
  EXPECT_EQ(PluginAbiVersion(fake.plugin), std::to_string(HVDA_PLUGIN_ABI_MAJOR + 1) + ".3");
}

TEST_F(PluginAbiAdapters, TablesSmallerThanAbi10AreRefused) {
  FakePlugin fake(0);
  fake.plugin.struct_size = 8;
  PluginOps ops;
  const std::string problem = AdaptPlugin(fake.plugin, &ops);
  EXPECT_EQ(problem.rfind("its plugin table is 8 bytes, smaller than ABI 1.0's ", 0), 0u)
      << problem;

  FakePlugin small(1);
  small.plugin.device = nullptr;
  small.ccl.struct_size = offsetof(hvda_ccl_ops_v1, group_end);  // group_end cut off
  EXPECT_EQ(AdaptPlugin(small.plugin, &ops),
            "required functions are missing: device (table missing or smaller than ABI 1.0's), "
            "ccl (table missing or smaller than ABI 1.0's)");

  FakePlugin nameless(0);
  nameless.plugin.name = "";
  EXPECT_EQ(AdaptPlugin(nameless.plugin, &ops), "it has no name");
}

// Every missing required call is named, in the header's order.
TEST_F(PluginAbiAdapters, MissingCallsAreNamedInTheHeadersOrder) {
  for (uint32_t minor : {0u, 1u, 2u}) {
    FakePlugin fake(minor);
    fake.plugin.init = nullptr;
    fake.device.event_query = nullptr;
    fake.ccl.recv = nullptr;
    fake.ccl.comm_init_rank = nullptr;  // required even beside comm_init_rank_config
    PluginOps ops;
    EXPECT_EQ(AdaptPlugin(fake.plugin, &ops),
              "required functions are missing: init, device.event_query, ccl.comm_init_rank, "
              "ccl.recv")
        << "ABI 1." << minor;
  }
}

TEST(PluginOpsValidation, AnEmptyTableMissesEverythingAndTheFallbacks) {
  PluginOps ops;
  ops.device.readable = true;
  ops.collectives.readable = true;
  const std::vector<std::string> missing = MissingRequiredEntries(ops);
  // 4 plugin calls, 21 device calls (scale and reduce_into included),
  // 15 collective calls, and the two entries every adapter must fill.
  EXPECT_EQ(missing.size(), 4u + 21u + 15u + 2u);
  EXPECT_EQ(missing.front(), "probe");
  EXPECT_NE(missing.back().find("adapter bug"), std::string::npos) << missing.back();
  ops.device.memory_host_accessible = true;  // scale, reduce_into: the core's
  EXPECT_EQ(MissingRequiredEntries(ops).size(), missing.size() - 2);
}

}  // namespace
}  // namespace hvda
