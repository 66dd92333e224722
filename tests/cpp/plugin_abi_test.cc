// Plugin ABI 1.2 (csrc/include/horovod_accel/plugin.h) and its compatibility
// with 1.0, against three builds of the loopback test plugin
// (tests/cpp/plugins/loopback_plugin.cc, root CMakeLists.txt):
// - libhorovod_accel_loopback.so (ABI 1.2): unique ids released exactly once
//   by their maker; the operation timeout reaches comm_init_rank_config;
// - libhorovod_accel_loopback_lean.so (ABI 1.2): host-accessible memory with
//   scale / reduce_into left NULL, so the core's host kernels run them, and
//   alltoall composed from grouped send/recv that never names the caller;
// - libhorovod_accel_loopback_abi10.so, built against a verbatim copy of the
//   1.0 header (tests/cpp/plugins/abi_1_0/): loads, and every collective works.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <numeric>

#include "common/plugin/plugin_backend.h"
#include "common/plugin/plugin_device.h"
#include "common/job_spec.h"
#include "multi_rank_harness.h"
#include "plugin_collectives_test_util.h"

namespace hvda {
namespace {

using testing::LocalSpec;
using testing::RunRanks;

std::string FixturePath(const char* name) {
  return std::string(HVDA_FIXTURE_DIR) + "/libhorovod_accel_" + name + ".so";
}

std::shared_ptr<PluginLibrary> Open(const char* name) {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(FixturePath(name), &lib);
  EXPECT_TRUE(st.ok()) << st.reason();
  if (!st.ok()) return nullptr;
  EXPECT_EQ(lib->plugin().init(nullptr), HVDA_OK);
  return std::shared_ptr<PluginLibrary>(std::move(lib));
}

// The loopback plugin's counters (hvda_loopback_stats), read through the
// library the PluginLibrary already mapped.
struct Stats {
  uint64_t ids_made = 0, ids_released = 0, bad_releases = 0, self_peers = 0;
  double last_op_timeout = -1;
};
Stats Read(const char* name) {
  Stats s;
  void* h = dlopen(FixturePath(name).c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(h, nullptr) << "the plugin is not loaded";
  if (h == nullptr) return s;
  using Fn = void (*)(uint64_t*, uint64_t*, uint64_t*, uint64_t*, double*);
  auto fn = reinterpret_cast<Fn>(dlsym(h, "hvda_loopback_stats"));
  EXPECT_NE(fn, nullptr);
  if (fn) fn(&s.ids_made, &s.ids_released, &s.bad_releases, &s.self_peers, &s.last_op_timeout);
  dlclose(h);
  return s;
}

TEST(PluginAbi, TheCoreSpeaksOnePointTwo) {
  EXPECT_EQ(HVDA_PLUGIN_ABI_MAJOR, 1u);
  EXPECT_EQ(HVDA_PLUGIN_ABI_MINOR, 2u);
  // Append-only: the 1.0 fields keep their offsets; the new ones come last.
  EXPECT_GT(offsetof(hvda_device_ops_v1, memory_host_accessible),
            offsetof(hvda_device_ops_v1, launch_host_func));
  EXPECT_GT(offsetof(hvda_ccl_ops_v1, unique_id_release), offsetof(hvda_ccl_ops_v1, alltoallv));
  EXPECT_GT(offsetof(hvda_ccl_ops_v1, comm_init_rank_config),
            offsetof(hvda_ccl_ops_v1, unique_id_release));
  EXPECT_GT(offsetof(hvda_device_ops_v1, stream_from_framework),
            offsetof(hvda_device_ops_v1, memory_host_accessible));
}

// Every id is released once, by rank 0, after its communicator came up; the
// operation timeout (HOROVOD_ACCEL_TIMEOUT_SECONDS) reaches the plugin.
TEST(PluginAbi, UniqueIdsAreReleasedOnceAndTheTimeoutIsPassed) {
  auto lib = Open("loopback");
  ASSERT_TRUE(lib);
  ASSERT_EQ(lib->plugin().abi_minor, HVDA_PLUGIN_ABI_MINOR);
  const Stats before = Read("loopback");
  JobSpec job;
  ASSERT_TRUE(job.settings.Set("HOROVOD_ACCEL_TIMEOUT_SECONDS", "7").ok());
  for (int n : {1, 2, 3}) {
    RunRanks(n, [&](int rank, int size, Store* store) {
      CommunicatorSpec spec = LocalSpec(store, "ids" + std::to_string(size) + "/", rank, size);
      spec.job = &job;
      PluginDevice device(lib, rank);
      std::unique_ptr<CollectiveBackend> backend;
      Status st = PluginBackend::Create(lib, &device, spec, &backend);
      ASSERT_TRUE(st.ok()) << st.reason();
      // The drain limit follows the timeout (NOTE [Bounded teardown]).
      EXPECT_DOUBLE_EQ(device.drain_limit(), 7.0 + kTeardownGraceSeconds);
    });
  }
  const Stats after = Read("loopback");
  EXPECT_EQ(after.ids_made - before.ids_made, 3u);  // one per communicator
  EXPECT_EQ(after.ids_released - before.ids_released, 3u);
  EXPECT_EQ(after.bad_releases, before.bad_releases);
  EXPECT_DOUBLE_EQ(after.last_op_timeout, 7.0);
}

// A rank 0 whose peer never joins still releases its id (comm_init_rank
// failed: the release comes after it).
TEST(PluginAbi, AnIdIsReleasedWhenTheCommunicatorFails) {
  auto lib = Open("loopback");
  ASSERT_TRUE(lib);
  const Stats before = Read("loopback");
  MemoryStore store;
  CommunicatorSpec spec = LocalSpec(&store, "lonely/", 0, 2);
  spec.timeout_seconds = 0.2;
  PluginDevice device(lib, 0);
  std::unique_ptr<CollectiveBackend> backend;
  Status st = PluginBackend::Create(lib, &device, spec, &backend);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("comm_init_rank"), std::string::npos) << st.reason();
  const Stats after = Read("loopback");
  EXPECT_EQ(after.ids_made - before.ids_made, 1u);
  EXPECT_EQ(after.ids_released - before.ids_released, 1u);
}

// NOTE [Bounded teardown]: work that never ends (a plugin that ignores both
// comm_abort and its own timeout) holds the executor's teardown up only for
// the device's drain limit; the stream and what it uses are leaked.
TEST(PluginAbi, TeardownOfAStuckCommunicatorIsBounded) {
  auto lib = Open("loopback");
  ASSERT_TRUE(lib);
  void* h = dlopen(FixturePath("loopback").c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto hang = reinterpret_cast<void (*)(int)>(dlsym(h, "hvda_loopback_hang"));
  dlclose(h);
  ASSERT_NE(hang, nullptr);
  JobSpec job;
  ASSERT_TRUE(job.settings.Set("HOROVOD_ACCEL_TIMEOUT_SECONDS", "1").ok());
  RunRanks(2, [&](int rank, int n, Store* store) {
    CommunicatorSpec spec = LocalSpec(store, "stuck/", rank, n);
    spec.job = &job;
    PluginDevice device(lib, rank);
    std::unique_ptr<CollectiveBackend> backend;
    Status st = PluginBackend::Create(lib, &device, spec, &backend);
    ASSERT_TRUE(st.ok()) << st.reason();
    if (rank == 1) return;  // never takes part: rank 0's allreduce waits for it
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::move(backend));
    auto exec = std::make_unique<Executor>(&device, std::move(backends), nullptr);
    ASSERT_TRUE(exec->status().ok());
    device.SetDrainLimit(0.5);  // instead of 1 s + kTeardownGraceSeconds
    hang(1);
    std::vector<float> x(4, 1.0f);
    Response ar;
    ar.type = ResponseType::kAllreduce;
    ar.dtype = DataType::kFloat32;
    ar.reduce_op = ReduceOp::kSum;
    ar.names = {"x"};
    ar.shapes = {{4}};
    TensorQueue q;
    TensorEntry e = testing::Entry("x", {4}, x.data(), x.data());
    auto work = e.work;
    ASSERT_TRUE(q.Add({e}).ok());
    ASSERT_TRUE(exec->Execute(ar, &q).ok());
    exec->DrainOrAbort(0.1, Status::Aborted("test: stuck"));  // the abort is ignored
    EXPECT_FALSE(work->status().ok());
    const auto start = std::chrono::steady_clock::now();
    exec.reset();
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(took, 0.4);
    EXPECT_LT(took, 5.0);
    hang(0);  // the leaked stream's worker now sees the abort and goes idle
  });
  // The abandoned stream's thread runs the plugin's code: never unloaded.
  EXPECT_TRUE(lib->kept_loaded());
}

// Host-accessible memory, scale / reduce_into NULL: the core's kernels run
// them, for dtypes the plugin itself has no kernel for (float16).
TEST(PluginAbi, HostAccessibleMemoryGetsTheCoresKernels) {
  auto lib = Open("loopback_lean");
  ASSERT_TRUE(lib);
  ASSERT_EQ(lib->device().scale, nullptr);
  ASSERT_EQ(lib->device().reduce_into, nullptr);
  PluginDevice dev(lib, 0);
  EXPECT_TRUE(dev.HostScale());
  EXPECT_TRUE(dev.HostReduce());
  DeviceMemory& mem = dev.memory();
  DeviceExecution& ex = dev.execution();
  std::unique_ptr<Stream> s;
  ASSERT_TRUE(ex.CreateStream(&s).ok());
  void *a = nullptr, *b = nullptr;
  ASSERT_TRUE(mem.Allocate(6 * sizeof(float), &a).ok());
  ASSERT_TRUE(mem.Allocate(6 * sizeof(float), &b).ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y = {10, 20, 30, 40, 50, 60}, back(6);
  ASSERT_TRUE(mem.CopyFromHostAsync(a, x.data(), 24, s.get()).ok());
  ASSERT_TRUE(mem.CopyFromHostAsync(b, y.data(), 24, s.get()).ok());
  ASSERT_TRUE(ex.ReduceInto(a, b, 6, DataType::kFloat32, ReduceOp::kSum, s.get()).ok());
  ASSERT_TRUE(ex.Scale(a, 6, DataType::kFloat32, 0.5, s.get()).ok());
  ASSERT_TRUE(ex.ReduceInto(b, a, 6, DataType::kFloat32, ReduceOp::kMax, s.get()).ok());
  ASSERT_TRUE(mem.CopyToHostAsync(back.data(), a, 24, s.get()).ok());
  ASSERT_TRUE(ex.SynchronizeStream(s.get()).ok());
  EXPECT_EQ(back, (std::vector<float>{5.5f, 11, 16.5f, 22, 27.5f, 33}));
  ASSERT_TRUE(mem.CopyToHostAsync(back.data(), b, 24, s.get()).ok());
  ASSERT_TRUE(ex.SynchronizeStream(s.get()).ok());
  EXPECT_EQ(back, (std::vector<float>{10, 20, 30, 40, 50, 60}));
  // float16 (the plugin has no kernel for it): 0x3C00 = 1.0, 0x4000 = 2.0.
  std::vector<uint16_t> h = {0x3C00, 0x4000}, hb(2);
  ASSERT_TRUE(mem.CopyFromHostAsync(a, h.data(), 4, s.get()).ok());
  ASSERT_TRUE(ex.Scale(a, 2, DataType::kFloat16, 2.0, s.get()).ok());
  ASSERT_TRUE(mem.CopyToHostAsync(hb.data(), a, 4, s.get()).ok());
  ASSERT_TRUE(ex.SynchronizeStream(s.get()).ok());
  EXPECT_EQ(hb, (std::vector<uint16_t>{0x4000, 0x4400}));  // 2.0, 4.0
  // What the host kernels lack is an error, not a crash.
  EXPECT_FALSE(ex.ReduceInto(a, b, 1, DataType::kBool, ReduceOp::kSum, s.get()).ok());
  mem.Free(a);
  mem.Free(b);
}

// NULL scale / reduce_into without memory_host_accessible: still refused.
TEST(PluginAbi, NullKernelsNeedHostAccessibleMemory) {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(FixturePath("loopback_lean_noflag"), &lib);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.reason().find("device.scale"), std::string::npos) << st.reason();
  EXPECT_NE(st.reason().find("device.reduce_into"), std::string::npos) << st.reason();
}

// The lean plugin through the executor: Average (the core's scale), uneven
// allgather (grouped broadcasts), alltoall from grouped send/recv whose
// peers are never the caller (the plugin refuses and counts those).
class LeanPluginExecutor : public ::testing::TestWithParam<int> {};

TEST_P(LeanPluginExecutor, EveryCollectiveKind) {
  auto lib = Open("loopback_lean");
  ASSERT_TRUE(lib);
  ASSERT_EQ(lib->ccl().alltoallv, nullptr);
  RunRanks(GetParam(), [&](int rank, int n, Store* store) {
    testing::CheckEveryCollectiveKind(lib, rank, n, LocalSpec(store, "lean/", rank, n));
  });
  EXPECT_EQ(Read("loopback_lean").self_peers, 0u);
}

INSTANTIATE_TEST_SUITE_P(Ranks, LeanPluginExecutor, ::testing::Values(1, 2, 3));

// The activity the conformance suite's proof reads (PluginActivity): each
// collective the executor ran counts once, under the kind it asked for, on
// every rank - composed ones too (the uneven allgather of broadcasts, the
// alltoall of send/recv, the uneven reduce-scatter of an allreduce).
TEST(PluginActivityCounts, EachCollectiveOnceUnderItsKind) {
  auto lib = Open("loopback_lean");
  ASSERT_TRUE(lib);
  for (const auto& kv : lib->activity().Snapshot()) EXPECT_EQ(kv.second, 0u) << kv.first;
  RunRanks(2, [&](int rank, int n, Store* store) {
    testing::CheckEveryCollectiveKind(lib, rank, n, LocalSpec(store, "activity/", rank, n));
  });
  std::map<std::string, uint64_t> got;
  for (const auto& kv : lib->activity().Snapshot()) got[kv.first] = kv.second;
  const std::map<std::string, uint64_t> want = {{"allreduce", 2},     {"allgather", 2},
                                                {"broadcast", 2},     {"alltoall", 2},
                                                {"reducescatter", 2}, {"barrier", 0}};
  EXPECT_EQ(got, want);
}

// Each build is normalised once, at load, into the core's one table
// (PluginOps; the adapters' rules on their own: plugin_abi_adapter_test.cc).
TEST(PluginAbi, EachBuildIsNormalisedAtLoad) {
  auto abi10 = Open("loopback_abi10");
  ASSERT_TRUE(abi10);
  const PluginOps& old_ops = abi10->ops();
  EXPECT_FALSE(old_ops.device.memory_host_accessible);
  EXPECT_NE(old_ops.device.scale, nullptr);
  EXPECT_STREQ(old_ops.collectives.comm_init_name, "comm_init_rank");
  EXPECT_EQ(old_ops.collectives.allgatherv, nullptr);
  EXPECT_TRUE(old_ops.collectives.release_unique_id);  // the no-op fallback

  auto lean = Open("loopback_lean");
  ASSERT_TRUE(lean);
  const PluginOps& lean_ops = lean->ops();
  EXPECT_TRUE(lean_ops.device.memory_host_accessible);
  EXPECT_EQ(lean_ops.device.scale, nullptr);
  EXPECT_EQ(lean_ops.device.reduce_into, nullptr);
  EXPECT_STREQ(lean_ops.collectives.comm_init_name, "comm_init_rank_config");
  EXPECT_EQ(lean_ops.collectives.alltoallv, nullptr);
}

// A plugin built against the 1.0 header: loads, its tables are 1.0-sized
// (the core reads nothing past them), and every collective works.
class Abi10PluginExecutor : public ::testing::TestWithParam<int> {};

TEST_P(Abi10PluginExecutor, LoadsAndRunsEveryCollectiveKind) {
  auto lib = Open("loopback_abi10");
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->plugin().abi_major, 1u);
  EXPECT_EQ(lib->plugin().abi_minor, 0u);
  EXPECT_EQ(lib->device().struct_size, offsetof(hvda_device_ops_v1, memory_host_accessible));
  EXPECT_EQ(lib->ccl().struct_size, offsetof(hvda_ccl_ops_v1, unique_id_release));
  JobSpec job;
  ASSERT_TRUE(job.settings.Set("HOROVOD_ACCEL_TIMEOUT_SECONDS", "9").ok());
  RunRanks(GetParam(), [&](int rank, int n, Store* store) {
    CommunicatorSpec spec = LocalSpec(store, "abi10/", rank, n);
    spec.job = &job;
    testing::CheckEveryCollectiveKind(lib, rank, n, spec);
  });
  // Built without comm_init_rank_config: the timeout never reached it.
  EXPECT_EQ(Read("loopback_abi10").last_op_timeout, -1.0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Abi10PluginExecutor, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace hvda
