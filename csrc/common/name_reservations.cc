#include "common/name_reservations.h"

namespace hvda {

bool NameReservations::TryReserve(const std::string* const* names, size_t n,
                                  const std::string** keys, std::string* taken) {
  std::lock_guard<std::mutex> lock(mu_);
  // Insert one by one; a name already there (reserved earlier, or repeated
  // in `names`) undoes this call's insertions. O(n), not O(n^2). Pointers to
  // an unordered_set's elements stay valid across later insertions.
  for (size_t i = 0; i < n; ++i) {
    auto inserted = names_.insert(*names[i]);
    if (inserted.second) {
      keys[i] = &*inserted.first;
      continue;
    }
    *taken = *names[i];
    for (size_t j = 0; j < i; ++j) names_.erase(*names[j]);
    return false;
  }
  return true;
}

void NameReservations::Release(const std::string* key) {
  std::lock_guard<std::mutex> lock(mu_);
  // Find first: erase(*key) would read the key while freeing its node.
  auto it = names_.find(*key);
  if (it != names_.end()) names_.erase(it);
}

void NameReservation::Release() {
  std::shared_ptr<NameReservations> set;
  {
    std::lock_guard<std::mutex> lock(mu_);
    set.swap(set_);
  }
  if (set) set->Release(key_);
}

}  // namespace hvda
