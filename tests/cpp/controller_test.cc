// Negotiation tests: N ranks as threads, each with its own Controller over a
// real controller transport (Gloo over loopback TCP, or the shm backend
// through BackendControllerTransport), sharing an in-memory store.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <tuple>

#include "common/controller.h"
#include "common/transport/backend_controller_transport.h"
#include "common/transport/gloo_context.h"
#include "devices/cpu/shm_backend.h"
#include "common/transport/gloo_controller_transport.h"
#include "multi_rank_harness.h"

namespace hvda {
namespace {

using testing::LocalSpec;
using testing::RunRanks;

// Counts gathers so tests can tell the cache fast path from the slow path.
class CountingTransport : public ControllerTransport {
 public:
  explicit CountingTransport(std::unique_ptr<ControllerTransport> t) : t_(std::move(t)) {}
  int rank() const override { return t_->rank(); }
  int size() const override { return t_->size(); }
  Status Gather(const std::string& m, std::vector<std::string>* a) override {
    ++gathers;
    return t_->Gather(m, a);
  }
  Status Broadcast(std::string* b) override { return t_->Broadcast(b); }
  Status BitAnd(std::vector<uint64_t>* b) override { return t_->BitAnd(b); }
  int gathers = 0;

 private:
  std::unique_ptr<ControllerTransport> t_;
};

struct Rank {
  std::unique_ptr<CollectiveBackend> backend;  // shm transport only; outlives transport
  std::unique_ptr<CountingTransport> transport;
  std::unique_ptr<Controller> controller;
  Logger log;
};

// transport: "gloo" or "shm". The shm segment is tiny so that long request
// lists take the transport's multi-step path.
void MakeRank(const std::string& transport, int rank, int size, Store* store,
              ControllerOptions opts, Rank* out) {
  if (transport == "shm") {
    ASSERT_TRUE(cpu::ShmBackend::Create(LocalSpec(store, "ctrl/", rank, size), 8192, &out->backend).ok());
    out->transport = std::make_unique<CountingTransport>(
        std::make_unique<BackendControllerTransport>(out->backend.get()));
  } else {
    std::shared_ptr<gloo::Context> ctx;
    ASSERT_TRUE(CreateGlooContext(LocalSpec(store, "ctrl/", rank, size), "", &ctx).ok());
    out->transport = std::make_unique<CountingTransport>(std::make_unique<GlooControllerTransport>(ctx));
  }
  std::vector<int> ranks(size);
  for (int r = 0; r < size; ++r) ranks[r] = r;
  out->controller = std::make_unique<Controller>(out->transport.get(), opts, ranks, &out->log, nullptr);
}

Request Req(int rank, const std::string& name, std::vector<int64_t> shape,
            RequestType type = RequestType::kAllreduce) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.type = type;
  r.shape = std::move(shape);
  return r;
}

// Cycles until `want` tensor names were answered (or 500 cycles).
std::vector<Response> CycleUntil(Controller& c, std::vector<Request> first, size_t want) {
  std::vector<Response> got;
  size_t names = 0;
  for (int i = 0; i < 500 && names < want; ++i) {
    ResponseList l;
    EXPECT_TRUE(c.ComputeResponseList(i == 0 ? first : std::vector<Request>(), false, &l).ok());
    for (auto& r : l.responses) {
      names += r.names.size();
      got.push_back(r);
    }
  }
  return got;
}

std::vector<std::string> Names(const std::vector<Response>& rs) {
  std::vector<std::string> n;
  for (const auto& r : rs) n.insert(n.end(), r.names.begin(), r.names.end());
  return n;
}

class ControllerTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  std::string transport() const { return std::get<0>(GetParam()); }
  int world() const { return std::get<1>(GetParam()); }
};

TEST_P(ControllerTest, AnyOrderAgreesEverywhereThenUsesCache) {
  const int size = world();
  const std::string kind = transport();
  std::vector<std::vector<std::string>> seen(size);
  std::vector<int> slow_gathers(size);
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    for (int step = 0; step < 3; ++step) {
      std::vector<Request> reqs;
      for (int i = 0; i < 8; ++i) reqs.push_back(Req(rank, "t" + std::to_string(i), {i + 1}));
      if (rank % 2 == 1) std::reverse(reqs.begin(), reqs.end());
      int before = me.transport->gathers;
      auto rs = CycleUntil(*me.controller, reqs, 8);
      if (step == 0) seen[rank] = Names(rs);
      if (step == 2) slow_gathers[rank] = me.transport->gathers - before;
    }
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(seen[r], seen[0]) << "rank " << r << " executes in a different order";
    EXPECT_EQ(seen[r].size(), 8u);
    if (size > 1) EXPECT_EQ(slow_gathers[r], 0) << "steady state should not gather";
  }
}

TEST_P(ControllerTest, ShapeMismatchIsAnErrorNamingRanks) {
  const int size = world();
  const std::string kind = transport();
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<Response> got(size);
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    auto rs = CycleUntil(*me.controller, {Req(rank, "x", {4, rank == 1 ? 5 : 4})}, 1);
    ASSERT_EQ(rs.size(), 1u);
    got[rank] = rs[0];
    // The job keeps working afterwards.
    auto ok = CycleUntil(*me.controller, {Req(rank, "y", {2})}, 1);
    ASSERT_EQ(ok.size(), 1u);
    EXPECT_EQ(ok[0].type, ResponseType::kAllreduce);
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(got[r].type, ResponseType::kError);
    EXPECT_NE(got[r].error.find("'x'"), std::string::npos) << got[r].error;
    EXPECT_NE(got[r].error.find("rank 0 has [4, 4], rank 1 has [4, 5]"), std::string::npos)
        << got[r].error;
  }
}

TEST_P(ControllerTest, JoinedRanksLetAllreduceProceedAndRejectAllgather) {
  const int size = world();
  const std::string kind = transport();
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<std::vector<Response>> got(size);
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    std::vector<Request> reqs;
    if (rank == n - 1) {
      reqs.push_back(Req(rank, "__join__", {}, RequestType::kJoin));
    } else {
      reqs.push_back(Req(rank, "a", {3}));
      reqs.push_back(Req(rank, "g", {3}, RequestType::kAllgather));
    }
    auto rs = CycleUntil(*me.controller, reqs, 2);
    std::vector<Request> join;
    if (rank != n - 1) join.push_back(Req(rank, "__join__", {}, RequestType::kJoin));
    auto rest = CycleUntil(*me.controller, join, 1);
    rs.insert(rs.end(), rest.begin(), rest.end());
    got[rank] = rs;
  });
  for (int r = 0; r < size; ++r) {
    ASSERT_EQ(got[r].size(), 3u);
    EXPECT_EQ(got[r][0].type, ResponseType::kAllreduce);
    EXPECT_EQ(got[r][1].type, ResponseType::kError);
    EXPECT_NE(got[r][1].error.find("join"), std::string::npos);
    EXPECT_EQ(got[r][2].type, ResponseType::kJoin);
    // The last rank to call join (ranks 0..size-2 join in some order).
    EXPECT_EQ(got[r][2].last_joined_rank, got[0][2].last_joined_rank);
    EXPECT_GE(got[r][2].last_joined_rank, 0);
    EXPECT_LE(got[r][2].last_joined_rank, size - 2);
  }
}

TEST_P(ControllerTest, FusesSmallTensorsAndChangedShapeInvalidatesCache) {
  const int size = world();
  const std::string kind = transport();
  std::vector<std::vector<Response>> got(size);
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    std::vector<Request> reqs = {Req(rank, "a", {4}), Req(rank, "b", {4}), Req(rank, "c", {4})};
    CycleUntil(*me.controller, reqs, 3);  // populate the cache
    reqs[1].shape = {5};                  // "b" changes shape on every rank
    got[rank] = CycleUntil(*me.controller, reqs, 3);
  });
  for (int r = 0; r < size; ++r) {
    auto names = Names(got[r]);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
    for (const auto& resp : got[r])
      for (size_t i = 0; i < resp.names.size(); ++i)
        if (resp.names[i] == "b") EXPECT_EQ(resp.shapes[i], (std::vector<int64_t>{5}));
  }
}

TEST_P(ControllerTest, StallShutdownNamesMissingRanks) {
  const int size = world();
  const std::string kind = transport();
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<std::string> errors(size);
  // One int per rank, not vector<bool>: rank threads write their entries
  // concurrently, and vector<bool> packs them into one shared word.
  std::vector<int> shut(size, 0);
  RunRanks(size, [&](int rank, int n, Store* store) {
    ControllerOptions opts;
    opts.stall.warning_seconds = 0.2;
    opts.stall.shutdown_seconds = 0.5;
    Rank me;
    MakeRank(kind, rank, n, store, opts, &me);
    std::vector<Request> reqs;
    if (rank == 0) reqs.push_back(Req(rank, "lonely", {1}));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      ResponseList l;
      ASSERT_TRUE(me.controller->ComputeResponseList(reqs, false, &l).ok());
      reqs.clear();
      for (const auto& r : l.responses)
        if (r.type == ResponseType::kError) errors[rank] = r.error;
      if (l.shutdown) {
        shut[rank] = 1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  for (int r = 0; r < size; ++r) EXPECT_TRUE(shut[r]) << "rank " << r << " did not shut down";
  EXPECT_NE(errors[0].find("'lonely'"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("ranks [1"), std::string::npos) << errors[0];
}

// NOTE [Deadlock detection]: while every rank reports stuck, each set's
// coordinator fails every waiting request, naming per rank what it submitted;
// if a single rank is not stuck (e.g. computing), nothing fails.
TEST_P(ControllerTest, DeadlockFailsWaitingRequestsOnlyWhenEveryRankIsStuck) {
  const int size = world();
  const std::string kind = transport();
  if (size < 2) GTEST_SKIP() << "a lone rank's request is always complete";
  std::vector<std::string> errors(size);
  std::vector<int> before_all_stuck(size, 0);
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    // Every rank submits its own name; the last rank is not stuck for the
    // first 20 cycles (it is "computing").
    std::vector<Request> reqs{Req(rank, "only_" + std::to_string(rank), {1})};
    for (int cycle = 0; cycle < 200 && errors[rank].empty(); ++cycle) {
      const bool stuck = rank != n - 1 || cycle >= 20;
      ResponseList l;
      ASSERT_TRUE(me.controller->ComputeResponseList(reqs, false, &l, false, stuck).ok());
      reqs.clear();
      if (!me.controller->all_stuck()) before_all_stuck[rank]++;
      for (const auto& r : l.responses) {
        ASSERT_EQ(r.type, ResponseType::kError);
        if (r.names[0] == "only_" + std::to_string(rank)) errors[rank] = r.error;
      }
    }
  });
  for (int r = 0; r < size; ++r) {
    ASSERT_NE(errors[r].find("Deadlock detected"), std::string::npos) << errors[r];
    for (int q = 0; q < size; ++q)
      EXPECT_NE(errors[r].find("rank " + std::to_string(q) + ": 'only_" + std::to_string(q) + "'"),
                std::string::npos)
          << errors[r];
    // No verdict while the last rank computed; the same cycle everywhere.
    EXPECT_EQ(before_all_stuck[r], 20) << "rank " << r;
  }
}

// NOTE [A deadlock ends the generation]: the cycle whose coordinator declares
// a deadlock says so on every member (deadlock_declared); the global set's
// ends the generation in that cycle (shutdown + deadlock_end, no shutdown
// rank), another set's only declares it. A rank's RequestList::deadlock_end
// then ends the generation on every rank in the next cycle.
TEST_P(ControllerTest, DeclaredDeadlockEndsTheGenerationOnEveryRank) {
  const int size = world();
  const std::string kind = transport();
  if (size < 2) GTEST_SKIP() << "a lone rank's request is always complete";
  for (int set_id : {0, 3}) {
    std::vector<int> declared(size, 0), ended(size, 0), ranks_named(size, 0);
    std::vector<int> ended_by_request(size, 0), ranks_named_by_request(size, 0);
    RunRanks(size, [&](int rank, int n, Store* store) {
      ControllerOptions opts;
      opts.process_set_id = set_id;
      Rank me;
      MakeRank(kind, rank, n, store, opts, &me);
      std::vector<Request> reqs{Req(rank, "only_" + std::to_string(rank), {1})};
      for (int cycle = 0; cycle < 50 && !declared[rank]; ++cycle) {
        ResponseList l;
        ASSERT_TRUE(me.controller->ComputeResponseList(reqs, false, &l, false, true).ok());
        reqs.clear();
        declared[rank] = l.deadlock_declared;
        ended[rank] = l.deadlock_end && l.shutdown;
        ranks_named[rank] = static_cast<int>(l.shutdown_ranks.size());
      }
      // Only the last rank asks; every rank ends, and nobody called shutdown.
      ResponseList l;
      ASSERT_TRUE(me.controller->ComputeResponseList({}, false, &l, false, false,
                                                     /*deadlock_end=*/rank == n - 1).ok());
      ended_by_request[rank] = l.deadlock_end && l.shutdown;
      ranks_named_by_request[rank] = static_cast<int>(l.shutdown_ranks.size());
    });
    for (int r = 0; r < size; ++r) {
      EXPECT_TRUE(declared[r]) << "set " << set_id << " rank " << r;
      EXPECT_EQ(ended[r], set_id == 0 ? 1 : 0) << "set " << set_id << " rank " << r;
      EXPECT_EQ(ranks_named[r], 0) << "rank " << r;
      EXPECT_TRUE(ended_by_request[r]) << "set " << set_id << " rank " << r;
      EXPECT_EQ(ranks_named_by_request[r], 0) << "rank " << r;
    }
  }
}

// The idle bit is ANDed: all_idle() only when every rank reported idle, and
// then identically everywhere.
TEST_P(ControllerTest, AllIdleOnlyWhenEveryRankIsIdle) {
  const int size = world();
  const std::string kind = transport();
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    ResponseList l;
    ASSERT_TRUE(me.controller->ComputeResponseList({}, false, &l, /*locally_idle=*/true).ok());
    EXPECT_TRUE(me.controller->all_idle());
    ASSERT_TRUE(me.controller->ComputeResponseList({}, false, &l, /*locally_idle=*/rank != n - 1).ok());
    EXPECT_EQ(me.controller->all_idle(), false) << "rank " << rank;
    // A rank with a pending request is never idle, whatever it reports.
    std::vector<Request> first;
    if (rank == 0) first.push_back(Req(rank, "only_rank0", {2}));
    ASSERT_TRUE(me.controller->ComputeResponseList(first, false, &l, true).ok());
    EXPECT_EQ(me.controller->all_idle(), false) << "rank " << rank;
  });
}

// A request list far longer than one frame of BackendControllerTransport.
TEST_P(ControllerTest, LongRequestListsCrossEveryTransport) {
  const int size = world();
  const std::string kind = transport();
  RunRanks(size, [&](int rank, int n, Store* store) {
    Rank me;
    MakeRank(kind, rank, n, store, ControllerOptions(), &me);
    std::vector<Request> reqs;
    for (int i = 0; i < 300; ++i)
      reqs.push_back(Req(rank, "a_rather_long_tensor_name_to_fill_frames." + std::to_string(i), {i + 1}));
    auto got = CycleUntil(*me.controller, reqs, 300);
    EXPECT_EQ(Names(got).size(), 300u);
  });
}

std::string ControllerParamName(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return std::get<0>(info.param) + "_np" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Transports, ControllerTest,
                         ::testing::Combine(::testing::Values("gloo", "shm"),
                                            ::testing::Values(1, 2, 3)),
                         ControllerParamName);

}  // namespace
}  // namespace hvda
