// EngineOp: one Horovod collective as an asynchronous operation of MXNet's
// dependency engine, from hvda_mx_push until the engine's completion
// callback.
//
// Lifetime and threads:
// - Create() runs on the pushing (Python) thread: it validates the NDArrays
//   and takes its own references to them (shallow copies, freed by the
//   destructor), so the caller's handles may die at once.
// - Push() hands the op to MXNet, which owns it from then on (also when the
//   push fails): MXNet deletes it through its deleter when the engine
//   operation is destroyed, i.e. inside the completion callback, or without
//   running it if the engine skips it.
// - Run() runs on an engine worker once every dependency is met: it takes
//   the data pointers and enqueues the core ops, unless hvd.shutdown() was
//   called since the push (then it fails: the op belongs to an ended job
//   and must not be matched with the next job's ops). The core calls OnDone once
//   per tensor on its background thread (or inside enqueue on failure); the
//   last one completes the engine operation, which deletes the op.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "link.h"
#include "mx_abi.h"

namespace hvda_mx {

struct OpParams {
  int32_t type;  // HVDA_CORE_ALLREDUCE / _BROADCAST / _REDUCESCATTER
  int32_t process_set_id;
  int32_t reduce_op;
  double prescale;
  double postscale;
  int32_t root_rank;
};

class EngineOp {
 public:
  ~EngineOp();
  EngineOp(const EngineOp&) = delete;
  EngineOp& operator=(const EngineOp&) = delete;

  // Validates and builds the op (see hvda_mx_push for the arguments and the
  // checks). Returns null with *error set on failure.
  static std::unique_ptr<EngineOp> Create(const OpParams& params, int32_t n,
                                          NDArrayHandle const* inputs,
                                          NDArrayHandle const* outputs,
                                          const char* const* names, std::string* error);

  // Pushes the op; `order_after` (may be null) is written too. Returns false
  // with *error set if MXNet refused the push (the op is gone either way).
  static bool Push(std::unique_ptr<EngineOp> op, int32_t priority, NDArrayHandle order_after,
                   std::string* error);

 private:
  EngineOp() = default;

  static void RunStatic(void* run_ctx, void* on_complete, void* param);
  static void DeleteStatic(void* param);
  static void OnDone(void* user, const hvda_core_result* result);

  void Run(const CallbackOnComplete& on_complete);
  void RecordError(const std::string& message);
  // Completes the engine operation with the recorded error, if any. MXNet
  // deletes `this` inside; the caller must not touch it afterwards.
  void Complete();

  OpParams params_{};
  uint64_t epoch_ = 0;  // Epoch() when pushed
  bool in_place_ = false;
  std::vector<std::string> names_;
  std::vector<NDArrayHandle> inputs_;   // our shallow copies
  std::vector<NDArrayHandle> outputs_;  // our shallow copies; empty when in place
  std::vector<int32_t> dtypes_;         // core dtype codes
  std::vector<std::vector<int64_t>> shapes_;

  CallbackOnComplete on_complete_{};
  std::atomic<int32_t> pending_{0};
  std::mutex error_mu_;
  std::string error_;
};

}  // namespace hvda_mx
