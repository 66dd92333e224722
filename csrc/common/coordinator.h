// Coordinator: the set-rank-0 side of negotiation. Collects every rank's
// requests by tensor name, decides when a tensor is ready (every rank that
// has not joined submitted it), validates that the ranks agree, and builds
// responses (or error responses naming the tensor, field and ranks). Also
// tracks join() and inspects stalls.
//
// Used only by the background thread of set-rank 0; not thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/message.h"
#include "common/timeline.h"
#include "common/util/logging.h"

namespace hvda {

struct StallOptions {
  bool enabled = true;
  double warning_seconds = 60;
  double shutdown_seconds = 0;  // 0: never
  double deadlock_seconds = 5;  // 0: no deadlock detection (for messages; see below)
};

// NOTE [Deadlock detection]: upstream only warns about a stall, forever. Here
// a job whose ranks can no longer make progress fails the stuck operations on
// every rank instead.
// - A rank is *stuck* when a framework thread of it is blocked waiting for a
//   Horovod operation (synchronize, join, barrier, ...) and for
//   HOROVOD_DEADLOCK_TIMEOUT_SECONDS nothing happened on it: no operation was
//   enqueued or completed (ActivityTracker), and every request it has is known
//   to the coordinators (none waits unsent in a response-cache slot).
//   A rank that is computing, however long, is never stuck.
// - The global set's cycle ANDs every rank's stuck bit, so all ranks learn at
//   once, identically, that the whole job is stuck; every set's cycle then
//   carries that verdict to its coordinator (RequestList::stuck).
// - If every rank is blocked and nothing moved for that long, no pending
//   request can still become ready: readiness only changes when a rank
//   submits, and no rank is free to submit. The coordinator of each set then
//   answers every request still waiting with an error that lists, per rank,
//   the names it submitted, and the job generation ends (below).
// Limit: a program whose ranks block one thread in Horovod while another
// thread computes for longer than the timeout before submitting must raise
// the timeout (or set it to 0).
//
// NOTE [A deadlock ends the generation]: a deadlock means the ranks' programs
// are out of step (each waits for a different op). Going on would keep them
// out of step: the next collective of each rank meets another rank's
// different one, and every later op fails in cascade. So a declared deadlock
// ends the job generation on every rank, as a shutdown does, and the next
// hvd.init() (every rank gets the deadlock error first, so every rank knows)
// starts the next generation with all ranks in step.
// - The global set's coordinator declares it and ends the generation in the
//   same cycle (ResponseList::deadlock_end with shutdown).
// - Another set's declaration reaches only its members
//   (ResponseList::deadlock_declared): each of them refuses new ops at once
//   and asks the global set's next cycle to end the generation
//   (RequestList::deadlock_end), which every rank then ends in that cycle.

class Coordinator {
 public:
  // set_id: the process set (for messages). global_ranks maps set rank ->
  // global rank (for messages). timeline may be null.
  Coordinator(int set_id, int size, std::vector<int> global_ranks, StallOptions stall, const Logger* log,
              Timeline* timeline);

  // Processes one cycle's request lists (index = set rank) and returns the
  // responses that became ready, in readiness order, with join/shutdown state.
  ResponseList Process(const std::vector<RequestList>& lists);

  // Whether some tensor waits for ranks (its readiness and stalls are only
  // re-examined on the slow path, so the controller forces one now and then).
  bool HasWaiting() const { return !table_.empty() || !joined_.empty(); }

 private:
  struct Entry {
    std::vector<Request> requests;  // arrival order
    std::set<int> ranks;
    std::chrono::steady_clock::time_point first_seen;
    bool warned = false;
  };

  void Add(const Request& r);
  bool Ready(const Entry& e) const;
  Response Construct(const std::string& name, Entry& e) const;
  std::string Validate(const std::string& name, const std::vector<Request>& by_rank) const;
  // Returns true when the stall shutdown time is exceeded; appends errors.
  bool InspectStalls(ResponseList* out);
  // NOTE [Deadlock detection]: every waiting request fails, naming per rank
  // what it submitted; empties the table.
  void FailDeadlocked(ResponseList* out);
  std::string RankList(const std::vector<int>& set_ranks) const;

  int set_id_;
  int size_;
  std::vector<int> global_ranks_;
  StallOptions stall_;
  const Logger* log_;
  Timeline* timeline_;
  std::map<std::string, Entry> table_;
  std::vector<std::string> order_;  // names in first-seen order (may hold stale names)
  std::set<int> joined_;
  int last_joined_ = -1;
  std::chrono::steady_clock::time_point last_stall_check_;
};

}  // namespace hvda
