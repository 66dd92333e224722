// Conformance tests of the CPU collective backends (gloo, shm): ranks run as
// threads over a MemoryStore. Inputs are f(rank, index) so that each rank
// computes its expected output without communication.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "devices/cpu/gloo_backend.h"
#include "kernels/reduce_kernels.h"
#include "devices/cpu/shm_backend.h"
#include "multi_rank_harness.h"

namespace hvda {
namespace cpu {
namespace {

using hvda::testing::LocalSpec;
using hvda::testing::RunRanks;

// Small segments so that the counts below cross many chunk boundaries.
constexpr int64_t kTestSegmentBytes = 64 * 1024;

std::unique_ptr<CollectiveBackend> MakeBackend(const std::string& name,
                                               const CommunicatorSpec& spec) {
  std::unique_ptr<CollectiveBackend> b;
  Status st = name == "shm" ? ShmBackend::Create(spec, kTestSegmentBytes, &b)
                            : GlooBackend::Create(spec, "", &b);
  EXPECT_TRUE(st.ok()) << st.reason();
  return b;
}

const DataType kAllTypes[] = {DataType::kUInt8,    DataType::kInt8,    DataType::kInt16,
                              DataType::kInt32,    DataType::kInt64,   DataType::kFloat16,
                              DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                              DataType::kBool,     DataType::kUInt16};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
const int64_t kCounts[] = {0, 1, 7, 1000, 100003};

bool IsSigned(DataType t) {
  return t != DataType::kUInt8 && t != DataType::kUInt16 && t != DataType::kBool;
}

// Small integers: every partial result of every op over <= 4 ranks is exact
// in every dtype, so any reduction order gives the same bits.
double Value(int rank, int64_t i, ReduceOp op, DataType t) {
  switch (op) {
    case ReduceOp::kSum: return (rank + 1) * (i % 7 + 1) * (IsSigned(t) && i % 3 == 0 ? -1 : 1);
    case ReduceOp::kProduct: return (1 + (rank + i) % 2) * (IsSigned(t) && (rank + i) % 5 == 0 ? -1 : 1);
    default: return static_cast<double>((rank * 31 + i * 17) % 50) - (IsSigned(t) ? 25 : 0);
  }
}

void Put(void* buf, int64_t i, DataType t, double v) {
  switch (t) {
    case DataType::kUInt8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case DataType::kInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v); break;
    case DataType::kInt16: static_cast<int16_t*>(buf)[i] = static_cast<int16_t>(v); break;
    case DataType::kUInt16: static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case DataType::kFloat16: static_cast<uint16_t*>(buf)[i] = FloatToHalf(static_cast<float>(v)); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(buf)[i] = FloatToBFloat16(static_cast<float>(v)); break;
    case DataType::kFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(buf)[i] = v; break;
    case DataType::kBool: static_cast<uint8_t*>(buf)[i] = v != 0; break;
  }
}

double Load(const void* buf, int64_t i, DataType t) {
  switch (t) {
    case DataType::kUInt8: return static_cast<const uint8_t*>(buf)[i];
    case DataType::kInt8: return static_cast<const int8_t*>(buf)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(buf)[i];
    case DataType::kUInt16: return static_cast<const uint16_t*>(buf)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(buf)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::kFloat16: return HalfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kFloat32: return static_cast<const float*>(buf)[i];
    case DataType::kFloat64: return static_cast<const double*>(buf)[i];
    case DataType::kBool: return static_cast<const uint8_t*>(buf)[i];
  }
  return 0;
}

double Fold(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum: return a + b;
    case ReduceOp::kProduct: return a * b;
    case ReduceOp::kMin: return std::min(a, b);
    default: return std::max(a, b);
  }
}

double Expected(int size, int64_t i, ReduceOp op, DataType t) {
  double acc = Value(0, i, op, t);
  for (int r = 1; r < size; ++r) acc = Fold(op, acc, Value(r, i, op, t));
  return acc;
}

uint8_t Byte(int a, int b, int64_t j) { return static_cast<uint8_t>(a * 31 + b * 17 + j * 7 + 1); }

class CpuBackendTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  std::string backend() const { return std::get<0>(GetParam()); }
  int world() const { return std::get<1>(GetParam()); }
};

TEST_P(CpuBackendTest, AllreduceEveryDtypeOpAndCount) {
  const std::string name = backend();
  RunRanks(world(), [&](int rank, int size, Store* store) {
    auto b = MakeBackend(name, LocalSpec(store, "ar/", rank, size));
    ASSERT_TRUE(b);
    for (DataType t : kAllTypes) {
      for (ReduceOp op : kOps) {
        ASSERT_EQ(b->Supports(CollectiveKind::kAllreduce, t, op), t != DataType::kBool);
        if (t == DataType::kBool) continue;
        for (int64_t count : kCounts) {
          std::vector<char> buf(count * DataTypeSize(t) + 1);
          for (int64_t i = 0; i < count; ++i) Put(buf.data(), i, t, Value(rank, i, op, t));
          Status st = b->Allreduce(buf.data(), count, t, op, nullptr);
          ASSERT_TRUE(st.ok()) << st.reason();
          for (int64_t i = 0; i < count; ++i) {
            std::vector<char> want(DataTypeSize(t));
            Put(want.data(), 0, t, Expected(size, i, op, t));
            ASSERT_EQ(Load(buf.data(), i, t), Load(want.data(), 0, t))
                << DataTypeName(t) << " " << ReduceOpName(op) << " count " << count << " i " << i;
          }
        }
      }
    }
  });
}

TEST_P(CpuBackendTest, HalfPrecisionSumMatchesDoubleReference) {
  const std::string name = backend();
  RunRanks(world(), [&](int rank, int size, Store* store) {
    auto b = MakeBackend(name, LocalSpec(store, "half/", rank, size));
    ASSERT_TRUE(b);
    const int64_t count = 50001;
    for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
      auto value = [&](int r, int64_t i) {  // quantised input, as every rank stores it
        std::vector<uint16_t> q(1);
        Put(q.data(), 0, t, std::sin(0.37 * r + 0.011 * i) * 3.0);
        return Load(q.data(), 0, t);
      };
      std::vector<uint16_t> buf(count);
      for (int64_t i = 0; i < count; ++i) Put(buf.data(), i, t, value(rank, i));
      ASSERT_TRUE(b->Allreduce(buf.data(), count, t, ReduceOp::kSum, nullptr).ok());
      const double eps = t == DataType::kFloat16 ? 1.0 / 1024 : 1.0 / 128;
      for (int64_t i = 0; i < count; ++i) {
        double ref = 0;
        for (int r = 0; r < size; ++r) ref += value(r, i);
        ASSERT_NEAR(Load(buf.data(), i, t), ref, size * eps * std::max(1.0, std::fabs(ref)))
            << DataTypeName(t) << " i " << i;
      }
    }
  });
}

TEST_P(CpuBackendTest, AllgathervUnevenIncludingZero) {
  const std::string name = backend();
  RunRanks(world(), [&](int rank, int size, Store* store) {
    auto b = MakeBackend(name, LocalSpec(store, "ag/", rank, size));
    ASSERT_TRUE(b);
    for (int64_t scale : {int64_t{0}, int64_t{1}, int64_t{997}, int64_t{70001}}) {
      std::vector<int64_t> bytes(size);
      for (int r = 0; r < size; ++r) bytes[r] = r == 1 ? 0 : scale * (r + 1) + r;
      if (scale == 0) std::fill(bytes.begin(), bytes.end(), 0);
      std::vector<uint8_t> in(bytes[rank]);
      for (int64_t j = 0; j < bytes[rank]; ++j) in[j] = Byte(rank, 0, j);
      std::vector<uint8_t> out(std::accumulate(bytes.begin(), bytes.end(), int64_t{0}));
      Status st = b->Allgatherv(in.data(), out.data(), bytes, nullptr);
      ASSERT_TRUE(st.ok()) << st.reason();
      int64_t off = 0;
      for (int r = 0; r < size; ++r)
        for (int64_t j = 0; j < bytes[r]; ++j, ++off)
          ASSERT_EQ(out[off], Byte(r, 0, j)) << "from rank " << r << " byte " << j;
    }
  });
}

TEST_P(CpuBackendTest, BroadcastFromEveryRoot) {
  const std::string name = backend();
  RunRanks(world(), [&](int rank, int size, Store* store) {
    auto b = MakeBackend(name, LocalSpec(store, "bc/", rank, size));
    ASSERT_TRUE(b);
    for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{300007}}) {
      for (int root = 0; root < size; ++root) {
        std::vector<uint8_t> buf(bytes, 0);
        if (rank == root)
          for (int64_t j = 0; j < bytes; ++j) buf[j] = Byte(root, 1, j);
        Status st = b->Broadcast(buf.data(), bytes, root, nullptr);
        ASSERT_TRUE(st.ok()) << st.reason();
        for (int64_t j = 0; j < bytes; ++j) ASSERT_EQ(buf[j], Byte(root, 1, j)) << j;
      }
    }
  });
}

// Bytes rank s sends to rank d: uneven, some zero.
int64_t Split(int s, int d, int64_t scale) { return ((s * 3 + d * 5) % 4) * scale + (s == d ? 1 : 0); }

TEST_P(CpuBackendTest, AlltoallvUnevenSplits) {
  const std::string name = backend();
  RunRanks(world(), [&](int rank, int size, Store* store) {
    auto b = MakeBackend(name, LocalSpec(store, "a2a/", rank, size));
    ASSERT_TRUE(b);
    for (int64_t scale : {int64_t{0}, int64_t{13}, int64_t{50021}}) {
      std::vector<int64_t> send(size), recv(size);
      for (int r = 0; r < size; ++r) {
        send[r] = scale == 0 ? 0 : Split(rank, r, scale);
        recv[r] = scale == 0 ? 0 : Split(r, rank, scale);
      }
      std::vector<uint8_t> in(std::accumulate(send.begin(), send.end(), int64_t{0}));
      for (int r = 0, off = 0; r < size; ++r)
        for (int64_t j = 0; j < send[r]; ++j) in[off++] = Byte(rank, r, j);
      std::vector<uint8_t> out(std::accumulate(recv.begin(), recv.end(), int64_t{0}));
      Status st = b->Alltoallv(in.data(), send, out.data(), recv, nullptr);
      ASSERT_TRUE(st.ok()) << st.reason();
      int64_t off = 0;
      for (int r = 0; r < size; ++r)
        for (int64_t j = 0; j < recv[r]; ++j, ++off)
          ASSERT_EQ(out[off], Byte(r, rank, j)) << "from rank " << r << " byte " << j;
    }
  });
}

TEST_P(CpuBackendTest, ReducescatterUneven) {
  const std::string name = backend();
  RunRanks(world(), [&](int rank, int size, Store* store) {
    auto b = MakeBackend(name, LocalSpec(store, "rs/", rank, size));
    ASSERT_TRUE(b);
    for (DataType t : {DataType::kFloat32, DataType::kInt32, DataType::kFloat16, DataType::kInt8}) {
      for (ReduceOp op : kOps) {
        for (int64_t base : {int64_t{0}, int64_t{3}, int64_t{40009}}) {
          std::vector<int64_t> counts(size);
          for (int r = 0; r < size; ++r) counts[r] = r == size - 1 && size > 1 ? 0 : base + r * 5;
          if (base == 0) std::fill(counts.begin(), counts.end(), 0);
          const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
          const int64_t first = std::accumulate(counts.begin(), counts.begin() + rank, int64_t{0});
          std::vector<char> in(total * DataTypeSize(t) + 1), out(counts[rank] * DataTypeSize(t) + 1);
          for (int64_t i = 0; i < total; ++i) Put(in.data(), i, t, Value(rank, i, op, t));
          Status st = b->Reducescatter(in.data(), out.data(), counts, t, op, nullptr);
          ASSERT_TRUE(st.ok()) << st.reason();
          for (int64_t i = 0; i < counts[rank]; ++i) {
            std::vector<char> want(DataTypeSize(t));
            Put(want.data(), 0, t, Expected(size, first + i, op, t));
            ASSERT_EQ(Load(out.data(), i, t), Load(want.data(), 0, t))
                << DataTypeName(t) << " " << ReduceOpName(op) << " i " << i;
          }
        }
      }
    }
    ASSERT_TRUE(b->Barrier(nullptr).ok());
  });
}

std::string ParamName(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return std::get<0>(info.param) + "_np" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Gloo, CpuBackendTest,
                         ::testing::Combine(::testing::Values("gloo"), ::testing::Values(1, 2, 3, 4)),
                         ParamName);
INSTANTIATE_TEST_SUITE_P(Shm, CpuBackendTest,
                         ::testing::Combine(::testing::Values("shm"), ::testing::Values(1, 2, 3, 4)),
                         ParamName);

}  // namespace
}  // namespace cpu
}  // namespace hvda

namespace hvda {
namespace cpu {
namespace {

// Back-to-back collectives of different kinds reuse the two halves of the
// shm segments in every interleaving; a reuse race shows up as wrong data.
TEST(ShmBackendTest, MixedCollectivesBackToBackStayCorrect) {
  for (int size : {2, 3}) {
    hvda::testing::RunRanks(size, [&](int rank, int n, Store* store) {
      std::unique_ptr<CollectiveBackend> b;
      ASSERT_TRUE(ShmBackend::Create(hvda::testing::LocalSpec(store, "mix/", rank, n), 8192, &b).ok());
      for (int iter = 0; iter < 200; ++iter) {
        const int64_t count = 1 + (iter * 37) % 3001;
        std::vector<float> buf(count);
        for (int64_t i = 0; i < count; ++i) buf[i] = static_cast<float>(rank + 1 + i % 5 + iter);
        ASSERT_TRUE(b->Allreduce(buf.data(), count, DataType::kFloat32, ReduceOp::kSum, nullptr).ok());
        for (int64_t i = 0; i < count; ++i)
          ASSERT_EQ(buf[i], static_cast<float>(n * (n + 1) / 2 + n * (i % 5 + iter))) << iter << " " << i;
        std::vector<uint8_t> bytes(iter % 7 + 1, static_cast<uint8_t>(iter));
        if (rank == iter % n)
          for (auto& x : bytes) x = static_cast<uint8_t>(iter * 3 + 1);
        ASSERT_TRUE(b->Broadcast(bytes.data(), bytes.size(), iter % n, nullptr).ok());
        for (auto x : bytes) ASSERT_EQ(x, static_cast<uint8_t>(iter * 3 + 1));
      }
    });
  }
}

// NOTE [Shared CPU]: ranks whose threads share one CPU get correct results,
// first pinned to that CPU (waiters cannot move: they sleep instead of
// spinning), then free to move (a waiter that finds its peer on its CPU moves
// itself off it); either way every thread ends with the affinity mask it had.
TEST(ShmBackendTest, RanksSharingOneCpuStayCorrectAndKeepTheirAffinity) {
  cpu_set_t all;
  ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "needs a process allowed on at least 2 CPUs";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  for (int size : {2, 3}) {
    hvda::testing::RunRanks(size, [&](int rank, int n, Store* store) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(first, &one);
      ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
      std::unique_ptr<CollectiveBackend> b;
      ASSERT_TRUE(ShmBackend::Create(hvda::testing::LocalSpec(store, "cpu/", rank, n), 8192, &b).ok());
      auto check_allreduces = [&](const cpu_set_t& expected_mask, const char* phase) {
        for (int iter = 0; iter < 100; ++iter) {
          const int64_t count = 1 + (iter * 53) % 5001;
          std::vector<int32_t> buf(count, rank + iter);
          ASSERT_TRUE(b->Allreduce(buf.data(), count, DataType::kInt32, ReduceOp::kSum, nullptr).ok());
          for (int64_t i = 0; i < count; ++i) ASSERT_EQ(buf[i], n * (n - 1) / 2 + n * iter) << phase;
          cpu_set_t now;
          ASSERT_EQ(0, sched_getaffinity(0, sizeof(now), &now));
          ASSERT_TRUE(CPU_EQUAL(&now, &expected_mask)) << phase << ": affinity mask changed";
        }
      };
      check_allreduces(one, "pinned to one CPU");
      // Free to move again, still on `first` until the scheduler or a waiter moves it.
      ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
      check_allreduces(all, "free to move");
    });
  }
}

// AllreduceSpans (NOTE [Reducing in place of the caller]): tensors of uneven
// and zero lengths, some in place and some not, reduce exactly like one
// concatenated buffer, at 2-4 ranks; inputs of out-of-place spans are left
// as they were. The large set crosses chunk boundaries (8 KiB segments);
// the small one fits a half and takes NOTE [shm small allreduce]. With a
// postscale every output equals the reduction scaled by cpu::Scale (what
// the executor did after the collective before it was folded in).
TEST(ShmBackendTest, AllreduceSpansEqualsOneConcatenatedBuffer) {
  for (const std::vector<int64_t>& counts : {std::vector<int64_t>{0, 1, 7, 1000, 0, 4099, 33, 1},
                                             std::vector<int64_t>{0, 3, 100, 0, 17, 1}})
  for (int world : {2, 3, 4}) {
    for (DataType t : {DataType::kFloat32, DataType::kInt64, DataType::kBFloat16, DataType::kUInt8}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax})
      for (double post : {1.0, 1.0 / 3}) {
        hvda::testing::RunRanks(world, [&](int rank, int n, Store* store) {
          std::unique_ptr<CollectiveBackend> b;
          ASSERT_TRUE(ShmBackend::Create(hvda::testing::LocalSpec(store, "spans/", rank, n), 8192, &b).ok());
          ASSERT_TRUE(b->ReducesSpans());
          const int64_t esize = DataTypeSize(t);
          std::vector<std::vector<char>> ins(counts.size()), outs(counts.size());
          std::vector<CollectiveBackend::Span> spans;
          int64_t at = 0;
          for (size_t k = 0; k < counts.size(); ++k) {
            ins[k].resize(counts[k] * esize + 1);
            for (int64_t i = 0; i < counts[k]; ++i) Put(ins[k].data(), i, t, Value(rank, at + i, op, t));
            const bool in_place = k % 2 == 0;
            if (!in_place) outs[k].assign(counts[k] * esize + 1, 0);
            void* out = in_place ? static_cast<void*>(ins[k].data()) : outs[k].data();
            spans.push_back(CollectiveBackend::Span{ins[k].data(), out, counts[k]});
            at += counts[k];
          }
          Status st = b->AllreduceSpans(spans, t, op, post, nullptr);
          ASSERT_TRUE(st.ok()) << st.reason();
          at = 0;
          for (size_t k = 0; k < counts.size(); ++k) {
            for (int64_t i = 0; i < counts[k]; ++i) {
              std::vector<char> want(esize);
              Put(want.data(), 0, t, Expected(n, at + i, op, t));
              if (post != 1.0) kernels::Scale(want.data(), 1, t, post);
              ASSERT_EQ(Load(spans[k].out, i, t), Load(want.data(), 0, t))
                  << DataTypeName(t) << " " << ReduceOpName(op) << " x" << post << " span " << k
                  << " i " << i;
              if (spans[k].out != spans[k].in) {
                std::vector<char> mine(esize);
                Put(mine.data(), 0, t, Value(rank, at + i, op, t));
                ASSERT_EQ(Load(ins[k].data(), i, t), Load(mine.data(), 0, t)) << "input modified";
              }
            }
            at += counts[k];
          }
        });
      }
    }
  }
}

// PeerAhead (NOTE [Quiet cycles]): false while every rank stands between the
// same two collectives; true on the others, without blocking, once one rank
// waits in a collective they have not entered; false again after it.
TEST(ShmBackendTest, PeerAheadSeesExactlyAPeerWaitingInTheNextCollective) {
  constexpr int kRanks = 3;
  std::atomic<int> between{0}, done{0};
  auto all_at = [](std::atomic<int>& counter, int target) {
    counter.fetch_add(1);
    while (counter.load() < target) std::this_thread::yield();
  };
  hvda::testing::RunRanks(kRanks, [&](int rank, int n, Store* store) {
    std::unique_ptr<CollectiveBackend> b;
    ASSERT_TRUE(ShmBackend::Create(hvda::testing::LocalSpec(store, "ahead/", rank, n), 8192, &b).ok());
    ASSERT_TRUE(b->Barrier(nullptr).ok());
    all_at(between, n);  // every rank is past the first barrier, none in a second
    EXPECT_FALSE(b->PeerAhead()) << "rank " << rank;
    all_at(between, 2 * n);
    if (rank != 0) {
      // Rank 0 enters the next barrier and waits there; the others see it.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!b->PeerAhead() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_TRUE(b->PeerAhead()) << "rank " << rank;
    }
    ASSERT_TRUE(b->Barrier(nullptr).ok());
    all_at(done, n);
    EXPECT_FALSE(b->PeerAhead()) << "rank " << rank;
  });
}

// A rank that never arrives makes the others fail within the timeout with a
// message naming it, instead of hanging.
TEST(ShmBackendTest, MissingPeerTimesOutNamingIt) {
  std::atomic<bool> done{false};
  hvda::testing::RunRanks(2, [&](int rank, int n, Store* store) {
    auto spec = hvda::testing::LocalSpec(store, "late/", rank, n);
    spec.timeout_seconds = 1.0;
    std::unique_ptr<CollectiveBackend> b;
    ASSERT_TRUE(ShmBackend::Create(spec, 8192, &b).ok());
    if (rank == 1) {  // never joins the allreduce, but keeps its communicator
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    struct Done {
      std::atomic<bool>* d;
      ~Done() { d->store(true); }
    } signal_done{&done};
    std::vector<float> buf(100, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = b->Allreduce(buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum, nullptr);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.reason().find("rank 1"), std::string::npos) << st.reason();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    // The communicator refuses further work with a clear message.
    Status again = b->Barrier(nullptr);
    EXPECT_FALSE(again.ok());
    EXPECT_NE(again.reason().find("earlier collective failed"), std::string::npos) << again.reason();
  });
}

// A peer that leaves (its communicator failed elsewhere, or it shut down)
// while this rank waits for it in a collective: the wait ends at once, not at
// the deadline, naming the peer; this rank then leaves too, so a third rank
// waiting for it is released as well.
TEST(ShmBackendTest, APeerThatLeavesReleasesTheWaitersAtOnce) {
  hvda::testing::RunRanks(3, [&](int rank, int n, Store* store) {
    auto spec = hvda::testing::LocalSpec(store, "leave/", rank, n);
    spec.timeout_seconds = 30.0;
    std::unique_ptr<CollectiveBackend> b;
    ASSERT_TRUE(ShmBackend::Create(spec, 8192, &b).ok());
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others wait
      b.reset();  // leaves without joining the allreduce
      return;
    }
    std::vector<float> buf(100, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    Status st = b->Allreduce(buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum, nullptr);
    EXPECT_FALSE(st.ok());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_NE(st.reason().find(" left "), std::string::npos) << st.reason();
  });
}

}  // namespace
}  // namespace cpu
}  // namespace hvda
