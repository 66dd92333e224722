// The one declarative registry of runtime settings: name, environment
// variable, default, type and a one-line doc. Nothing else in the core calls
// getenv for a setting; `horovodrun --check-build` and docs list this table.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace hvda {

enum class ConfigType { kInt, kFloat, kBool, kString };

struct ConfigOption {
  const char* env;       // e.g. "HOROVOD_FUSION_THRESHOLD"
  ConfigType type;
  const char* default_value;
  const char* doc;
};

// Every option the core reads. Order is the order docs print them in.
const std::vector<ConfigOption>& ConfigOptions();

// Values resolved once at init from the environment (a snapshot: later
// environment changes do not affect a running runtime). Copyable.
class Config {
 public:
  // Reads every registered option from the environment. Returns
  // InvalidArgument naming the variable when a value does not parse.
  static Status FromEnvironment(Config* out);

  int64_t GetInt(const std::string& env) const;
  double GetFloat(const std::string& env) const;
  bool GetBool(const std::string& env) const;
  const std::string& GetString(const std::string& env) const;
  // Whether the user set the variable (vs. the default applying).
  bool IsSet(const std::string& env) const;

  // For tests: override a value (string form, parsed as its type).
  Status Set(const std::string& env, const std::string& value);

 private:
  std::map<std::string, std::string> raw_;
  std::map<std::string, bool> set_by_user_;
};

// Upstream-compatible selection values (config.cc is the only place the core
// names vendor collective libraries).
// InvalidArgument unless every HOROVOD_GPU_OPERATIONS / HOROVOD_GPU_<OP> is
// unset or names the accelerator plugin's own collective library (upstream's
// value or a vendor's equivalent): the plugin always runs accelerator
// collectives.
Status CheckGpuOperations(const Config& config);
// Whether `name` (lower case) is a HOROVOD_CPU_OPERATIONS value upstream
// accepted whose backend this build does not have; selection skips it.
bool IsUpstreamCpuOperationNotBuilt(const std::string& name);

}  // namespace hvda
