// Autotune across ranks: tuned values travel with the global set's response
// list through real controllers (Gloo, shm), so every rank fuses identically
// in every cycle (NOTE [Autotune sync]).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "autotune_test_util.h"
#include "common/autotune/parameter_manager.h"
#include "common/controller.h"
#include "common/transport/backend_controller_transport.h"
#include "common/transport/gloo_context.h"
#include "common/transport/gloo_controller_transport.h"
#include "devices/cpu/shm_backend.h"
#include "multi_rank_harness.h"

namespace hvda {
namespace {

using testing::SmallOptions;

// Real controllers, one per rank (threads), each with its own manager as in
// separate processes; rank 0 tunes. Every rank must fuse the same tensors
// together in every cycle, while the threshold changes.
// cache_capacity 0: every cycle takes the slow path, which carries the values.
void CheckIdenticalFusionWhileTuning(const std::string& kind, int size, size_t cache_capacity) {
  constexpr int kSteps = 60, kTensors = 6;
  // Per rank: per step, the fused groups (names joined) and the threshold.
  std::vector<std::vector<std::string>> plans(size);
  std::vector<std::set<int64_t>> thresholds(size);
  std::vector<int> trials(size);
  testing::RunRanks(size, [&](int rank, int n, Store* store) {
    std::unique_ptr<CollectiveBackend> backend;
    std::unique_ptr<ControllerTransport> transport;
    auto spec = testing::LocalSpec(store, "ctrl/", rank, n);
    if (kind == "shm") {
      ASSERT_TRUE(cpu::ShmBackend::Create(spec, 1 << 16, &backend).ok());
      transport = std::make_unique<BackendControllerTransport>(backend.get());
    } else {
      std::shared_ptr<gloo::Context> ctx;
      ASSERT_TRUE(CreateGlooContext(spec, "", &ctx).ok());
      transport = std::make_unique<GlooControllerTransport>(ctx);
    }
    AutotuneOptions o = SmallOptions();
    o.warmup_trials = 0;
    o.steps_per_sample = 1;
    o.samples_per_trial = 1;
    o.max_trials = 1000;  // keeps changing values for the whole test
    ControllerOptions opts;
    opts.cache_capacity = cache_capacity;
    opts.tunables = std::make_shared<ParameterManager>(o, rank == 0, nullptr);
    opts.drives_autotune = true;
    std::vector<int> ranks(n);
    for (int r = 0; r < n; ++r) ranks[r] = r;
    Logger log;
    Controller c(transport.get(), opts, ranks, &log, nullptr);
    for (int step = 0; step < kSteps; ++step) {
      std::vector<Request> reqs;
      for (int i = 0; i < kTensors; ++i) {
        Request r;
        r.rank = rank;
        r.name = "grad." + std::to_string(i);
        r.shape = {(i + 1) * 1000000};  // 4..24 MB: fusion depends on the threshold
        reqs.push_back(r);
      }
      if (rank % 2) std::reverse(reqs.begin(), reqs.end());
      size_t answered = 0;
      std::string plan;
      for (int cycle = 0; cycle < 200 && answered < kTensors; ++cycle) {
        ResponseList l;
        ASSERT_TRUE(c.ComputeResponseList(cycle == 0 ? reqs : std::vector<Request>(), false, &l).ok());
        const int64_t t = opts.tunables->fusion_threshold_bytes();
        thresholds[rank].insert(t);
        plan += "|" + std::to_string(t) + ":";
        for (const auto& r : l.responses) {
          answered += r.names.size();
          for (const auto& nm : r.names) plan += nm + "+";
          plan += ";";
        }
      }
      ASSERT_EQ(answered, static_cast<size_t>(kTensors));
      plans[rank].push_back(plan);
    }
    trials[rank] = opts.tunables->trials_scored();
  });
  for (int r = 1; r < size; ++r) EXPECT_EQ(plans[r], plans[0]) << "rank " << r;
  EXPECT_GE(trials[0], 10);
  EXPECT_GE(thresholds[0].size(), 5u) << "the threshold should change while tuning";
}

class AutotuneControllerTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(AutotuneControllerTest, EveryRankFusesIdenticallyWhileTuning) {
  CheckIdenticalFusionWhileTuning(std::get<0>(GetParam()), std::get<1>(GetParam()), 1024);
}

TEST(AutotuneController, EveryRankFusesIdenticallyWithoutResponseCache) {
  CheckIdenticalFusionWhileTuning("gloo", 3, 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, AutotuneControllerTest,
                         ::testing::Combine(::testing::Values("gloo", "shm"), ::testing::Values(1, 2, 3)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
                           return std::get<0>(info.param) + "_np" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace hvda
