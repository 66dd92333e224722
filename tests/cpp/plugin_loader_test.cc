// The plugin loader (csrc/common/plugin): opening, ABI validation, probing
// and name resolution, against the fixture plugins built by CMake
// (tests/cpp/plugins/fixture_plugin.c, one variant per case).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "common/plugin/plugin_discovery.h"
#include "common/plugin/plugin_library.h"

namespace hvda {
namespace {

std::string Fixture(const std::string& variant) {
  return std::string(HVDA_FIXTURE_DIR) + "/libhvda_fixture_" + variant + ".so";
}

const std::string kOk = std::string(HVDA_FIXTURE_DIR) + "/libhorovod_accel_fixture.so";

TEST(PluginLibrary, OpensAValidPluginAndReadsItsTables) {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(kOk, &lib);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_STREQ(lib->plugin().name, "fixture");
  EXPECT_EQ(lib->plugin().abi_major, HVDA_PLUGIN_ABI_MAJOR);
  int n = 0;
  ASSERT_EQ(lib->device().device_count(&n), HVDA_OK);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(lib->ccl().unique_id_size(), 16u);
  // A failing call's Status carries the plugin's own message.
  Status err = lib->Error(lib->device().set_device(3), "set_device(3)");
  EXPECT_NE(err.reason().find("INVALID_ARGUMENT"), std::string::npos) << err.reason();
  EXPECT_NE(err.reason().find("device 0 only"), std::string::npos) << err.reason();
  // Optional fields: absent launch_host_func is NULL, allgatherv NULL.
  EXPECT_TRUE(HVDA_HAS_FIELD(&lib->device(), hvda_device_ops_v1, launch_host_func));
  EXPECT_EQ(lib->device().launch_host_func, nullptr);
}

TEST(PluginLibrary, MissingFileIsUnavailableNamingThePath) {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open("/nonexistent/libhorovod_accel_none.so", &lib);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.reason().find("/nonexistent/libhorovod_accel_none.so"), std::string::npos);
  EXPECT_NE(st.reason().find("HOROVOD_ACCEL_PLUGINS"), std::string::npos) << st.reason();
  EXPECT_EQ(lib, nullptr);
}

TEST(PluginLibrary, RejectsLibrariesThatAreNotCompatiblePlugins) {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(Fixture("noentry"), &lib);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.reason().find("horovod_accel_plugin_v1"), std::string::npos) << st.reason();

  st = PluginLibrary::Open(Fixture("abi2"), &lib);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("built for plugin ABI 2.0"), std::string::npos) << st.reason();

  st = PluginLibrary::Open(Fixture("norecv"), &lib);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("ccl.recv"), std::string::npos) << st.reason();
  EXPECT_EQ(lib, nullptr);
}

TEST(PluginDiscovery, ProbeReportsAvailabilityAndWhy) {
  HostApi host(nullptr);
  PluginReport ok = ProbePlugin(kOk, host);
  EXPECT_TRUE(ok.available) << ok.why;
  EXPECT_EQ(ok.name, "fixture");
  EXPECT_EQ(ok.version, "0.0.1");
  EXPECT_EQ(ok.abi, "1.0");

  PluginReport missing = ProbePlugin(Fixture("unavailable"), host);
  EXPECT_FALSE(missing.available);
  EXPECT_EQ(missing.name, "fixture");  // it loaded; its vendor library is what is missing
  EXPECT_NE(missing.why.find("HOROVOD_FIXTURE_RUNTIME_LIB"), std::string::npos) << missing.why;

  // The plugin reads the environment through the host API.
  setenv("HVDA_FIXTURE_FAIL_PROBE", "1", 1);
  PluginReport refused = ProbePlugin(kOk, host);
  unsetenv("HVDA_FIXTURE_FAIL_PROBE");
  EXPECT_FALSE(refused.available);
  EXPECT_NE(refused.why.find("HVDA_FIXTURE_FAIL_PROBE"), std::string::npos) << refused.why;
}

TEST(PluginDiscovery, NamesResolveInSearchDirsElseForTheDynamicLinker) {
  auto paths = ResolvePluginSpecs(" fixture, gcu ,/x/libfoo.so,fixture,", {HVDA_FIXTURE_DIR});
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], kOk);
  EXPECT_EQ(paths[1], "libhorovod_accel_gcu.so");
  EXPECT_EQ(paths[2], "/x/libfoo.so");
  EXPECT_TRUE(ResolvePluginSpecs("", {}).empty());
}

}  // namespace
}  // namespace hvda
