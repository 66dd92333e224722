// Controller: one rank's side of the per-cycle negotiation of a process set.
//
// Each cycle (collective over the set, blocking):
//  1. classify this rank's pending requests against the response cache;
//  2. AND a bit vector across ranks: [flags][hit bits][valid bits];
//  3. fast path (nobody has uncached requests): execute the cache hits common
//     to all ranks; slow path: gather uncached requests at set-rank 0, whose
//     Coordinator answers with a broadcast response list;
//  4. fuse the result (identically on every rank).
// See NOTE [Identical caches] in response_cache.h. The fusion threshold may
// change while the job runs (autotune): NOTE [Autotune sync] in
// autotune/parameter_manager.h.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "common/autotune/parameter_manager.h"
#include "common/coordinator.h"
#include "common/message.h"
#include "common/response_cache.h"
#include "common/transport/controller_transport.h"

namespace hvda {

struct ControllerOptions {
  int process_set_id = 0;  // for messages
  size_t cache_capacity = 1024;
  int64_t fusion_threshold_bytes = 128 << 20;  // used when `tunables` is null
  // The current fusion threshold of every set of the runtime (shared; may be
  // null). drives_autotune: this is the global set's controller, which
  // feeds the manager and carries its updates (NOTE [Autotune sync]).
  std::shared_ptr<ParameterManager> tunables;
  bool drives_autotune = false;
  StallOptions stall;
  // A cache hit that other ranks have not matched for this long is sent to
  // the coordinator instead, so the stall inspector can see it.
  double hit_requeue_seconds = 1.0;
};

class Controller {
 public:
  // transport: borrowed, outlives the controller. timeline: may be null
  // (only global rank 0 records). global_ranks: set rank -> global rank.
  Controller(ControllerTransport* transport, ControllerOptions options,
             std::vector<int> global_ranks, const Logger* log, Timeline* timeline);

  // Runs one negotiation cycle. new_requests are this rank's requests
  // enqueued since the last cycle. On return *out holds the responses to
  // execute now, identical on every rank of the set.
  // locally_idle: this rank has nothing in flight in any process set; the
  // ranks' flags are ANDed (cache fast path only) into all_idle().
  // stuck: this rank's view of NOTE [Deadlock detection] (coordinator.h);
  // ANDed over the set's ranks into all_stuck(). While every rank says so,
  // the cycle takes the slow path, where the coordinator fails what waits.
  // deadlock_end (global set): ask every rank to end the generation because
  // a set of this rank declared a deadlock (NOTE [A deadlock ends the
  // generation] in coordinator.h); travels like shutdown_requested.
  Status ComputeResponseList(std::vector<Request> new_requests, bool shutdown_requested,
                             ResponseList* out, bool locally_idle = false, bool stuck = false,
                             bool deadlock_end = false);

  // Whether every rank of the set said `stuck` in the last cycle; identical
  // on every rank.
  bool all_stuck() const { return all_stuck_; }
  // Whether some pending request has not been sent to the coordinator (it
  // waits as a response-cache hit).
  bool has_unsent() const;

  // Whether every rank reported locally_idle in the last cycle; identical on
  // every rank (NOTE [Cycle pacing] in runtime.cc).
  bool all_idle() const { return all_idle_; }

  int joined_count() const { return joined_count_; }
  size_t pending() const { return pending_.size(); }
  // Between cycles, on the thread that runs them: may a peer already wait in
  // a cycle this rank has not started? (ControllerTransport::PeerMayWait)
  bool PeerMayWait() const { return transport_->PeerMayWait(); }

 private:
  struct Pending {
    Request request;
    bool sent = false;  // given to the coordinator, awaiting its response
    std::chrono::steady_clock::time_point since;
    int64_t hit_slot = -1;  // this cycle: the cache slot it hit, -1 none
  };

  // new_params: set-rank 0 of the global set has tuned values to send.
  Status SlowPath(std::vector<Request> to_send, bool shutdown_requested, bool deadlock_end,
                  bool stuck, bool new_params, ResponseList* out);
  // Sets out->responses to `parts` (cache hits, borrowed), then the slow
  // path's decided responses, fused with the current threshold (copied: a hit costs
  // its name and shape, not a whole Response); on the tuning rank, feeds
  // them to the parameter manager.
  void Finish(std::vector<const Response*> parts, const std::vector<Response>& decided,
              ResponseList* out);
  void Answered(const std::string& name, Request* local);  // drops the pending entry

  ControllerTransport* transport_;
  ControllerOptions options_;
  std::vector<int> global_ranks_;
  Timeline* timeline_;
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;  // set rank 0 only
  std::vector<Pending> pending_;
  int32_t joined_count_ = 0;
  bool all_idle_ = false;
  bool all_stuck_ = false;
  std::chrono::steady_clock::time_point last_slow_path_;
};

}  // namespace hvda
