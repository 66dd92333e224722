// Adasum: the combination math (adasum.h) against a direct double reference,
// and the executor path (allgather + local tree) at world sizes 1..4 with
// ranks as threads over a MemoryStore. Inputs are f(rank, index) so every
// rank computes its expected output without communication.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/adasum.h"
#include "common/executor.h"
#include "devices/cpu/gloo_backend.h"
#include "devices/cpu/host_device.h"
#include "kernels/reduce_kernels.h"
#include "devices/cpu/shm_backend.h"
#include "multi_rank_harness.h"

namespace hvda {
namespace {

using hvda::testing::LocalSpec;
using hvda::testing::RunRanks;
using Vec = std::vector<double>;

// The formula, written directly in double.
Vec Ref2(const Vec& a, const Vec& b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  double ca = aa == 0 ? 1 : 1 - dot / (2 * aa), cb = bb == 0 ? 1 : 1 - dot / (2 * bb);
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

// Recursive tree in rank order; an unpaired node passes through.
Vec RefTree(std::vector<Vec> nodes) {
  while (nodes.size() > 1) {
    std::vector<Vec> next;
    for (size_t i = 0; i < nodes.size(); i += 2)
      next.push_back(i + 1 < nodes.size() ? Ref2(nodes[i], nodes[i + 1]) : nodes[i]);
    nodes.swap(next);
  }
  return nodes[0];
}

TEST(AdasumMath, OrthogonalVectorsAdd) {
  std::vector<float> a{1, 0, 2, 0}, b{0, 3, 0, -4};
  AdasumCombine(a.data(), b.data(), {4});
  EXPECT_EQ(a, (std::vector<float>{1, 3, 2, -4}));
}

TEST(AdasumMath, IdenticalVectorsGiveTheVector) {
  std::vector<double> a{1.5, -2, 3, 0.25}, b = a;
  AdasumCombine(a.data(), b.data(), {4});
  EXPECT_EQ(a, b);
}

TEST(AdasumMath, ZerosNeverGiveNaN) {
  std::vector<float> a{0, 0, 0}, b{1, -2, 3};
  AdasumCombine(a.data(), b.data(), {3});
  EXPECT_EQ(a, b);  // adasum(0, b) = b
  std::vector<float> c{4, 5, 6}, z{0, 0, 0};
  AdasumCombine(c.data(), z.data(), {3});
  EXPECT_EQ(c, (std::vector<float>{4, 5, 6}));  // adasum(a, 0) = a
  std::vector<float> z1{0, 0}, z2{0, 0};
  AdasumCombine(z1.data(), z2.data(), {2});
  EXPECT_EQ(z1, (std::vector<float>{0, 0}));
}

TEST(AdasumMath, MatchesDoubleReference) {
  Vec a(101), b(101);
  for (int i = 0; i < 101; ++i) {
    a[i] = std::sin(i * 0.7) * 3;
    b[i] = std::cos(i * 0.3) + 0.5;
  }
  Vec got = a;
  AdasumCombine(got.data(), b.data(), {101});
  Vec want = Ref2(a, b);
  for (int i = 0; i < 101; ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

TEST(AdasumMath, EachSegmentGetsItsOwnDotProduct) {
  // Segment 0 orthogonal (sum), segment 1 identical (itself), segment 2 empty.
  std::vector<double> a{1, 0, 2, 2}, b{0, 1, 2, 2};
  AdasumCombine(a.data(), b.data(), {2, 2, 0});
  EXPECT_EQ(a, (std::vector<double>{1, 1, 2, 2}));
}

TEST(AdasumMath, TreeOverRanksInRankOrder) {
  for (int n = 1; n <= 5; ++n) {
    const int64_t len = 9;
    std::vector<Vec> nodes(n, Vec(len));
    std::vector<double> gathered;
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < len; ++i) {
        nodes[r][i] = std::sin(r * 1.3 + i) + 0.1 * r;
        gathered.push_back(nodes[r][i]);
      }
    Vec out(len);
    ASSERT_TRUE(AdasumReduce(gathered.data(), n, {len}, DataType::kFloat64, out.data()).ok());
    Vec want = RefTree(nodes);
    for (int64_t i = 0; i < len; ++i) EXPECT_NEAR(out[i], want[i], 1e-12) << "n=" << n;
  }
}

TEST(AdasumMath, SixteenBitRoundsOnce) {
  const int n = 4, len = 16;
  std::vector<Vec> nodes(n, Vec(len));
  std::vector<uint16_t> half, bf;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < len; ++i) {
      uint16_t h = FloatToHalf(static_cast<float>((r + 1) * 0.25 * std::cos(i + r)));
      nodes[r][i] = HalfToFloat(h);  // bfloat16 inputs round these again
      half.push_back(h);
      bf.push_back(FloatToBFloat16(static_cast<float>(nodes[r][i])));
    }
  Vec want = RefTree(nodes);
  std::vector<uint16_t> out(len);
  ASSERT_TRUE(AdasumReduce(half.data(), n, {len}, DataType::kFloat16, out.data()).ok());
  for (int i = 0; i < len; ++i)
    EXPECT_NEAR(HalfToFloat(out[i]), want[i], 2e-3 * (1 + std::fabs(want[i]))) << i;
  ASSERT_TRUE(AdasumReduce(bf.data(), n, {len}, DataType::kBFloat16, out.data()).ok());
  for (int i = 0; i < len; ++i)
    EXPECT_NEAR(BFloat16ToFloat(out[i]), want[i], 2e-2 * (1 + std::fabs(want[i]))) << i;
  std::vector<int32_t> ints(4);
  EXPECT_FALSE(AdasumReduce(ints.data(), 1, {4}, DataType::kInt32, ints.data()).ok());
}

// ---------------------------------------------------------------- executor

double Input(int rank, int tensor, int64_t i) {
  return std::sin(0.37 * i + rank * 1.7 + tensor) * (rank + 1) + 0.05 * tensor;
}

struct ExecCase {
  std::string backend;  // "gloo" or "shm"
  bool fused;           // two tensors in one response, else one
  bool joined_rank1;    // rank 1 lacks the tensors (contributes zeros)
  double prescale, postscale;
};

// Runs one Adasum response at `size` ranks; checks the float32 result against
// the double reference and that all ranks' outputs are bit-identical.
void RunExecutor(int size, const ExecCase& c) {
  const std::vector<int64_t> lens = c.fused ? std::vector<int64_t>{33, 1000} : std::vector<int64_t>{257};
  std::mutex mu;
  std::vector<std::vector<float>> outputs(size);
  RunRanks(size, [&](int rank, int n, Store* store) {
    CommunicatorSpec spec = LocalSpec(store, "adasum/" + c.backend, rank, n);
    std::unique_ptr<CollectiveBackend> b;
    Status st = c.backend == "shm" ? cpu::ShmBackend::Create(spec, 64 * 1024, &b)
                                   : cpu::GlooBackend::Create(spec, "", &b);
    ASSERT_TRUE(st.ok()) << st.reason();
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::move(b));
    cpu::HostDevice device;
    Executor exec(&device, std::move(backends), nullptr);
    TensorQueue queue;
    Response r;
    r.type = ResponseType::kAllreduce;
    r.reduce_op = ReduceOp::kAdasum;
    r.dtype = DataType::kFloat32;
    r.prescale = c.prescale;
    r.postscale = c.postscale;
    std::vector<std::vector<float>> in(lens.size()), out(lens.size());
    std::vector<TensorEntry> entries;
    for (size_t t = 0; t < lens.size(); ++t) {
      r.names.push_back("adasum." + std::to_string(t));
      r.shapes.push_back({lens[t]});
      in[t].resize(lens[t]);
      out[t].assign(lens[t], -1.0f);
      for (int64_t i = 0; i < lens[t]; ++i) in[t][i] = static_cast<float>(Input(rank, t, i));
      TensorEntry e;
      e.request.name = r.names.back();
      e.request.shape = {lens[t]};
      e.input = in[t].data();
      e.output = out[t].data();
      e.work = std::make_shared<Work>();
      entries.push_back(std::move(e));
    }
    std::vector<std::shared_ptr<Work>> works;
    for (auto& e : entries) works.push_back(e.work);
    const bool joined = c.joined_rank1 && rank == 1;
    if (!joined) ASSERT_TRUE(queue.Add(std::move(entries)).ok());
    ASSERT_TRUE(exec.Execute(r, &queue).ok());
    if (joined) return;
    std::vector<float> flat;
    for (size_t t = 0; t < lens.size(); ++t) {
      ASSERT_TRUE(works[t]->IsCompleted());
      ASSERT_TRUE(works[t]->status().ok()) << works[t]->status().reason();
      flat.insert(flat.end(), out[t].begin(), out[t].end());
    }
    std::lock_guard<std::mutex> lock(mu);
    outputs[rank] = flat;
  });
  // Expected, per tensor, from the double reference.
  std::vector<double> want;
  for (size_t t = 0; t < lens.size(); ++t) {
    std::vector<Vec> nodes(size, Vec(lens[t], 0.0));
    for (int rank = 0; rank < size; ++rank)
      for (int64_t i = 0; i < lens[t]; ++i)
        if (!(c.joined_rank1 && rank == 1))
          nodes[rank][i] = static_cast<float>(Input(rank, t, i)) * c.prescale;
    Vec v = RefTree(nodes);
    for (double x : v) want.push_back(x * c.postscale);
  }
  for (int rank = 0; rank < size; ++rank) {
    if (c.joined_rank1 && rank == 1) continue;
    ASSERT_EQ(outputs[rank].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(outputs[rank][i], want[i], 1e-5 * (1 + std::fabs(want[i])))
          << "rank " << rank << " index " << i << " size " << size;
    EXPECT_EQ(0, std::memcmp(outputs[rank].data(), outputs[0].data(), want.size() * sizeof(float)))
        << "rank " << rank << " differs from rank 0 at size " << size;
  }
}

class AdasumExecutor : public ::testing::TestWithParam<int> {};

TEST_P(AdasumExecutor, SingleTensorGloo) { RunExecutor(GetParam(), {"gloo", false, false, 1.0, 1.0}); }
TEST_P(AdasumExecutor, FusedTensorsShm) { RunExecutor(GetParam(), {"shm", true, false, 1.0, 1.0}); }
TEST_P(AdasumExecutor, ScaledFusedGloo) { RunExecutor(GetParam(), {"gloo", true, false, 0.5, 3.0}); }
TEST_P(AdasumExecutor, JoinedRankContributesZeros) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two ranks";
  RunExecutor(GetParam(), {"shm", false, true, 1.0, 1.0});
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AdasumExecutor, ::testing::Values(1, 2, 3, 4));

TEST(AdasumExecutorErrors, IntegerTensorFailsOnlyThatTensor) {
  RunRanks(1, [&](int rank, int n, Store* store) {
    std::unique_ptr<CollectiveBackend> b;
    ASSERT_TRUE(cpu::GlooBackend::Create(LocalSpec(store, "adasum/err", rank, n), "", &b).ok());
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::move(b));
    cpu::HostDevice device;
    Executor exec(&device, std::move(backends), nullptr);
    TensorQueue queue;
    std::vector<int32_t> data(4, 1);
    TensorEntry e;
    e.request.name = "adasum.int";
    e.input = e.output = data.data();
    e.work = std::make_shared<Work>();
    auto work = e.work;
    std::vector<TensorEntry> v;
    v.push_back(std::move(e));
    ASSERT_TRUE(queue.Add(std::move(v)).ok());
    Response r;
    r.names = {"adasum.int"};
    r.shapes = {{4}};
    r.dtype = DataType::kInt32;
    r.reduce_op = ReduceOp::kAdasum;
    EXPECT_TRUE(exec.Execute(r, &queue).ok());  // the communicator stays usable
    ASSERT_TRUE(work->IsCompleted());
    EXPECT_NE(work->status().reason().find("adasum.int"), std::string::npos);
  });
}

}  // namespace
}  // namespace hvda
