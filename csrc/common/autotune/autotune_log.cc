#include "common/autotune/autotune_log.h"

#include <cerrno>
#include <cstring>

namespace hvda {
namespace autotune {

const char* TrialLog::Header() {
  return "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
         "cycle_time_ms,tensor_fusion_threshold,score";
}

bool TrialLog::Open(const std::string& path, std::string* error) {
  file_.open(path, std::ios::out | std::ios::trunc);
  if (!file_.is_open()) {
    *error = std::strerror(errno);
    return false;
  }
  file_ << Header() << std::endl;
  return true;
}

void TrialLog::Write(const LogRow& r) {
  if (!file_.is_open()) return;
  file_ << r.hierarchical_allreduce << "," << r.hierarchical_allgather << ","
        << r.torus_allreduce << "," << r.cache_enabled << "," << r.cycle_time_ms << ","
        << r.fusion_threshold_mib << "," << r.score << std::endl;
}

}  // namespace autotune
}  // namespace hvda
