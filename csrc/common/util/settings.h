// Settings: the core's settings as typed fields, derived from the one table
// (settings_table.h), and the table itself as data (for the Python view,
// docs and `horovodrun --check-build`).
//
// A Settings is a value: read once per init() (FromEnvironment, called by
// the binding: the edge) and then owned by that job generation; the core
// never calls getenv for a setting. The names of the variables are in
// setting_env:: (for messages that tell the user what to change).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/util/settings_table.h"
#include "common/util/status.h"

namespace hvda {

enum class SettingKind { kInt, kFloat, kBool, kAutoBool, kString };
enum class SettingScope { kJob, kCore, kPython };  // HVDA_{JOB,CORE,PYTHON}_SETTINGS

// One row of the table.
struct SettingInfo {
  const char* field;  // the X-macro's field name (Settings' member; JobSpec's for job rows)
  const char* env;
  SettingScope scope;
  SettingKind kind;
  const char* default_value;
  double min, max;  // INT/FLOAT only; HVDA_UNBOUNDED_MIN/MAX: none
  const char* upstream;  // "" for horovod_accel's own
  const char* doc;
  // "any", ">= 0", "[1, 1000]", "-1 .. 65535" style text for docs.
  std::string RangeText() const;
};

// Every setting: job, core, then Python ones, each in the table's order.
const std::vector<SettingInfo>& SettingsTable();
// The row of `env`; nullptr when it is not a setting.
const SettingInfo* FindSetting(const std::string& env);

// A setting's value, parsed: the member of its kind is filled.
struct SettingValue {
  int64_t i = 0;                 // INT
  double f = 0;                  // FLOAT
  bool b = false;                // BOOL
  std::optional<bool> tri;       // AUTO_BOOL (nullopt: unset)
  std::string s;                 // STRING (and the text of any kind)
};

// Parses `text` as the setting's kind and checks its range; empty text
// means unset (the table's default applies). InvalidArgument names the
// variable, the value, what it takes and the doc line. Booleans follow
// upstream (strtol(v) > 0, plus true/yes) and never fail.
Status ParseSetting(const SettingInfo& info, const std::string& text, SettingValue* out);

// Names of the environment variables, for messages:
// setting_env::fusion_threshold == "HOROVOD_FUSION_THRESHOLD".
namespace setting_env {
#define HVDA_SETTING_NAME(field, kind, env, def, lo, hi, up, doc) \
  inline constexpr const char* field = env;
HVDA_JOB_SETTINGS(HVDA_SETTING_NAME)
HVDA_CORE_SETTINGS(HVDA_SETTING_NAME)
HVDA_PYTHON_SETTINGS(HVDA_SETTING_NAME)
#undef HVDA_SETTING_NAME
}  // namespace setting_env

#define HVDA_SETTING_TYPE_INT int64_t
#define HVDA_SETTING_TYPE_FLOAT double
#define HVDA_SETTING_TYPE_BOOL bool
#define HVDA_SETTING_TYPE_AUTO_BOOL std::optional<bool>
#define HVDA_SETTING_TYPE_STRING std::string

// The core's settings (HVDA_CORE_SETTINGS), at their defaults when default-
// constructed. Copyable.
struct Settings {
#define HVDA_SETTING_FIELD(field, kind, env, def, lo, hi, up, doc) HVDA_SETTING_TYPE_##kind field;
  HVDA_CORE_SETTINGS(HVDA_SETTING_FIELD)
#undef HVDA_SETTING_FIELD

  Settings();  // every field at its table default
  // Reads every core setting from the process environment (a snapshot:
  // later changes do not affect it). InvalidArgument names the variable when
  // a value does not parse or is out of range.
  static Status FromEnvironment(Settings* out);
  // Sets one core setting from text, as if the variable were `text` (tests,
  // and callers that hold values rather than an environment).
  Status Set(const std::string& env, const std::string& text);
  // Whether the user set the variable (vs. the default applying).
  bool IsSet(const std::string& env) const { return set_by_user_.count(env) != 0; }

 private:
  std::set<std::string> set_by_user_;
};

// Upstream-compatible selection values (the only place the core names vendor
// collective libraries). InvalidArgument unless every HOROVOD_GPU_OPERATIONS
// / HOROVOD_GPU_<OP> is unset or names the accelerator plugin's own
// collective library (upstream's value or a vendor's equivalent): the plugin
// always runs accelerator collectives.
Status CheckGpuOperations(const Settings& settings);
// Whether `name` (lower case) is a HOROVOD_CPU_OPERATIONS value upstream
// accepted whose backend this build does not have; selection skips it.
bool IsUpstreamCpuOperationNotBuilt(const std::string& name);

}  // namespace hvda
