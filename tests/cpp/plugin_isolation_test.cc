// How the loader opens plugins (docs/design/plugin_loading.md): symbol
// isolation from the framework's copies of a plugin's dependencies, the two
// kinds of load error, and the refusal of the host device as a plugin's
// device type. Fixtures: the "Plugin isolation and load-error fixtures" block
// of the root CMakeLists.txt (tests/cpp/plugins/dup_value.c,
// tests/cpp/plugins/isolation_plugin.c).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/plugin/plugin_library.h"

namespace hvda {
namespace {

const std::string kDir = HVDA_FIXTURE_DIR;
const std::string kFrameworkCopy = kDir + "/libhvda_dup_a.so";  // hvda_dup_value() == 1
const std::string kIsolated = kDir + "/libhvda_fixture_isolated.so";  // links libhvda_dup_b.so
const std::string kControl = kDir + "/libhvda_fixture_isolated_control.so";  // the same
const std::string kNeedsMissing = kDir + "/libhvda_fixture_needs_missing.so";
const std::string kOk = kDir + "/libhorovod_accel_fixture.so";

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Sets (or unsets, for nullptr) one environment variable for a scope and
// restores the previous value. Tests run on one thread; nothing else in the
// process reads these variables concurrently.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

// The "framework" loads its copy of the library RTLD_GLOBAL, as Python loads
// torch; closed when the test ends.
class FrameworkCopy {
 public:
  FrameworkCopy() : handle_(dlopen(kFrameworkCopy.c_str(), RTLD_NOW | RTLD_GLOBAL)) {}
  ~FrameworkCopy() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* handle() const { return handle_; }

 private:
  void* handle_;
};

std::string ProbeMessage(const PluginLibrary& lib, Status* st) {
  *st = lib.Probe(nullptr);
  const char* m = lib.plugin().last_error();
  return m != nullptr ? m : "";
}

TEST(PluginIsolation, APluginsOwnDependencyWinsOverTheFrameworksGlobalCopy) {
#ifndef RTLD_DEEPBIND
  GTEST_SKIP() << "no RTLD_DEEPBIND in this C library";
#endif
  FrameworkCopy framework;
  ASSERT_NE(framework.handle(), nullptr) << dlerror();
  // The framework's copy is in the global scope: an unqualified lookup finds it.
  auto global = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "hvda_dup_value"));
  ASSERT_NE(global, nullptr);
  ASSERT_EQ(global(), 1);

  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(kIsolated, PluginIsolation::kDeepBind, &lib);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(lib->isolation(), PluginIsolation::kDeepBind);
  std::string said = ProbeMessage(*lib, &st);
  EXPECT_TRUE(st.ok()) << st.reason();
  EXPECT_TRUE(Contains(said, "own copy")) << said;
}

TEST(PluginIsolation, WithoutItTheFrameworksCopyTakesThePluginsCalls) {
  // The control: proves that the fixture really is exposed to interposition,
  // so the test above proves the isolation and not a quirk of the fixture.
  FrameworkCopy framework;
  ASSERT_NE(framework.handle(), nullptr) << dlerror();
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(kControl, PluginIsolation::kNone, &lib);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(lib->isolation(), PluginIsolation::kNone);
  std::string said = ProbeMessage(*lib, &st);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(said, "framework's copy")) << said;
}

TEST(PluginIsolation, DeepBindIsTheDefaultUnlessTurnedOff) {
#ifndef RTLD_DEEPBIND
  GTEST_SKIP() << "no RTLD_DEEPBIND in this C library";
#endif
  std::string why;
  {
    ScopedEnv unset("HOROVOD_ACCEL_PLUGIN_DEEPBIND", nullptr);
    EXPECT_EQ(DefaultPluginIsolation(&why), PluginIsolation::kDeepBind) << why;
    // Open(path, out) uses the default.
    std::unique_ptr<PluginLibrary> lib;
    Status st = PluginLibrary::Open(kOk, &lib);
    ASSERT_TRUE(st.ok()) << st.reason();
    EXPECT_EQ(lib->isolation(), PluginIsolation::kDeepBind);
  }
  for (const char* off : {"0", "false", "OFF", "No"}) {
    ScopedEnv env("HOROVOD_ACCEL_PLUGIN_DEEPBIND", off);
    EXPECT_EQ(DefaultPluginIsolation(&why), PluginIsolation::kNone) << off;
    EXPECT_TRUE(Contains(why, std::string("HOROVOD_ACCEL_PLUGIN_DEEPBIND=") + off)) << why;
  }
  ScopedEnv on("HOROVOD_ACCEL_PLUGIN_DEEPBIND", "1");
  EXPECT_EQ(DefaultPluginIsolation(&why), PluginIsolation::kDeepBind) << why;
}

TEST(PluginLoadErrors, AMissingFileIsNotFoundAndPointsAtThePluginList) {
  std::unique_ptr<PluginLibrary> lib;
  for (const std::string& path : {std::string("/nonexistent/libhorovod_accel_none.so"),
                                  kDir /* a directory, not a library file */}) {
    Status st = PluginLibrary::Open(path, &lib);
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_TRUE(Contains(st.reason(), "'" + path + "' not found")) << st.reason();
    EXPECT_TRUE(Contains(st.reason(), "HOROVOD_ACCEL_PLUGINS")) << st.reason();
    EXPECT_TRUE(Contains(st.reason(), "install the plugin")) << st.reason();
    EXPECT_FALSE(Contains(st.reason(), "was found")) << st.reason();
    EXPECT_EQ(lib, nullptr);
  }
  // A bare name is the dynamic linker's to find.
  Status st = PluginLibrary::Open("libhorovod_accel_hvda_no_such_vendor.so", &lib);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(st.reason(), "'libhorovod_accel_hvda_no_such_vendor.so' not found"))
      << st.reason();
  EXPECT_TRUE(Contains(st.reason(), "dynamic linker")) << st.reason();
}

TEST(PluginLoadErrors, AMissingDependencyIsNamedWithHowToMakeItFindable) {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(kNeedsMissing, &lib);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  const std::string& why = st.reason();
  EXPECT_TRUE(Contains(why, "'" + kNeedsMissing + "' was found but cannot be loaded")) << why;
  EXPECT_TRUE(Contains(why, "libhvda_dup_gone.so")) << why;  // dlerror's text, quoted
  EXPECT_TRUE(Contains(why, "install that library")) << why;
  EXPECT_TRUE(Contains(why, "LD_LIBRARY_PATH")) << why;
  EXPECT_TRUE(Contains(why, "RPATH")) << why;
  EXPECT_FALSE(Contains(why, "HOROVOD_ACCEL_PLUGINS")) << why;  // the plugin was found
  EXPECT_EQ(lib, nullptr);
}

TEST(PluginLoadErrors, AFileThatIsNotALibraryIsFoundButBroken) {
  const std::string path = ::testing::TempDir() + "/libhorovod_accel_hvda_garbage.so";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not an ELF file, but it is long enough to have a header\n", f);
    std::fclose(f);
  }
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(path, &lib);
  std::remove(path.c_str());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(st.reason(), "was found but cannot be loaded")) << st.reason();
  EXPECT_TRUE(Contains(st.reason(), "reinstall the plugin")) << st.reason();
}

TEST(PluginDeviceType, TheHostDeviceIsRefusedAsAnOverride) {
  EXPECT_EQ(DeviceTypeVariable("fixture"), "HOROVOD_FIXTURE_DEVICE_TYPE");
  EXPECT_EQ(DeviceTypeVariable("my-vendor.2"), "HOROVOD_MY_VENDOR_2_DEVICE_TYPE");
  std::unique_ptr<PluginLibrary> lib;
  for (const char* host : {"cpu", "CPU", "cpu:0"}) {
    ScopedEnv env("HOROVOD_FIXTURE_DEVICE_TYPE", host);
    Status st = PluginLibrary::Open(kOk, &lib);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << host;
    const std::string& why = st.reason();
    EXPECT_TRUE(Contains(why, std::string("HOROVOD_FIXTURE_DEVICE_TYPE=") + host)) << why;
    EXPECT_TRUE(Contains(why, "host device")) << why;                        // what is wrong
    EXPECT_TRUE(Contains(why, "test the CPU path")) << why;                  // why it matters
    EXPECT_TRUE(Contains(why, "Unset HOROVOD_FIXTURE_DEVICE_TYPE")) << why;  // what to do
    EXPECT_EQ(lib, nullptr);
  }
  {
    // Another name is accepted: a framework extension's own device name.
    ScopedEnv env("HOROVOD_FIXTURE_DEVICE_TYPE", "xla");
    Status st = PluginLibrary::Open(kOk, &lib);
    ASSERT_TRUE(st.ok()) << st.reason();
    EXPECT_EQ(lib->device_type(), "xla");
  }
  ScopedEnv unset("HOROVOD_FIXTURE_DEVICE_TYPE", nullptr);
  Status st = PluginLibrary::Open(kOk, &lib);
  ASSERT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(lib->device_type(), "fixture");
}

}  // namespace
}  // namespace hvda
