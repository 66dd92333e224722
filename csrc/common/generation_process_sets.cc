// Generation: dynamic process sets. add/remove are collective over all ranks:
// they travel as special requests of the global set, so every rank creates or
// drops the set in the same cycle (see HandleProcessSetResponse).
#include <algorithm>

#include "common/generation.h"

namespace hvda {

Status Generation::AddProcessSet(std::vector<int> ranks, int* id) {
  if (!dynamic_sets_)
    return Status::InvalidArgument(
        "add_process_set() needs dynamic process sets: set " +
        std::string(setting_env::dynamic_process_sets) + "=1 or call "
        "hvd.init(process_sets='dynamic').");
  std::sort(ranks.begin(), ranks.end());
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    // The global set does not count: as upstream (whose global set is
    // registered without a rank list), a set of every rank may be added and
    // is a set of its own.
    for (const auto& kv : sets_)
      if (kv.first != 0 && kv.second->ranks == ranks)
        return Status::InvalidArgument("a process set with ranks " +
                                       ShapeString(std::vector<int64_t>(ranks.begin(), ranks.end())) +
                                       " already exists (id " + std::to_string(kv.first) + ").");
  }
  if (ranks.empty() || ranks.front() < 0 || ranks.back() >= job_.topo.size ||
      std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
    return Status::InvalidArgument("process set ranks must be distinct and in [0, " +
                                   std::to_string(job_.topo.size) + ").");
  EnqueueArgs a;
  a.type = RequestType::kAddProcessSet;
  a.name = "__add_process_set." + std::to_string(set_ops_seq_++);
  a.dtype = DataType::kUInt8;
  a.shape.assign(ranks.begin(), ranks.end());
  std::vector<std::shared_ptr<Work>> works;
  std::vector<EnqueueArgs> ops{a};
  HVDA_RETURN_IF_ERROR(Enqueue(std::move(ops), &works));
  works[0]->Wait(-1);
  HVDA_RETURN_IF_ERROR(works[0]->status());
  *id = works[0]->join_result;
  return Status::OK();
}

Status Generation::RemoveProcessSet(int id, bool* removed) {
  *removed = false;
  if (id == 0) return Status::OK();
  if (!dynamic_sets_)
    return Status::InvalidArgument(
        "remove_process_set() needs dynamic process sets: set " +
        std::string(setting_env::dynamic_process_sets) +
        "=1 or call hvd.init(process_sets='dynamic').");
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    if (!sets_.count(id)) return Status::OK();
  }
  EnqueueArgs a;
  a.type = RequestType::kRemoveProcessSet;
  a.name = "__remove_process_set." + std::to_string(set_ops_seq_++);
  a.dtype = DataType::kUInt8;
  a.shape = {id};
  std::vector<std::shared_ptr<Work>> works;
  std::vector<EnqueueArgs> ops{a};
  HVDA_RETURN_IF_ERROR(Enqueue(std::move(ops), &works));
  works[0]->Wait(-1);
  HVDA_RETURN_IF_ERROR(works[0]->status());
  *removed = works[0]->join_result == 1;
  return Status::OK();
}

// Runs on the background thread, at the same point of the same cycle on every
// rank. Members of a new set connect its communicators here (blocking only
// them); the others just record it.
void Generation::HandleProcessSetResponse(const Response& r, ProcessSetState* global) {
  TensorEntry e;
  bool have = global->queue.Take(r.names[0], &e);
  Status st;
  int result = -1;
  if (r.type == ResponseType::kAddProcessSet) {
    std::vector<int> ranks(r.payload.begin(), r.payload.end());
    int id = next_set_id_++;
    std::unique_ptr<ProcessSetState> ps;
    st = CreateProcessSet(id, ranks, &ps);
    if (st.ok()) {
      std::lock_guard<std::mutex> lock(sets_mu_);
      sets_[id] = std::move(ps);
      result = id;
    }
  } else {
    int id = r.payload.empty() ? -1 : static_cast<int>(r.payload[0]);
    std::unique_ptr<ProcessSetState> gone;
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      auto it = sets_.find(id);
      if (it != sets_.end() && id != 0) {
        gone = std::move(it->second);
        sets_.erase(it);
        result = 1;
      } else {
        result = 0;
      }
    }
    if (gone) {
      gone->queue.FailAll(Status::Aborted("process set " + std::to_string(id) + " was removed."));
      // RunCycle may still hold a pointer to it for this cycle: it skips
      // removed sets and destroys retired ones when the cycle ends.
      gone->removed = true;
      retired_sets_.push_back(std::move(gone));
    }
  }
  if (have) {
    e.work->join_result = result;
    e.work->Complete(st);
  }
}

std::vector<int> Generation::ProcessSetIds() {
  std::vector<int> ids;
  std::lock_guard<std::mutex> lock(sets_mu_);
  for (const auto& kv : sets_) ids.push_back(kv.first);
  return ids;
}

Status Generation::ProcessSetRanks(int id, std::vector<int>* ranks) {
  std::lock_guard<std::mutex> lock(sets_mu_);
  auto it = sets_.find(id);
  if (it == sets_.end())
    return Status::InvalidArgument("process set " + std::to_string(id) + " is not registered.");
  *ranks = it->second->ranks;
  return Status::OK();
}

Status Generation::ProcessSetRank(int id, int* set_rank) {
  std::lock_guard<std::mutex> lock(sets_mu_);
  auto it = sets_.find(id);
  if (it == sets_.end())
    return Status::InvalidArgument("process set " + std::to_string(id) + " is not registered.");
  *set_rank = it->second->set_rank;
  return Status::OK();
}

}  // namespace hvda
