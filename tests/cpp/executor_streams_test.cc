// The executor on an asynchronous device (tests/cpp/async_test_device.h):
// responses are enqueued on the communication stream, their Works complete
// only once an event says the device ran them (PollCompletions, in order),
// fused tensors, scale factors, the reused fusion buffer and several
// responses in flight give the same results as on the CPU, and a device
// error fails the Works instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <mutex>

#include "async_test_device.h"
#include "executor_test_util.h"
#include "common/executor.h"
#include "devices/cpu/gloo_backend.h"
#include "multi_rank_harness.h"

namespace hvda {
namespace {

using testing::AsyncDevice;
using testing::Drain;
using testing::Entry;
using testing::LocalSpec;
using testing::RunRanks;
using testing::StreamedBackend;

float In(int rank, int t, int64_t i) { return static_cast<float>((i % 7) + rank * 10 + t); }

class ExecutorStreams : public ::testing::TestWithParam<int> {};

TEST_P(ExecutorStreams, WorksCompleteOnlyAfterTheDeviceRanThemInOrder) {
  const int size = GetParam();
  RunRanks(size, [&](int rank, int n, Store* store) {
    std::unique_ptr<CollectiveBackend> gloo;
    ASSERT_TRUE(cpu::GlooBackend::Create(LocalSpec(store, "exs/", rank, n), "", &gloo).ok());
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::make_unique<StreamedBackend>(std::move(gloo)));
    AsyncDevice device(std::chrono::microseconds(100));
    Executor exec(&device, std::move(backends), nullptr);
    ASSERT_TRUE(exec.status().ok());
    TensorQueue queue;

    // Response 1: three tensors fused (one empty, one odd-sized), Average
    // with prescale 2 and postscale 0.5.
    const std::vector<int64_t> lens{5, 0, 1031};
    std::vector<std::vector<float>> in(3), out(3);
    Response fused;
    fused.type = ResponseType::kAllreduce;
    fused.dtype = DataType::kFloat32;
    fused.reduce_op = ReduceOp::kAverage;
    fused.prescale = 2.0;
    fused.postscale = 0.5;
    std::vector<TensorEntry> entries;
    for (int t = 0; t < 3; ++t) {
      in[t].resize(lens[t]);
      out[t].assign(lens[t], -1.0f);
      for (int64_t i = 0; i < lens[t]; ++i) in[t][i] = In(rank, t, i);
      fused.names.push_back("f" + std::to_string(t));
      fused.shapes.push_back({lens[t]});
      entries.push_back(Entry(fused.names.back(), {lens[t]}, in[t].data(), out[t].data()));
    }
    // Response 2: broadcast from the last rank, in place.
    std::vector<int32_t> bc(9, rank);
    Response bcast;
    bcast.type = ResponseType::kBroadcast;
    bcast.dtype = DataType::kInt32;
    bcast.root_rank = n - 1;
    bcast.names = {"b"};
    bcast.shapes = {{9}};
    entries.push_back(Entry("b", {9}, bc.data(), bc.data()));
    // Response 3: a single allreduce Sum straight into its output.
    std::vector<double> x(64, rank + 1.0), y(64, 0.0);
    Response single;
    single.type = ResponseType::kAllreduce;
    single.dtype = DataType::kFloat64;
    single.reduce_op = ReduceOp::kSum;
    single.names = {"s"};
    single.shapes = {{64}};
    entries.push_back(Entry("s", {64}, x.data(), y.data()));

    std::vector<std::shared_ptr<Work>> works;
    for (auto& e : entries) works.push_back(e.work);
    ASSERT_TRUE(queue.Add(std::move(entries)).ok());

    device.async().Hold(true);
    ASSERT_TRUE(exec.Execute(fused, &queue).ok());
    ASSERT_TRUE(exec.Execute(bcast, &queue).ok());
    ASSERT_TRUE(exec.Execute(single, &queue).ok());
    ASSERT_TRUE(exec.PollCompletions().ok());
    EXPECT_TRUE(exec.HasInflight());
    for (auto& w : works) EXPECT_FALSE(w->IsCompleted()) << "completed before the device ran it";
    device.async().Hold(false);
    ASSERT_TRUE(Drain(exec).ok());
    EXPECT_EQ(device.async().stream_syncs.load(), 0) << "the executor must not sync the stream";

    for (auto& w : works) {
      ASSERT_TRUE(w->IsCompleted());
      ASSERT_TRUE(w->status().ok()) << w->status().reason();
    }
    for (int t = 0; t < 3; ++t)
      for (int64_t i = 0; i < lens[t]; ++i) {
        double sum = 0;
        for (int r = 0; r < n; ++r) sum += 2.0 * In(r, t, i);
        ASSERT_FLOAT_EQ(out[t][i], static_cast<float>(sum / n * 0.5)) << t << "," << i;
      }
    for (int v : bc) ASSERT_EQ(v, n - 1);
    for (double v : y) ASSERT_EQ(v, n * (n + 1) / 2.0);
  });
}

// A device error while running enqueued work fails that response's Works
// and every later one, and PollCompletions reports it.
class FailingBackend : public StreamedBackend {
 public:
  using StreamedBackend::StreamedBackend;
  Status Allreduce(void*, int64_t, DataType, ReduceOp, Stream* s) override {
    return testing::AsyncExecution::On(s, [] { return Status::Aborted("device lost (test)"); });
  }
};

TEST(ExecutorStreamsErrors, DeviceErrorFailsWorksInsteadOfHanging) {
  RunRanks(1, [&](int rank, int n, Store* store) {
    std::unique_ptr<CollectiveBackend> gloo;
    ASSERT_TRUE(cpu::GlooBackend::Create(LocalSpec(store, "exe/", rank, n), "", &gloo).ok());
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::make_unique<FailingBackend>(std::move(gloo)));
    AsyncDevice device(std::chrono::microseconds(0));
    Executor exec(&device, std::move(backends), nullptr);
    TensorQueue queue;
    std::vector<float> a(4, 1.0f), b(4, 1.0f);
    TensorEntry ea = Entry("a", {4}, a.data(), a.data()), eb = Entry("b", {4}, b.data(), b.data());
    std::vector<std::shared_ptr<Work>> works{ea.work, eb.work};
    ASSERT_TRUE(queue.Add({ea}).ok());
    ASSERT_TRUE(queue.Add({eb}).ok());
    for (const char* name : {"a", "b"}) {
      Response r;
      r.type = ResponseType::kAllreduce;
      r.dtype = DataType::kFloat32;
      r.reduce_op = ReduceOp::kSum;
      r.names = {name};
      r.shapes = {{4}};
      device.async().Hold(true);
      ASSERT_TRUE(exec.Execute(r, &queue).ok());
    }
    device.async().Hold(false);
    Status st = Drain(exec);
    EXPECT_EQ(st.code(), StatusCode::kAborted) << st.reason();
    EXPECT_FALSE(exec.HasInflight());
    for (auto& w : works) {
      ASSERT_TRUE(w->IsCompleted());
      EXPECT_NE(w->status().reason().find("device lost"), std::string::npos) << w->status().reason();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExecutorStreams, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace hvda
