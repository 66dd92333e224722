#include "common/process_set.h"

#include <algorithm>
#include <string>

#include "common/message.h"

namespace hvda {

int ProcessSetState::SetRankOf(int global_rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), global_rank);
  if (it == ranks.end() || *it != global_rank) return -1;
  return static_cast<int>(it - ranks.begin());
}

Status CheckSetRanks(const std::vector<int>& sorted_ranks, int world_size,
                     const std::string& context) {
  if (!sorted_ranks.empty() &&
      std::adjacent_find(sorted_ranks.begin(), sorted_ranks.end()) == sorted_ranks.end() &&
      sorted_ranks.front() >= 0 && sorted_ranks.back() < world_size)
    return Status::OK();
  return Status::InvalidArgument(
      "process set " + ShapeString(std::vector<int64_t>(sorted_ranks.begin(), sorted_ranks.end())) +
      context + " must list distinct ranks in [0, " + std::to_string(world_size) + ").");
}

Status CheckStaticProcessSets(const std::vector<std::vector<int>>& sets, int world_size,
                              std::vector<std::vector<int>>* sorted) {
  sorted->clear();
  for (std::vector<int> ranks : sets) {
    std::sort(ranks.begin(), ranks.end());
    HVDA_RETURN_IF_ERROR(CheckSetRanks(ranks, world_size, " given to init()"));
    const std::string name = ShapeString(std::vector<int64_t>(ranks.begin(), ranks.end()));
    if (static_cast<int>(ranks.size()) == world_size)
      return Status::InvalidArgument(
          "process set " + name + " given to init() holds every rank: that is the global "
          "process set (hvd.global_process_set), which always exists; leave it out of "
          "init(process_sets=...).");
    if (std::find(sorted->begin(), sorted->end(), ranks) != sorted->end())
      return Status::InvalidArgument("process set " + name +
                                     " was given twice to init(); process sets must be unique.");
    sorted->push_back(std::move(ranks));
  }
  return Status::OK();
}

}  // namespace hvda
