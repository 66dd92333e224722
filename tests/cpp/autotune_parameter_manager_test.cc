// Autotune's ParameterManager (common/autotune/parameter_manager.h): warm-up,
// tuning, the CSV log and freezing on a synthetic job; fixed parameters; only
// the root tunes; settings from the configuration and their validation.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "autotune_test_util.h"
#include "common/autotune/parameter_manager.h"
#include "common/util/settings.h"
#include "message_test_util.h"

namespace hvda {
namespace {

using testing::MakeResponse;
using testing::SmallOptions;
using Clock = std::chrono::steady_clock;

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
    pm->Record({MakeResponse("grad", {1 << 18})}, t);
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
  Settings c;  // every setting at its default
  ASSERT_TRUE(c.Set("HOROVOD_AUTOTUNE", "1").ok());
  AutotuneOptions o = AutotuneOptionsFrom(c);
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.warmup_trials, 3);
  EXPECT_EQ(o.steps_per_sample, 10);
  EXPECT_EQ(o.max_trials, 20);
  EXPECT_DOUBLE_EQ(o.noise, 0.8);

  // The table's ranges refuse what autotune cannot use, when the value is read.
  Status st = c.Set("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "1.5");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE=1.5"), std::string::npos)
      << st.reason();
  EXPECT_NE(st.reason().find("must be in [0, 1]"), std::string::npos) << st.reason();
  st = c.Set("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "0");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE=0"), std::string::npos)
      << st.reason();
}

}  // namespace
}  // namespace hvda
