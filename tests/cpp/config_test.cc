// Config (common/util/config.h): the settings table, reading it from the
// environment (defaults, unset vs empty, ints, floats, booleans), the snapshot
// semantics, and the errors for values that do not parse.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "common/util/config.h"

namespace hvda {
namespace {

// Every test runs with all registered settings unset; the process
// environment is restored afterwards, whatever the test set.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const ConfigOption& o : ConfigOptions()) {
      const char* v = std::getenv(o.env);
      saved_[o.env] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(o.env);
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
    Config c;
    Status st = Config::FromEnvironment(&c);
    unsetenv(env);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << env << "=" << value;
    return st.reason();
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(ConfigTest, TableIsConsistent) {
  std::set<std::string> seen;
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  for (const ConfigOption& o : ConfigOptions()) {
    EXPECT_TRUE(seen.insert(o.env).second) << o.env << " registered twice";
    EXPECT_NE(std::string(o.doc), "") << o.env;
    const std::string def = o.default_value;
    // Every non-empty default parses as the option's type.
    if (!def.empty() && o.type == ConfigType::kInt) EXPECT_NO_THROW(c.GetInt(o.env)) << o.env;
    if (!def.empty() && o.type == ConfigType::kFloat) EXPECT_NO_THROW(c.GetFloat(o.env)) << o.env;
    if (!def.empty()) EXPECT_TRUE(c.Set(o.env, def).ok()) << o.env;
  }
}

TEST_F(ConfigTest, DefaultsApplyWhenUnsetOrEmpty) {
  Env("HOROVOD_CYCLE_TIME", "");  // empty counts as unset
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.GetInt("HOROVOD_FUSION_THRESHOLD"), 134217728);
  EXPECT_EQ(c.GetFloat("HOROVOD_CYCLE_TIME"), 1.0);
  EXPECT_TRUE(c.GetBool("HOROVOD_INLINE_CYCLES"));
  EXPECT_FALSE(c.GetBool("HOROVOD_AUTOTUNE"));
  EXPECT_FALSE(c.GetBool("HOROVOD_HIERARCHICAL_ALLREDUCE"));  // empty default
  EXPECT_EQ(c.GetString("HOROVOD_CONTROLLER"), "gloo");
  EXPECT_EQ(c.GetString("_HOROVOD_SECRET_KEY"), "");
  EXPECT_EQ(c.GetInt("HOROVOD_GLOO_RENDEZVOUS_PORT"), -1);
  EXPECT_FALSE(c.IsSet("HOROVOD_CYCLE_TIME"));
  EXPECT_FALSE(c.IsSet("HOROVOD_FUSION_THRESHOLD"));
  EXPECT_FALSE(c.IsSet("NOT_A_SETTING"));
}

TEST_F(ConfigTest, ParsesIntsFloatsAndStrings) {
  Env("HOROVOD_FUSION_THRESHOLD", "0");
  Env("HOROVOD_RANK", "-3");
  Env("HOROVOD_CYCLE_TIME", "2.5");
  Env("HOROVOD_START_TIMEOUT", "1e2");
  Env("HOROVOD_CONTROLLER", "mpi");
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.GetInt("HOROVOD_FUSION_THRESHOLD"), 0);
  EXPECT_EQ(c.GetInt("HOROVOD_RANK"), -3);
  EXPECT_EQ(c.GetFloat("HOROVOD_CYCLE_TIME"), 2.5);
  EXPECT_EQ(c.GetFloat("HOROVOD_START_TIMEOUT"), 100.0);
  EXPECT_EQ(c.GetString("HOROVOD_CONTROLLER"), "mpi");
  EXPECT_TRUE(c.IsSet("HOROVOD_FUSION_THRESHOLD"));
  EXPECT_TRUE(c.IsSet("HOROVOD_CONTROLLER"));
  EXPECT_FALSE(c.IsSet("HOROVOD_SIZE"));
}

// Upstream's rule (strtol(v) > 0) plus true/yes; anything else is false and
// never an error.
TEST_F(ConfigTest, BooleansFollowUpstream) {
  const std::map<std::string, bool> cases = {
      {"1", true},      {"2", true},      {"true", true},   {"TRUE", true},  {"True", true},
      {"yes", true},    {"0", false},     {"-1", false},    {"false", false}, {"no", false},
      {"off", false},   {"3abc", true}};
  for (const auto& [value, want] : cases) {
    Env("HOROVOD_AUTOTUNE", value.c_str());
    Config c;
    ASSERT_TRUE(Config::FromEnvironment(&c).ok()) << value;
    EXPECT_EQ(c.GetBool("HOROVOD_AUTOTUNE"), want) << "HOROVOD_AUTOTUNE=" << value;
    EXPECT_TRUE(c.IsSet("HOROVOD_AUTOTUNE"));
  }
}

TEST_F(ConfigTest, BadNumbersNameTheVariableAndWhatItTakes) {
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

TEST_F(ConfigTest, IsASnapshotOfTheEnvironment) {
  Env("HOROVOD_CYCLE_TIME", "4");
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  Env("HOROVOD_CYCLE_TIME", "8");
  EXPECT_EQ(c.GetFloat("HOROVOD_CYCLE_TIME"), 4.0);
  Config copy = c;
  EXPECT_EQ(copy.GetFloat("HOROVOD_CYCLE_TIME"), 4.0);
  // A refused environment leaves the output untouched.
  Env("HOROVOD_SIZE", "two");
  EXPECT_FALSE(Config::FromEnvironment(&c).ok());
  EXPECT_EQ(c.GetFloat("HOROVOD_CYCLE_TIME"), 4.0);
}

TEST_F(ConfigTest, SetValidatesAndKnowsOnlyRegisteredSettings) {
  Config c;
  ASSERT_TRUE(Config::FromEnvironment(&c).ok());
  ASSERT_TRUE(c.Set("HOROVOD_CACHE_CAPACITY", "0").ok());
  EXPECT_EQ(c.GetInt("HOROVOD_CACHE_CAPACITY"), 0);
  EXPECT_TRUE(c.IsSet("HOROVOD_CACHE_CAPACITY"));
  Status bad = c.Set("HOROVOD_CACHE_CAPACITY", "many");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.reason().find("HOROVOD_CACHE_CAPACITY='many'"), std::string::npos) << bad.reason();
  EXPECT_EQ(c.GetInt("HOROVOD_CACHE_CAPACITY"), 0) << "a refused Set changes nothing";
  Status unknown = c.Set("HOROVOD_NO_SUCH_THING", "1");
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.reason().find("unknown setting HOROVOD_NO_SUCH_THING"), std::string::npos);
  EXPECT_THROW(c.GetString("HOROVOD_NO_SUCH_THING"), std::logic_error);
}

}  // namespace
}  // namespace hvda
