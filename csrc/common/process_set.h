// ProcessSetState: everything one process set owns on this rank: its queue,
// and, when this rank is a member, its controller transport, controller and
// executor (with the collective backends built for its ranks).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/controller.h"
#include "common/util/status.h"
#include "common/executor.h"
#include "common/tensor_queue.h"
#include "common/transport/controller_transport.h"

namespace hvda {

struct ProcessSetState {
  int id = 0;
  std::vector<int> ranks;  // global ranks, sorted
  int set_rank = -1;       // this rank's index in `ranks`, -1 if not a member
  TensorQueue queue;
  // Members only. Destroyed in reverse order: the controller, then the
  // transport (which may borrow one of the executor's backends), then the
  // executor.
  std::unique_ptr<Executor> executor;
  // Accelerator tensors (Runtime::DeviceExecutor): created on first use over
  // `comm_spec`'s ranks; it shares ownership of its device (output device).
  std::unique_ptr<Executor> device_executor;
  CommunicatorSpec comm_spec;  // store and config borrowed from the Runtime's generation
  std::unique_ptr<ControllerTransport> transport;
  std::unique_ptr<Controller> controller;
  // Start the next cycle at once while requests wait (NOTE [Cycle pacing]).
  bool eager_pacing = false;
  // Set by remove_process_set during a cycle; the set is skipped for the
  // rest of that cycle and destroyed at its end.
  bool removed = false;

  bool member() const { return set_rank >= 0; }
  int size() const { return static_cast<int>(ranks.size()); }
  // Set rank of a global rank, or -1.
  int SetRankOf(int global_rank) const;
};

// InvalidArgument unless `sorted_ranks` (sorted) lists distinct ranks in
// [0, world_size), at least one; `context` goes after the set in the message.
Status CheckSetRanks(const std::vector<int>& sorted_ranks, int world_size,
                     const std::string& context);

// Checks the process sets given to init() against a job of `world_size`
// ranks, before any peer is contacted (so every rank fails alike, none is
// left connecting to a peer that already gave up): each set lists distinct
// ranks in [0, world_size), none is the global set, none is given twice.
// On success *sorted holds the sets with their ranks sorted, in order.
Status CheckStaticProcessSets(const std::vector<std::vector<int>>& sets, int world_size,
                              std::vector<std::vector<int>>* sorted);

}  // namespace hvda
