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

Status RunToCompletion(Executor& exec, const Response& r, TensorQueue* q) {
  HVDA_RETURN_IF_ERROR(exec.Execute(r, q));
  return testing::Drain(exec);
}

class PluginExecutor : public ::testing::TestWithParam<int> {};

TEST_P(PluginExecutor, EveryCollectiveKindOverThePlugin) {
  auto lib = Loopback();
  const int size = GetParam();
  RunRanks(size, [&](int rank, int n, Store* store) {
    PluginDevice device(lib, rank);
    std::unique_ptr<CollectiveBackend> backend;
    Status st = PluginBackend::Create(lib, &device, LocalSpec(store, "plug/", rank, n), &backend);
    ASSERT_TRUE(st.ok()) << st.reason();
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::move(backend));
    Executor exec(&device, std::move(backends), nullptr);
    ASSERT_TRUE(exec.status().ok()) << exec.status().reason();
    TensorQueue q;

    // Fused Average allreduce with scale factors (one empty tensor).
    std::vector<float> a(7), b(0), out_a(7), out_b(0);
    for (int i = 0; i < 7; ++i) a[i] = static_cast<float>(rank * 7 + i);
    Response ar;
    ar.type = ResponseType::kAllreduce;
    ar.dtype = DataType::kFloat32;
    ar.reduce_op = ReduceOp::kAverage;
    ar.prescale = 2.0;
    ar.postscale = 3.0;
    ar.names = {"a", "b"};
    ar.shapes = {{7}, {0}};
    TensorEntry ea = Entry("a", {7}, a.data(), out_a.data());
    auto wa = ea.work;
    ASSERT_TRUE(q.Add({ea, Entry("b", {0}, b.data(), out_b.data())}).ok());
    ASSERT_TRUE(RunToCompletion(exec, ar, &q).ok());
    ASSERT_TRUE(wa->status().ok()) << wa->status().reason();
    for (int i = 0; i < 7; ++i) {
      double sum = 0;
      for (int r = 0; r < n; ++r) sum += 2.0 * (r * 7 + i);
      ASSERT_FLOAT_EQ(out_a[i], static_cast<float>(sum / n * 3.0));
    }

    // Allgather with a different dim0 per rank (composed: grouped broadcasts).
    std::vector<int64_t> g(2 * (rank + 1), rank);
    Response ag;
    ag.type = ResponseType::kAllgather;
    ag.dtype = DataType::kInt64;
    ag.names = {"g"};
    ag.shapes = {{rank + 1, 2}};
    for (int r = 0; r < n; ++r) ag.rank_dim0.push_back(r + 1);
    TensorEntry eg = Entry("g", {rank + 1, 2}, g.data(), nullptr);
    auto wg = eg.work;
    ASSERT_TRUE(q.Add({eg}).ok());
    ASSERT_TRUE(RunToCompletion(exec, ag, &q).ok());
    ASSERT_TRUE(wg->status().ok()) << wg->status().reason();
    const int64_t* got = static_cast<const int64_t*>(wg->output->data());
    size_t k = 0;
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 2 * (r + 1); ++i) ASSERT_EQ(got[k++], r);

    // Alltoall: rank r sends j+1 rows to rank j (native alltoallv).
    std::vector<int32_t> send;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i) send.push_back(rank * 100 + j);
    Response a2a;
    a2a.type = ResponseType::kAlltoall;
    a2a.dtype = DataType::kInt32;
    a2a.names = {"x"};
    a2a.shapes = {{static_cast<int64_t>(send.size())}};
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a2a.splits_matrix.push_back(j + 1);
    TensorEntry ex = Entry("x", {static_cast<int64_t>(send.size())}, send.data(), nullptr);
    auto wx = ex.work;
    ASSERT_TRUE(q.Add({ex}).ok());
    ASSERT_TRUE(RunToCompletion(exec, a2a, &q).ok());
    ASSERT_TRUE(wx->status().ok()) << wx->status().reason();
    const int32_t* rx = static_cast<const int32_t*>(wx->output->data());
    for (int r = 0; r < n; ++r)
      for (int i = 0; i <= rank; ++i) ASSERT_EQ(*rx++, r * 100 + rank);

    // Reducescatter of 2n+1 rows (uneven: composed from allreduce).
    const int64_t rows = 2 * n + 1;
    std::vector<double> rs_in(rows, rank + 1.0);
    const int64_t mine = rows / n + (rank < rows % n ? 1 : 0);
    std::vector<double> rs_out(mine, 0.0);
    Response rs;
    rs.type = ResponseType::kReducescatter;
    rs.dtype = DataType::kFloat64;
    rs.reduce_op = ReduceOp::kSum;
    rs.names = {"r"};
    rs.shapes = {{rows}};
    TensorEntry er = Entry("r", {rows}, rs_in.data(), rs_out.data());
    auto wr = er.work;
    ASSERT_TRUE(q.Add({er}).ok());
    ASSERT_TRUE(RunToCompletion(exec, rs, &q).ok());
    ASSERT_TRUE(wr->status().ok()) << wr->status().reason();
    for (double v : rs_out) ASSERT_EQ(v, n * (n + 1) / 2.0);

    // Broadcast from the last rank.
    std::vector<uint8_t> bc(5, static_cast<uint8_t>(rank));
    Response br;
    br.type = ResponseType::kBroadcast;
    br.dtype = DataType::kUInt8;
    br.root_rank = n - 1;
    br.names = {"c"};
    br.shapes = {{5}};
    TensorEntry ec = Entry("c", {5}, bc.data(), bc.data());
    ASSERT_TRUE(q.Add({ec}).ok());
    ASSERT_TRUE(RunToCompletion(exec, br, &q).ok());
    for (uint8_t v : bc) ASSERT_EQ(v, n - 1);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, PluginExecutor, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace hvda
