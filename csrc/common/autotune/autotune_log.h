// The autotuner's CSV log (HOROVOD_AUTOTUNE_LOG), in upstream Horovod's
// format: a header line, then one line per scored trial with the parameter
// values it ran with and its score, and a last line with the best values
// once tuning ends. Columns:
//   hierarchical_allreduce,hierarchical_allgather,torus_allreduce,
//   cache_enabled,cycle_time_ms,tensor_fusion_threshold,score
// (booleans as 0/1, tensor_fusion_threshold in MiB, score in bytes per
// microsecond). Written by global rank 0 only; each line is flushed.
#pragma once

#include <fstream>
#include <string>

namespace hvda {
namespace autotune {

struct LogRow {
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  bool torus_allreduce = false;
  bool cache_enabled = true;
  double cycle_time_ms = 0;
  double fusion_threshold_mib = 0;
  double score = 0;
};

class TrialLog {
 public:
  // Truncates `path` and writes the header. On failure *error says why and
  // the log stays closed (Write is then a no-op).
  bool Open(const std::string& path, std::string* error);
  void Write(const LogRow& row);
  bool is_open() const { return file_.is_open(); }

  static const char* Header();

 private:
  std::ofstream file_;
};

}  // namespace autotune
}  // namespace hvda
