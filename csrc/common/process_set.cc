#include "common/process_set.h"

#include <algorithm>

namespace hvda {

int ProcessSetState::SetRankOf(int global_rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), global_rank);
  if (it == ranks.end() || *it != global_rank) return -1;
  return static_cast<int>(it - ranks.begin());
}

}  // namespace hvda
