// The MPI shim table (devices/cpu/mpi_shim_table.h) without mpirun: binding
// stand-in shims built by CMake (tests/cpp/plugins/fixture_mpi_shim.c) the
// way the core binds the real one, the errors for a shim that is not loaded,
// has another ABI or lacks functions, the table's reference to the library,
// and Describe().
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "devices/cpu/mpi_shim_table.h"

namespace hvda {
namespace cpu {
namespace {

std::string Shim(const std::string& variant) {
  return std::string(HVDA_FIXTURE_DIR) + "/libhvda_fixture_mpi_shim_" + variant + ".so";
}

// Whether `path` is loaded in this process now.
bool IsLoaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

// Loads a library as hvd.init() loads the shim under mpirun, before the core
// binds it; drops this reference when it goes out of scope.
class Preloaded {
 public:
  explicit Preloaded(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW)) {
    EXPECT_NE(handle_, nullptr) << dlerror();
  }
  ~Preloaded() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Preloaded(const Preloaded&) = delete;
  Preloaded& operator=(const Preloaded&) = delete;

 private:
  void* handle_;
};

// The reason LoadMpiShim gives for `path` (fails the test if it succeeds).
std::string RefusalOf(const std::string& path) {
  std::shared_ptr<const MpiShim> shim;
  Status st = LoadMpiShim(path, &shim);
  EXPECT_EQ(st.code(), StatusCode::kPrecondition) << path;
  EXPECT_EQ(shim, nullptr);
  return st.reason();
}

TEST(MpiShimTable, ShimNotLoadedSaysItComesFromMpirun) {
  for (const std::string& path : {Shim("ok"), std::string("/nonexistent/libhvda_mpi_shim.so")}) {
    ASSERT_FALSE(IsLoaded(path));
    const std::string why = RefusalOf(path);
    EXPECT_NE(why.find("the MPI shim " + path + " (_HOROVOD_MPI_SHIM) is not loaded in this "
                       "process"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("hvd.init() in a job started by mpirun"), std::string::npos) << why;
  }
}

TEST(MpiShimTable, OtherAbiOrNoShimAtAllIsRefused) {
  {
    Preloaded abi1(Shim("abi1"));
    const std::string why = RefusalOf(Shim("abi1"));
    EXPECT_NE(why.find("has ABI 1, this core needs " + std::to_string(HVDA_MPI_SHIM_ABI) +
                       "; reinstall horovod_accel."),
              std::string::npos)
        << why;
  }
  // A loaded library that is no shim (a plugin fixture): no ABI symbol.
  const std::string not_a_shim = std::string(HVDA_FIXTURE_DIR) + "/libhorovod_accel_fixture.so";
  Preloaded other(not_a_shim);
  const std::string why = RefusalOf(not_a_shim);
  EXPECT_NE(why.find("has ABI ?, this core needs"), std::string::npos) << why;
}

TEST(MpiShimTable, MissingFunctionsAreListed) {
  Preloaded partial(Shim("partial"));
  const std::string why = RefusalOf(Shim("partial"));
  EXPECT_NE(why.find("lacks hvda_mpi_bcast, hvda_mpi_barrier; reinstall horovod_accel."),
            std::string::npos)
      << why;
}

TEST(MpiShimTable, BindsEveryFunctionAndHoldsTheLibrary) {
  const std::string path = Shim("ok");
  std::shared_ptr<const MpiShim> shim;
  {
    Preloaded ok(path);
    Status st = LoadMpiShim(path, &shim);
    ASSERT_TRUE(st.ok()) << st.reason();
  }
  ASSERT_NE(shim, nullptr);
  EXPECT_EQ(shim->path, path);
  for (const void* fn :
       {reinterpret_cast<const void*>(shim->finalized), reinterpret_cast<const void*>(shim->comm_rank),
        reinterpret_cast<const void*>(shim->comm_size),
        reinterpret_cast<const void*>(shim->comm_create_group),
        reinterpret_cast<const void*>(shim->comm_free), reinterpret_cast<const void*>(shim->supports),
        reinterpret_cast<const void*>(shim->allreduce), reinterpret_cast<const void*>(shim->bcast),
        reinterpret_cast<const void*>(shim->allgatherv),
        reinterpret_cast<const void*>(shim->alltoallv),
        reinterpret_cast<const void*>(shim->reduce_scatter),
        reinterpret_cast<const void*>(shim->barrier),
        reinterpret_cast<const void*>(shim->error_string)})
    EXPECT_NE(fn, nullptr);
  // The table's own reference keeps the shim loaded after the preloader's
  // went; its functions are the shim's.
  EXPECT_TRUE(IsLoaded(path));
  int size = 0;
  EXPECT_EQ(shim->comm_size(0, &size), 0);
  EXPECT_EQ(size, 4);
  EXPECT_EQ(shim->supports(HVDA_MPI_FLOAT32, HVDA_MPI_SUM), 1);
  EXPECT_EQ(shim->supports(HVDA_MPI_FLOAT16, HVDA_MPI_SUM), 0);
  EXPECT_EQ(shim->Describe("MPI_Allreduce", 5), "MPI_Allreduce failed: fixture error 5 (MPI error 5)");
  EXPECT_EQ(shim->Describe("MPI_Bcast", -2), "MPI_Bcast failed: unknown error (MPI error -2)")
      << "a code the shim cannot describe";
  shim.reset();
  EXPECT_FALSE(IsLoaded(path)) << "the last table dropped the last reference";
}

TEST(MpiShimTable, DescribeWithoutAShim) {
  MpiShim empty;
  EXPECT_EQ(empty.Describe("MPI_Barrier", 13), "MPI_Barrier failed: unknown error (MPI error 13)");
}

}  // namespace
}  // namespace cpu
}  // namespace hvda
