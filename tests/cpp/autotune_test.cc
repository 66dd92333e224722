// Autotune: the Gaussian process, expected improvement, the Bayesian
// optimiser on synthetic scores, the score sampler, the ParameterManager's
// warm-up / freeze / fixed-parameter logic and its CSV log, and the
// synchronisation of tuned values through real controllers (every rank
// fuses identically in every cycle: NOTE [Autotune sync]).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <fstream>
#include <random>
#include <sstream>

#include "common/autotune/bayesian_optimization.h"
#include "common/autotune/gaussian_process.h"
#include "common/autotune/linear_algebra.h"
#include "common/autotune/parameter_manager.h"
#include "common/autotune/score_sampler.h"
#include "common/controller.h"
#include "common/transport/backend_controller_transport.h"
#include "common/transport/gloo_context.h"
#include "common/transport/gloo_controller_transport.h"
#include "devices/cpu/shm_backend.h"
#include "multi_rank_harness.h"

namespace hvda {
namespace {

using autotune::BayesianOptimization;
using autotune::GaussianProcess;
using autotune::Point;
using Clock = std::chrono::steady_clock;

constexpr double kPi = 3.14159265358979323846;

TEST(AutotuneLinearAlgebra, CholeskySolvesSpdSystem) {
  // A = M M^T + I for a fixed M is symmetric positive definite.
  const int n = 4;
  std::vector<double> m = {1, 2, 0, 1, 0, 1, 3, 1, 2, 0, 1, 0, 1, 1, 1, 2};
  std::vector<double> a(n * n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) a[i * n + j] += m[i * n + k] * m[j * n + k];
      if (i == j) a[i * n + j] += 1;
    }
  std::vector<double> x_true = {1, -2, 0.5, 3}, b(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) b[i] += a[i * n + j] * x_true[j];
  std::vector<double> l = a;
  ASSERT_TRUE(autotune::Cholesky(&l, n));
  autotune::CholeskySolve(l, n, &b);
  for (int i = 0; i < n; ++i) EXPECT_NEAR(b[i], x_true[i], 1e-9);
  std::vector<double> not_spd = {1, 2, 2, 1};
  EXPECT_FALSE(autotune::Cholesky(&not_spd, 2));
}

TEST(AutotuneGaussianProcess, Fits1DFunction) {
  auto f = [](double x) { return 10 + 3 * std::sin(2 * kPi * x); };
  std::vector<Point> x;
  std::vector<double> y;
  for (int i = 0; i <= 10; ++i) {
    x.push_back({i / 10.0});
    y.push_back(f(i / 10.0));
  }
  GaussianProcess gp(0.0);
  gp.Fit(x, y);
  for (double p : {0.05, 0.33, 0.52, 0.77, 0.95}) {
    double m, s;
    gp.Predict({p}, &m, &s);
    EXPECT_NEAR(m, f(p), 0.15) << "at " << p;
    EXPECT_LT(s, 0.5) << "at " << p;
  }
  // Uncertainty grows away from the data.
  GaussianProcess sparse(0.0);
  sparse.Fit({{0.1}, {0.2}}, {1.0, 2.0});
  double m_near, s_near, m_far, s_far;
  sparse.Predict({0.15}, &m_near, &s_near);
  sparse.Predict({0.9}, &m_far, &s_far);
  EXPECT_GT(s_far, 2 * s_near);
}

TEST(AutotuneGaussianProcess, Fits2DFunctionWithNoise) {
  auto f = [](double a, double b) {
    return 100 * std::exp(-((a - 0.3) * (a - 0.3) + (b - 0.7) * (b - 0.7)) / 0.2);
  };
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 1.0);
  std::vector<Point> x;
  std::vector<double> y;
  for (int i = 0; i <= 5; ++i)
    for (int j = 0; j <= 5; ++j) {
      x.push_back({i / 5.0, j / 5.0});
      y.push_back(f(i / 5.0, j / 5.0) + noise(rng));
    }
  GaussianProcess gp(0.1);
  gp.Fit(x, y);
  std::uniform_real_distribution<double> u(0, 1);
  for (int k = 0; k < 20; ++k) {
    const double a = u(rng), b = u(rng);
    double m, s;
    gp.Predict({a, b}, &m, &s);
    EXPECT_NEAR(m, f(a, b), 6.0) << "at (" << a << ", " << b << ")";
  }
}

TEST(AutotuneBayesianOptimization, ExpectedImprovementPrefersBestAndUnexplored) {
  BayesianOptimization bo(1, 0.1);
  bo.AddSample({0.1}, 1.0);
  bo.AddSample({0.2}, 1.1);
  bo.AddSample({0.3}, 1.0);
  bo.AddSample({0.6}, 5.0);
  const double explored_low = bo.ExpectedImprovement({0.2});
  EXPECT_GT(bo.ExpectedImprovement({0.65}), explored_low) << "near the best";
  EXPECT_GT(bo.ExpectedImprovement({0.95}), explored_low) << "unexplored";
  EXPECT_GE(explored_low, 0.0);
  EXPECT_EQ(bo.BestIndex(), 3);
  const Point next = bo.NextSample();
  EXPECT_GT(next[0], 0.4) << "the next sample should not be in the explored low region";
}

TEST(AutotuneBayesianOptimization, FindsMaximumOfSmoothNoisyScore) {
  // Peak 100 at (0.7, 0.25); noise ~1% of the peak.
  auto f = [](const Point& p) {
    return 100 - 150 * ((p[0] - 0.7) * (p[0] - 0.7) + (p[1] - 0.25) * (p[1] - 0.25));
  };
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1.0);
  BayesianOptimization bo(2, 0.2);
  Point x = {0.5, 0.5};
  for (int i = 0; i < 20; ++i) {
    bo.AddSample(x, f(x) + noise(rng));
    x = bo.NextSample();
    ASSERT_EQ(x.size(), 2u);
    ASSERT_TRUE(x[0] >= 0 && x[0] <= 1 && x[1] >= 0 && x[1] <= 1);
  }
  // Replay to find the chosen best point: BestIndex refers to AddSample order.
  std::mt19937 rng2(7);
  std::normal_distribution<double> noise2(0, 1.0);
  BayesianOptimization replay(2, 0.2);
  std::vector<Point> tried;
  x = {0.5, 0.5};
  for (int i = 0; i < 20; ++i) {
    tried.push_back(x);
    replay.AddSample(x, f(x) + noise2(rng2));
    x = replay.NextSample();
  }
  const Point best = tried[replay.BestIndex()];
  EXPECT_GT(f(best), 97.0) << "best (" << best[0] << ", " << best[1] << ")";
}

Response Data(const std::string& name, int64_t elements) {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.dtype = DataType::kFloat32;
  r.names = {name};
  r.shapes = {{elements}};
  return r;
}

TEST(AutotuneScoreSampler, MedianOfSamplesOfSteps) {
  // 2 steps per sample, 3 samples per trial; one 4000-byte tensor per step,
  // one step per 10 us except one slow step, which the median ignores.
  autotune::ScoreSampler s(2, 3);
  Clock::time_point t{};
  double score = -1;
  int steps = 0;
  bool done = false;
  Response join;
  join.type = ResponseType::kJoin;
  join.names = {"join"};
  EXPECT_FALSE(s.Add({join}, t, &score)) << "joins do not count";
  while (!done && steps < 100) {
    done = s.Add({Data("g", 1000)}, t, &score);
    ++steps;
    t += std::chrono::microseconds(steps == 2 ? 1000 : 10);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(steps, 3 * 2 + 1) << "the trial ends when the step after its last sample begins";
  EXPECT_NEAR(score, 8000.0 / 20.0, 1e-9) << "bytes per microsecond, median of 3";
}

AutotuneOptions SmallOptions() {
  AutotuneOptions o;
  o.enabled = true;
  o.warmup_trials = 2;
  o.steps_per_sample = 2;
  o.samples_per_trial = 3;
  o.max_trials = 10;
  o.noise = 0.2;
  o.fusion_threshold_bytes = 128 << 20;
  o.cycle_time_ms = 1;
  return o;
}

// Runs a synthetic training job against a manager (as global rank 0 and
// the only rank): each step decides one 1 MiB tensor and takes
// 1 MiB / throughput(fusion MiB, cycle ms). Updates are applied at once
// (the broadcast of a one-rank job). Returns the (fusion, cycle) values in
// effect at each step.
std::vector<TunedParameters> RunSynthetic(ParameterManager* pm, int steps,
                                          double (*throughput)(double, double)) {
  std::vector<TunedParameters> seen;
  Clock::time_point t{};
  for (int i = 0; i < steps; ++i) {
    if (pm->HasUpdate()) pm->Apply(pm->TakeUpdate());
    const double mib = pm->fusion_threshold_bytes() / 1048576.0, ms = pm->cycle_time_ms();
    seen.push_back({pm->fusion_threshold_bytes(), ms});
    pm->Record({Data("grad", 1 << 18)}, t);
    t += std::chrono::microseconds(static_cast<int64_t>(1048576.0 / throughput(mib, ms)));
  }
  return seen;
}

double Peaked(double mib, double ms) {  // bytes/us, best at 40 MiB and 6 ms
  return 1000 - 0.2 * (mib - 40) * (mib - 40) - 2.0 * (ms - 6) * (ms - 6);
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(AutotuneParameterManager, WarmsUpTunesLogsAndFreezes) {
  const std::string log = ::testing::TempDir() + "autotune_test_log.csv";
  AutotuneOptions o = SmallOptions();
  o.log_path = log;
  ParameterManager pm(o, /*root=*/true, nullptr);
  ASSERT_TRUE(pm.tuning());
  // A trial takes 3 * 2 steps (+1 that starts the next); 2 warm-up + 10 scored.
  const int per_trial = 3 * 2;
  auto seen = RunSynthetic(&pm, per_trial * (2 + 10) + 50, Peaked);
  EXPECT_FALSE(pm.tuning());
  EXPECT_EQ(pm.trials_scored(), 10);
  // Warm-up keeps the start values.
  for (int i = 0; i < per_trial * 2; ++i) {
    EXPECT_EQ(seen[i].fusion_threshold_bytes, 128 << 20) << "step " << i;
    EXPECT_EQ(seen[i].cycle_time_ms, 1.0) << "step " << i;
  }
  // Values change while tuning, then stay frozen at the best.
  std::set<std::pair<int64_t, double>> distinct;
  for (const auto& p : seen) distinct.insert({p.fusion_threshold_bytes, p.cycle_time_ms});
  EXPECT_GE(distinct.size(), 8u);
  const TunedParameters last = seen.back();
  for (size_t i = seen.size() - 20; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].fusion_threshold_bytes, last.fusion_threshold_bytes);
    EXPECT_EQ(seen[i].cycle_time_ms, last.cycle_time_ms);
  }
  EXPECT_GT(Peaked(last.fusion_threshold_bytes / 1048576.0, last.cycle_time_ms), 700)
      << "kept " << last.fusion_threshold_bytes << " B, " << last.cycle_time_ms << " ms";

  auto lines = ReadLines(log);
  ASSERT_EQ(lines.size(), 1u + 10 + 1) << "header, one row per scored trial, the best";
  EXPECT_EQ(lines[0],
            "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
            "cycle_time_ms,tensor_fusion_threshold,score");
  EXPECT_EQ(lines[1].rfind("0,0,0,1,1,128,", 0), 0u) << "first scored trial: start values: "
                                                     << lines[1];
  // The last row repeats the best trial's row.
  EXPECT_NE(std::find(lines.begin() + 1, lines.end() - 1, lines.back()), lines.end() - 1);
  std::remove(log.c_str());
}

TEST(AutotuneParameterManager, FixedParametersAreNotTuned) {
  AutotuneOptions o = SmallOptions();
  o.fusion_fixed = true;
  o.fusion_threshold_bytes = 8 << 20;
  ParameterManager pm(o, true, nullptr);
  auto seen = RunSynthetic(&pm, 6 * 12 + 10, Peaked);
  std::set<double> cycles;
  for (const auto& p : seen) {
    EXPECT_EQ(p.fusion_threshold_bytes, 8 << 20);
    cycles.insert(p.cycle_time_ms);
  }
  EXPECT_GE(cycles.size(), 4u) << "the cycle time is still tuned";
  EXPECT_FALSE(pm.tuning());

  o.cycle_fixed = true;  // both fixed: nothing to tune
  ParameterManager none(o, true, nullptr);
  EXPECT_FALSE(none.tuning());
  seen = RunSynthetic(&none, 100, Peaked);
  EXPECT_FALSE(none.HasUpdate());
  EXPECT_EQ(seen.back().fusion_threshold_bytes, 8 << 20);
  EXPECT_EQ(seen.back().cycle_time_ms, 1.0);
}

TEST(AutotuneParameterManager, OnlyRootTunesAndOffMeansConfiguredValues) {
  AutotuneOptions o = SmallOptions();
  ParameterManager worker(o, /*root=*/false, nullptr);
  EXPECT_FALSE(worker.tuning());
  RunSynthetic(&worker, 200, Peaked);
  EXPECT_FALSE(worker.HasUpdate());
  worker.Apply({4 << 20, 7.5});  // what the root broadcast
  EXPECT_EQ(worker.fusion_threshold_bytes(), 4 << 20);
  EXPECT_EQ(worker.cycle_time_ms(), 7.5);

  o.enabled = false;
  o.fusion_threshold_bytes = 1234;
  o.cycle_time_ms = 3.5;
  ParameterManager off(o, true, nullptr);
  EXPECT_FALSE(off.tuning());
  RunSynthetic(&off, 200, Peaked);
  EXPECT_FALSE(off.HasUpdate());
  EXPECT_EQ(off.fusion_threshold_bytes(), 1234);
  EXPECT_EQ(off.cycle_time_ms(), 3.5);
}

TEST(AutotuneParameterManager, SettingsAreValidated) {
  Config c;  // every registered option at its default
  for (const auto& opt : ConfigOptions()) ASSERT_TRUE(c.Set(opt.env, opt.default_value).ok());
  AutotuneOptions o;
  ASSERT_TRUE(c.Set("HOROVOD_AUTOTUNE", "1").ok());
  ASSERT_TRUE(AutotuneOptionsFromConfig(c, &o).ok());
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.warmup_trials, 3);
  EXPECT_EQ(o.steps_per_sample, 10);
  EXPECT_EQ(o.max_trials, 20);
  EXPECT_DOUBLE_EQ(o.noise, 0.8);

  ASSERT_TRUE(c.Set("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "1.5").ok());
  Status st = AutotuneOptionsFromConfig(c, &o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE=1.5"), std::string::npos)
      << st.reason();
  ASSERT_TRUE(c.Set("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.5").ok());
  ASSERT_TRUE(c.Set("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "0").ok());
  st = AutotuneOptionsFromConfig(c, &o);
  EXPECT_NE(st.reason().find("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE=0"), std::string::npos)
      << st.reason();
}

TEST(AutotuneMessage, ResponseListCarriesParameters) {
  ResponseList l;
  l.responses.push_back(Data("a", 3));
  l.has_params = true;
  l.params = {5 << 20, 12.25};
  ResponseList back;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  EXPECT_TRUE(back.has_params);
  EXPECT_EQ(back.params.fusion_threshold_bytes, 5 << 20);
  EXPECT_EQ(back.params.cycle_time_ms, 12.25);
  ASSERT_EQ(back.responses.size(), 1u);
  EXPECT_EQ(back.responses[0].names[0], "a");
  l.has_params = false;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  EXPECT_FALSE(back.has_params);
}

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
