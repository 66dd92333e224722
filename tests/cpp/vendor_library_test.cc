// OpenVendorLibrary (csrc/devices/cuda_like/vendor_api.h): which library a
// vendor plugin opens for its runtime or collective library, against the
// fixture libraries built by CMake.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "devices/cuda_like/vendor_api.h"

namespace hvda {
namespace vendor {
namespace {

const std::string kOnDisk = std::string(HVDA_FIXTURE_DIR) + "/libhorovod_accel_fixture.so";
const std::string kFrameworkCopy = std::string(HVDA_FIXTURE_DIR) + "/libhvda_fixture_preloaded.so";
constexpr char kFrameworkSoname[] = "libhvda_preloaded_fixture.so.7";  // CMakeLists.txt
constexpr char kUnsetVariable[] = "HVDA_TEST_VENDOR_LIBRARY_NEVER_SET";

TEST(VendorLibrary, SharesADefaultTheProcessHasLoadedInsteadOfAnEarlierOneOnDisk) {
  const LibrarySpec spec{kUnsetVariable, {kOnDisk.c_str(), kFrameworkSoname, nullptr},
                         "the test runtime"};
  std::string path, error;
  // Nothing loaded under the second name (it is on no search path): the
  // first default that opens wins.
  void* h = OpenVendorLibrary(spec, nullptr, nullptr, &path, &error);
  ASSERT_NE(h, nullptr) << error;
  EXPECT_EQ(path, kOnDisk);
  dlclose(h);
  // The framework has loaded its copy (by path, as torch loads the CUDA
  // runtime from its wheels): the plugin gets that very object.
  void* framework = dlopen(kFrameworkCopy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(framework, nullptr) << dlerror();
  h = OpenVendorLibrary(spec, nullptr, nullptr, &path, &error);
  ASSERT_NE(h, nullptr) << error;
  EXPECT_EQ(path, kFrameworkSoname);
  EXPECT_EQ(h, framework);
  dlclose(h);
  dlclose(framework);
}

TEST(VendorLibrary, TheOverrideVariableWinsOverLoadedDefaults) {
  void* framework = dlopen(kFrameworkCopy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(framework, nullptr) << dlerror();
  const LibrarySpec spec{"HVDA_TEST_RUNTIME_LIB", {kFrameworkSoname, nullptr}, "the test runtime"};
  auto getenv = [](const void* ctx, const char* name) -> const char* {
    return std::string(name) == "HVDA_TEST_RUNTIME_LIB" ? static_cast<const std::string*>(ctx)->c_str()
                                                        : nullptr;
  };
  std::string path, error;
  void* h = OpenVendorLibrary(spec, getenv, &kOnDisk, &path, &error);
  ASSERT_NE(h, nullptr) << error;
  EXPECT_EQ(path, kOnDisk);
  EXPECT_NE(h, framework);
  dlclose(h);
  dlclose(framework);
}

TEST(VendorLibrary, NotFoundNamesWhatWasTriedAndTheVariable) {
  const LibrarySpec spec{kUnsetVariable, {"libhvda_no_such_runtime.so.1", "libhvda_no_such_runtime.so", nullptr},
                         "the test runtime"};
  std::string path, error;
  EXPECT_EQ(OpenVendorLibrary(spec, nullptr, nullptr, &path, &error), nullptr);
  EXPECT_NE(error.find("the test runtime library was not found"), std::string::npos) << error;
  EXPECT_NE(error.find("libhvda_no_such_runtime.so.1, libhvda_no_such_runtime.so"), std::string::npos)
      << error;
  EXPECT_NE(error.find(kUnsetVariable), std::string::npos) << error;
}

}  // namespace
}  // namespace vendor
}  // namespace hvda
