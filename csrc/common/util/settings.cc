#include "common/util/settings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace hvda {

namespace {

#define HVDA_SETTING_KIND_INT SettingKind::kInt
#define HVDA_SETTING_KIND_FLOAT SettingKind::kFloat
#define HVDA_SETTING_KIND_BOOL SettingKind::kBool
#define HVDA_SETTING_KIND_AUTO_BOOL SettingKind::kAutoBool
#define HVDA_SETTING_KIND_STRING SettingKind::kString

std::string Number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream out;
  out << v;
  return out.str();
}

bool Bounded(double v, bool low) { return low ? v > HVDA_UNBOUNDED_MIN : v < HVDA_UNBOUNDED_MAX; }

bool ParseBool(const std::string& v) {
  // Upstream parses booleans with strtol(v) > 0; accept true/yes too.
  if (v == "true" || v == "TRUE" || v == "True" || v == "yes") return true;
  return std::strtol(v.c_str(), nullptr, 10) > 0;
}


}  // namespace

const std::vector<SettingInfo>& SettingsTable() {
#define HVDA_SETTING_ROW_JOB(field, kind, env, def, lo, hi, up, doc) \
  {#field, env, SettingScope::kJob, HVDA_SETTING_KIND_##kind, def, lo, hi, up, doc},
#define HVDA_SETTING_ROW_CORE(field, kind, env, def, lo, hi, up, doc) \
  {#field, env, SettingScope::kCore, HVDA_SETTING_KIND_##kind, def, lo, hi, up, doc},
#define HVDA_SETTING_ROW_PYTHON(field, kind, env, def, lo, hi, up, doc) \
  {#field, env, SettingScope::kPython, HVDA_SETTING_KIND_##kind, def, lo, hi, up, doc},
  static const std::vector<SettingInfo> kTable = {
      HVDA_JOB_SETTINGS(HVDA_SETTING_ROW_JOB) HVDA_CORE_SETTINGS(HVDA_SETTING_ROW_CORE)
          HVDA_PYTHON_SETTINGS(HVDA_SETTING_ROW_PYTHON)};
#undef HVDA_SETTING_ROW_JOB
#undef HVDA_SETTING_ROW_CORE
#undef HVDA_SETTING_ROW_PYTHON
  return kTable;
}

const SettingInfo* FindSetting(const std::string& env) {
  for (const auto& s : SettingsTable())
    if (env == s.env) return &s;
  return nullptr;
}

std::string SettingInfo::RangeText() const {
  if (kind != SettingKind::kInt && kind != SettingKind::kFloat) return "";
  const bool has_min = Bounded(min, true), has_max = Bounded(max, false);
  if (has_min && has_max) return "[" + Number(min) + ", " + Number(max) + "]";
  if (has_min) return ">= " + Number(min);
  if (has_max) return "<= " + Number(max);
  return "";
}

Status ParseSetting(const SettingInfo& info, const std::string& text, SettingValue* out) {
  const std::string v = text.empty() ? std::string(info.default_value) : text;
  SettingValue value;
  value.s = v;
  switch (info.kind) {
    case SettingKind::kString:
      break;
    case SettingKind::kBool:
      value.b = ParseBool(v);
      break;
    case SettingKind::kAutoBool:
      if (!v.empty()) value.tri = ParseBool(v);
      break;
    case SettingKind::kInt:
    case SettingKind::kFloat: {
      const bool is_int = info.kind == SettingKind::kInt;
      double number = 0;
      try {
        size_t used = 0;
        if (is_int) {
          value.i = std::stoll(v, &used);
          number = static_cast<double>(value.i);
        } else {
          value.f = std::stod(v, &used);
          number = value.f;
        }
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        return Status::InvalidArgument(std::string(info.env) + "='" + v + "' is not a valid " +
                                       (is_int ? "integer" : "number") + " (" + info.doc + ")");
      }
      if (!(number >= info.min && number <= info.max)) {
        const std::string range = info.RangeText();
        const std::string how =
            range[0] == '[' ? "must be in " + range : "must be " + range;
        return Status::InvalidArgument(std::string(info.env) + "=" + v + " " + how + " (" +
                                       info.doc + "; default " + info.default_value + ").");
      }
      break;
    }
  }
  *out = std::move(value);
  return Status::OK();
}

namespace {

template <typename T>
T ValueOf(const SettingValue& v);
template <>
int64_t ValueOf(const SettingValue& v) { return v.i; }
template <>
double ValueOf(const SettingValue& v) { return v.f; }
template <>
bool ValueOf(const SettingValue& v) { return v.b; }
template <>
std::optional<bool> ValueOf(const SettingValue& v) { return v.tri; }
template <>
std::string ValueOf(const SettingValue& v) { return v.s; }

}  // namespace

Settings::Settings() {
  // The table's defaults always parse (tests/cpp/settings_test.cc).
#define HVDA_SETTING_DEFAULT(field, kind, env, def, lo, hi, up, doc)   \
  {                                                                    \
    SettingValue v;                                                    \
    (void)ParseSetting(*FindSetting(env), "", &v);                     \
    field = ValueOf<HVDA_SETTING_TYPE_##kind>(v);                      \
  }
  HVDA_CORE_SETTINGS(HVDA_SETTING_DEFAULT)
#undef HVDA_SETTING_DEFAULT
}

Status Settings::Set(const std::string& env, const std::string& text) {
  const SettingInfo* info = FindSetting(env);
  if (info == nullptr || info->scope != SettingScope::kCore)
    return Status::InvalidArgument("unknown core setting " + env);
  SettingValue v;
  HVDA_RETURN_IF_ERROR(ParseSetting(*info, text, &v));
#define HVDA_SETTING_ASSIGN(field, kind, name, def, lo, hi, up, doc) \
  if (env == name) field = ValueOf<HVDA_SETTING_TYPE_##kind>(v);
  HVDA_CORE_SETTINGS(HVDA_SETTING_ASSIGN)
#undef HVDA_SETTING_ASSIGN
  if (text.empty())
    set_by_user_.erase(env);
  else
    set_by_user_.insert(env);
  return Status::OK();
}

Status Settings::FromEnvironment(Settings* out) {
  Settings s;
  for (const auto& info : SettingsTable()) {
    if (info.scope != SettingScope::kCore) continue;
    const char* v = std::getenv(info.env);  // the one getenv of a core setting
    if (v != nullptr && v[0] != '\0') HVDA_RETURN_IF_ERROR(s.Set(info.env, v));
  }
  *out = std::move(s);
  return Status::OK();
}

// Upstream's selection values. Upstream's HOROVOD_GPU_OPERATIONS /
// HOROVOD_GPU_<OP> chose, at build time, which library runs GPU collectives
// (the seeds set NCCL). Here the accelerator's plugin always runs them with
// its collective library, which is what NCCL (or a vendor's NCCL-like
// library) means; host-staged choices are refused with a clear message
// instead of being silently ignored.
Status CheckGpuOperations(const Settings& settings) {
  const std::pair<const char*, const std::string*> vars[] = {
      {setting_env::gpu_operations, &settings.gpu_operations},
      {setting_env::gpu_allreduce, &settings.gpu_allreduce},
      {setting_env::gpu_allgather, &settings.gpu_allgather},
      {setting_env::gpu_broadcast, &settings.gpu_broadcast},
      {setting_env::gpu_alltoall, &settings.gpu_alltoall},
      {setting_env::gpu_reducescatter, &settings.gpu_reducescatter}};
  for (const auto& [var, value] : vars) {
    std::string v = *value;
    std::transform(v.begin(), v.end(), v.begin(), ::toupper);
    if (v.empty() || v == "NCCL" || v == "ECCL" || v == "RCCL" || v == "CCL") continue;
    return Status::InvalidArgument(
        std::string(var) + "=" + *value + " is not available: horovod_accel runs "
        "accelerator collectives with the device plugin's collective library (NCCL on CUDA, "
        "ECCL on GCU). Set " + var + "=NCCL (or unset it).");
  }
  return Status::OK();
}

bool IsUpstreamCpuOperationNotBuilt(const std::string& name) {
  return name == "ccl" || name == "nccl";
}

}  // namespace hvda
