// One communicator of this process: its rank, segment and channels, async
// error, abort flag and PreMulSum ops. Shared (shared_ptr) by the handle
// table and by the stream operations queued on it; the segment is unmapped
// when the last of them lets go. Thread-safe, except links(), which only the
// stream operation running the communicator uses.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "emu_core.h"
#include "plan.h"
#include "reduce.h"
#include "shm_segment.h"

namespace hvda_emu {

class Comm {
 public:
  Comm(CclApi api, int rank, std::unique_ptr<ShmSegment> segment);
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  CclApi api() const { return api_; }
  int rank() const { return links_.rank; }
  int nranks() const { return links_.nranks; }
  const Links& links() const { return links_; }

  // After Abort, running and later operations on the communicator finish at
  // once (their results are undefined).
  void Abort() { aborted_.store(true); }
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  int async_error() const { return async_error_.load(); }

  // Checks that the peers' processes live (at most every 100 ms; cheap in
  // between). A gone peer sets the async error to kCclRemote, once, and says
  // so on stderr; operations keep waiting (as on hardware) until Abort.
  void CheckPeers();

  // Registers a PreMulSum reduction; *op is its number (from 5 up).
  int AddPreMulSum(const Reduction& red, int* op);
  bool RemoveOp(int op);
  // The reduction op means for dtype: false for an invalid dtype, an unknown
  // op or a PreMulSum made for another dtype.
  bool ResolveOp(int op, int dtype, Reduction* out) const;

 private:
  const CclApi api_;
  std::unique_ptr<ShmSegment> segment_;
  Links links_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> async_error_{kCclSuccess};

  std::mutex check_mu_;  // guards next_check_
  std::chrono::steady_clock::time_point next_check_{};
  mutable std::mutex ops_mu_;  // guards premul_ops_, next_op_
  std::map<int, Reduction> premul_ops_;
  int next_op_ = kNumBuiltinOps;
};

}  // namespace hvda_emu
