// The HAL over a plugin (csrc/common/plugin/plugin_device.*), against the
// loopback test plugin (tests/cpp/plugins/loopback_plugin.cc: streams as
// worker threads, in-process collectives): device ops through the ABI, and
// the executor running every collective kind over PluginDevice +
// PluginBackend at 1-3 ranks, including the compositions the core does for
// a library without them (uneven allgather, uneven reduce-scatter, barrier).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <numeric>

#include "common/executor.h"
#include "common/plugin/plugin_device.h"
#include "executor_test_util.h"
#include "multi_rank_harness.h"
#include "plugin_collectives_test_util.h"

namespace hvda {
namespace {

using testing::Entry;
using testing::LocalSpec;
using testing::RunRanks;

std::shared_ptr<PluginLibrary> Loopback() {
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(std::string(HVDA_FIXTURE_DIR) + "/libhorovod_accel_loopback.so", &lib);
  EXPECT_TRUE(st.ok()) << st.reason();
  EXPECT_EQ(lib->plugin().init(nullptr), HVDA_OK);
  return std::shared_ptr<PluginLibrary>(std::move(lib));
}

TEST(PluginDevice, MemoryKernelsAndEventsThroughTheAbi) {
  auto lib = Loopback();
  PluginDevice dev(lib, 0);
  DeviceMemory& mem = dev.memory();
  DeviceExecution& ex = dev.execution();
  std::unique_ptr<Stream> a, b;
  ASSERT_TRUE(ex.CreateStream(&a).ok());
  ASSERT_TRUE(ex.CreateStream(&b).ok());
  void *d0 = nullptr, *d1 = nullptr;
  ASSERT_TRUE(mem.Allocate(8 * sizeof(float), &d0).ok());
  ASSERT_TRUE(mem.Allocate(8 * sizeof(float), &d1).ok());
  std::vector<float> host(8), back(8, -1);
  std::iota(host.begin(), host.end(), 1.0f);
  ASSERT_TRUE(mem.CopyFromHostAsync(d0, host.data(), 32, a.get()).ok());
  ASSERT_TRUE(mem.MemsetAsync(d1, 0, 32, a.get()).ok());
  ASSERT_TRUE(ex.Scale(d0, 8, DataType::kFloat32, 2.0, a.get()).ok());
  ASSERT_TRUE(ex.ReduceInto(d1, d0, 8, DataType::kFloat32, ReduceOp::kSum, a.get()).ok());
  // Stream b reads d1 only after a's work: ordered by an event.
  std::unique_ptr<Event> ev;
  ASSERT_TRUE(ex.CreateEvent(&ev).ok());
  ASSERT_TRUE(ex.RecordEvent(ev.get(), a.get()).ok());
  ASSERT_TRUE(ex.StreamWaitEvent(b.get(), ev.get()).ok());
  ASSERT_TRUE(ex.BatchedCopy({{d0, d1, 16}, {static_cast<char*>(d0) + 16, d1, 16}}, b.get()).ok());
  ASSERT_TRUE(mem.CopyToHostAsync(back.data(), d0, 32, b.get()).ok());
  std::unique_ptr<Event> done;
  ASSERT_TRUE(ex.CreateEvent(&done).ok());
  ASSERT_TRUE(ex.RecordEvent(done.get(), b.get()).ok());
  ASSERT_TRUE(ex.SynchronizeEvent(done.get()).ok());
  bool finished = false;
  ASSERT_TRUE(ex.QueryEvent(done.get(), &finished).ok());
  EXPECT_TRUE(finished);
  EXPECT_EQ(back, (std::vector<float>{2, 4, 6, 8, 2, 4, 6, 8}));
  // An unsupported kernel is an error naming the plugin, not a crash.
  Status bad = ex.Scale(d0, 4, DataType::kFloat16, 2.0, a.get());
  ASSERT_TRUE(bad.ok());  // enqueued; the failure surfaces when it runs
  Status sync = ex.SynchronizeStream(a.get());
  EXPECT_FALSE(sync.ok());
  EXPECT_NE(sync.reason().find("cannot scale"), std::string::npos) << sync.reason();
  mem.Free(d0);
  mem.Free(d1);
}

// TakeEvent/GiveBackEvent reuse one native event; a wait enqueued before
// the event is recorded again keeps ordering on the record it saw.
TEST(PluginDevice, GivenBackEventsAreReusedAndKeepEarlierWaits) {
  auto lib = Loopback();
  PluginDevice dev(lib, 0);
  DeviceExecution& ex = dev.execution();
  std::unique_ptr<Stream> a, b;
  ASSERT_TRUE(ex.CreateStream(&a).ok());
  ASSERT_TRUE(ex.CreateStream(&b).ok());
  void* d = nullptr;
  ASSERT_TRUE(dev.memory().Allocate(4 * sizeof(float), &d).ok());
  std::vector<float> host = {1, 2, 3, 4}, back(4, -1);
  std::unique_ptr<Event> ev;
  ASSERT_TRUE(dev.TakeEvent(&ev).ok());
  Event* first = ev.get();
  ASSERT_TRUE(dev.memory().CopyFromHostAsync(d, host.data(), 16, a.get()).ok());
  ASSERT_TRUE(ex.Scale(d, 4, DataType::kFloat32, 10.0, a.get()).ok());
  ASSERT_TRUE(ex.RecordEvent(ev.get(), a.get()).ok());
  ASSERT_TRUE(ex.StreamWaitEvent(b.get(), ev.get()).ok());
  ASSERT_TRUE(dev.memory().CopyToHostAsync(back.data(), d, 16, b.get()).ok());
  dev.GiveBackEvent(std::move(ev));
  std::unique_ptr<Event> again;
  ASSERT_TRUE(dev.TakeEvent(&again).ok());
  EXPECT_EQ(again.get(), first);
  ASSERT_TRUE(ex.RecordEvent(again.get(), b.get()).ok());  // a new record, after the copy
  ASSERT_TRUE(ex.SynchronizeEvent(again.get()).ok());
  EXPECT_EQ(back, (std::vector<float>{10, 20, 30, 40}));
  std::unique_ptr<Event> other;
  ASSERT_TRUE(dev.TakeEvent(&other).ok());  // the pool is empty: a new event
  EXPECT_NE(other.get(), first);
  dev.memory().Free(d);
}

class PluginExecutor : public ::testing::TestWithParam<int> {};

TEST_P(PluginExecutor, EveryCollectiveKindOverThePlugin) {
  auto lib = Loopback();
  RunRanks(GetParam(), [&](int rank, int n, Store* store) {
    testing::CheckEveryCollectiveKind(lib, rank, n, LocalSpec(store, "plug/", rank, n));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PluginExecutor, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace hvda
