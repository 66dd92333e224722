// Settings (common/util/settings.h): the one table, the typed struct derived
// from it, reading it from the environment (defaults, unset vs empty, ints,
// floats, booleans, unset-able booleans), ranges, the snapshot semantics, and
// the errors for values that do not parse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/util/settings.h"

namespace hvda {
namespace {

// Every test runs with all settings unset; the process environment is
// restored afterwards, whatever the test set.
class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const SettingInfo& s : SettingsTable()) {
      const char* v = std::getenv(s.env);
      saved_[s.env] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(s.env);
    }
  }
  void TearDown() override {
    for (const auto& [env, value] : saved_) {
      if (value)
        setenv(env.c_str(), value->c_str(), 1);
      else
        unsetenv(env.c_str());
    }
  }
  static void Env(const char* env, const char* value) { setenv(env, value, 1); }
  // The reason FromEnvironment gives for `env`=`value` (fails the test if it
  // is accepted).
  static std::string RefusalOf(const char* env, const char* value) {
    Env(env, value);
    Settings s;
    Status st = Settings::FromEnvironment(&s);
    unsetenv(env);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << env << "=" << value;
    return st.reason();
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(SettingsTest, TableIsConsistent) {
  std::set<std::string> seen;
  for (const SettingInfo& s : SettingsTable()) {
    EXPECT_TRUE(seen.insert(s.env).second) << s.env << " listed twice";
    EXPECT_NE(std::string(s.doc), "") << s.env;
    // Every default parses as the setting's kind and lies in its range.
    SettingValue v;
    EXPECT_TRUE(ParseSetting(s, "", &v).ok()) << s.env;
    EXPECT_EQ(FindSetting(s.env), &s);
    const std::string up = s.upstream;
    EXPECT_TRUE(up.empty() || up.rfind("HOROVOD_", 0) == 0) << s.env;
  }
  EXPECT_EQ(FindSetting("HOROVOD_NO_SUCH_THING"), nullptr);
  // The name constants are the table's.
  EXPECT_STREQ(setting_env::fusion_threshold, "HOROVOD_FUSION_THRESHOLD");
  EXPECT_STREQ(setting_env::rank, "HOROVOD_RANK");
  EXPECT_EQ(FindSetting(setting_env::controller)->scope, SettingScope::kCore);
  EXPECT_EQ(FindSetting(setting_env::store_port)->scope, SettingScope::kJob);
}

TEST_F(SettingsTest, DefaultsApplyWhenUnsetOrEmpty) {
  Env("HOROVOD_CYCLE_TIME", "");  // empty counts as unset
  Settings s;
  ASSERT_TRUE(Settings::FromEnvironment(&s).ok());
  EXPECT_EQ(s.fusion_threshold, 134217728);
  EXPECT_EQ(s.cycle_time_ms, 1.0);
  EXPECT_TRUE(s.inline_cycles);
  EXPECT_FALSE(s.autotune);
  EXPECT_EQ(s.hierarchical_allreduce, std::nullopt);  // unset: the core decides
  EXPECT_EQ(s.controller, "gloo");
  EXPECT_EQ(s.shm_segment_bytes, 4194304);
  EXPECT_FALSE(s.IsSet("HOROVOD_CYCLE_TIME"));
  EXPECT_FALSE(s.IsSet("HOROVOD_FUSION_THRESHOLD"));
  EXPECT_FALSE(s.IsSet("NOT_A_SETTING"));
  // A default-constructed Settings is the same as an empty environment.
  Settings d;
  EXPECT_EQ(d.fusion_threshold, s.fusion_threshold);
  EXPECT_EQ(d.controller, s.controller);
  EXPECT_EQ(d.autotune_noise, s.autotune_noise);
}

TEST_F(SettingsTest, ParsesIntsFloatsStringsAndUnsetableBooleans) {
  Env("HOROVOD_FUSION_THRESHOLD", "0");
  Env("HOROVOD_CYCLE_TIME", "2.5");
  Env("HOROVOD_START_TIMEOUT", "1e2");
  Env("HOROVOD_CONTROLLER", "mpi");
  Env("HOROVOD_HIERARCHICAL_ALLGATHER", "0");
  Settings s;
  ASSERT_TRUE(Settings::FromEnvironment(&s).ok());
  EXPECT_EQ(s.fusion_threshold, 0);
  EXPECT_EQ(s.cycle_time_ms, 2.5);
  EXPECT_EQ(s.start_timeout, 100.0);
  EXPECT_EQ(s.controller, "mpi");
  EXPECT_EQ(s.hierarchical_allgather, std::optional<bool>(false));
  EXPECT_TRUE(s.IsSet("HOROVOD_FUSION_THRESHOLD"));
  EXPECT_TRUE(s.IsSet("HOROVOD_CONTROLLER"));
  EXPECT_FALSE(s.IsSet("HOROVOD_CACHE_CAPACITY"));
  // Job settings parse too (for the Python edge), but are no Settings field.
  SettingValue rank;
  ASSERT_TRUE(ParseSetting(*FindSetting("HOROVOD_RANK"), "-3", &rank).ok());
  EXPECT_EQ(rank.i, -3);
  EXPECT_EQ(s.Set("HOROVOD_RANK", "1").code(), StatusCode::kInvalidArgument);
}

// Upstream's rule (strtol(v) > 0) plus true/yes; anything else is false and
// never an error.
TEST_F(SettingsTest, BooleansFollowUpstream) {
  const std::map<std::string, bool> cases = {
      {"1", true},      {"2", true},      {"true", true},   {"TRUE", true},  {"True", true},
      {"yes", true},    {"0", false},     {"-1", false},    {"false", false}, {"no", false},
      {"off", false},   {"3abc", true}};
  for (const auto& [value, want] : cases) {
    Env("HOROVOD_AUTOTUNE", value.c_str());
    Settings s;
    ASSERT_TRUE(Settings::FromEnvironment(&s).ok()) << value;
    EXPECT_EQ(s.autotune, want) << "HOROVOD_AUTOTUNE=" << value;
    EXPECT_TRUE(s.IsSet("HOROVOD_AUTOTUNE"));
  }
}

TEST_F(SettingsTest, BadNumbersNameTheVariableAndWhatItTakes) {
  for (const char* bad : {"12abc", "1.5", " ", "big", "99999999999999999999"}) {
    const std::string why = RefusalOf("HOROVOD_FUSION_THRESHOLD", bad);
    EXPECT_NE(why.find(std::string("HOROVOD_FUSION_THRESHOLD='") + bad + "'"), std::string::npos)
        << why;
    EXPECT_NE(why.find("is not a valid integer"), std::string::npos) << why;
    EXPECT_NE(why.find("fusion buffer bytes"), std::string::npos) << "the doc line: " << why;
  }
  for (const char* bad : {"fast", "1.5ms", "--1"}) {
    const std::string why = RefusalOf("HOROVOD_CYCLE_TIME", bad);
    EXPECT_NE(why.find(std::string("HOROVOD_CYCLE_TIME='") + bad + "' is not a valid number"),
              std::string::npos)
        << why;
  }
}

TEST_F(SettingsTest, ValuesOutOfRangeNameTheRangeAndTheDefault) {
  std::string why = RefusalOf("HOROVOD_SHM_SEGMENT_BYTES", "100");
  EXPECT_NE(why.find("HOROVOD_SHM_SEGMENT_BYTES=100 must be >= 4096"), std::string::npos) << why;
  EXPECT_NE(why.find("default 4194304"), std::string::npos) << why;
  why = RefusalOf("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "5000");
  EXPECT_NE(why.find("must be in [1, 1000]"), std::string::npos) << why;
  why = RefusalOf("HOROVOD_FUSION_THRESHOLD", "-1");
  EXPECT_NE(why.find("HOROVOD_FUSION_THRESHOLD=-1 must be >= 0"), std::string::npos) << why;
  // The ends of a range are in it.
  Env("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "1");
  Env("HOROVOD_SHM_SEGMENT_BYTES", "4096");
  Settings s;
  EXPECT_TRUE(Settings::FromEnvironment(&s).ok());
  EXPECT_EQ(FindSetting("HOROVOD_SHM_SEGMENT_BYTES")->RangeText(), ">= 4096");
  EXPECT_EQ(FindSetting("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE")->RangeText(), "[0, 1]");
  EXPECT_EQ(FindSetting("HOROVOD_CONTROLLER")->RangeText(), "");
}

TEST_F(SettingsTest, IsASnapshotOfTheEnvironment) {
  Env("HOROVOD_CYCLE_TIME", "4");
  Settings s;
  ASSERT_TRUE(Settings::FromEnvironment(&s).ok());
  Env("HOROVOD_CYCLE_TIME", "8");
  EXPECT_EQ(s.cycle_time_ms, 4.0);
  Settings copy = s;
  EXPECT_EQ(copy.cycle_time_ms, 4.0);
  EXPECT_TRUE(copy.IsSet("HOROVOD_CYCLE_TIME"));
  // A refused environment leaves the output untouched.
  Env("HOROVOD_CACHE_CAPACITY", "two");
  EXPECT_FALSE(Settings::FromEnvironment(&s).ok());
  EXPECT_EQ(s.cycle_time_ms, 4.0);
}

TEST_F(SettingsTest, SetValidatesAndKnowsOnlyCoreSettings) {
  Settings s;
  ASSERT_TRUE(s.Set("HOROVOD_CACHE_CAPACITY", "0").ok());
  EXPECT_EQ(s.cache_capacity, 0);
  EXPECT_TRUE(s.IsSet("HOROVOD_CACHE_CAPACITY"));
  Status bad = s.Set("HOROVOD_CACHE_CAPACITY", "many");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.reason().find("HOROVOD_CACHE_CAPACITY='many'"), std::string::npos) << bad.reason();
  EXPECT_EQ(s.cache_capacity, 0) << "a refused Set changes nothing";
  Status unknown = s.Set("HOROVOD_NO_SUCH_THING", "1");
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.reason().find("unknown core setting HOROVOD_NO_SUCH_THING"), std::string::npos);
  // Setting back to empty restores the default and the "unset" state.
  ASSERT_TRUE(s.Set("HOROVOD_CACHE_CAPACITY", "").ok());
  EXPECT_EQ(s.cache_capacity, 1024);
  EXPECT_FALSE(s.IsSet("HOROVOD_CACHE_CAPACITY"));
}

TEST_F(SettingsTest, GpuOperationsAcceptOnlyThePluginsLibrary) {
  Settings s;
  EXPECT_TRUE(CheckGpuOperations(s).ok());
  ASSERT_TRUE(s.Set("HOROVOD_GPU_ALLREDUCE", "nccl").ok());
  EXPECT_TRUE(CheckGpuOperations(s).ok());
  ASSERT_TRUE(s.Set("HOROVOD_GPU_BROADCAST", "MPI").ok());
  Status st = CheckGpuOperations(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("HOROVOD_GPU_BROADCAST=MPI is not available"), std::string::npos)
      << st.reason();
}

}  // namespace
}  // namespace hvda
