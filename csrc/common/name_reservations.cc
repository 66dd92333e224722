#include "common/name_reservations.h"

namespace hvda {

bool NameReservations::TryReserve(const std::vector<const std::string*>& names,
                                  std::string* taken) {
  std::lock_guard<std::mutex> lock(mu_);
  // Insert one by one; a name already there (reserved earlier, or repeated
  // in `names`) undoes this call's insertions. O(names), not O(names^2).
  for (size_t i = 0; i < names.size(); ++i) {
    if (names_.insert(*names[i]).second) continue;
    *taken = *names[i];
    for (size_t j = 0; j < i; ++j) names_.erase(*names[j]);
    return false;
  }
  return true;
}

void NameReservations::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_.erase(name);
}

void NameReservation::Release() {
  std::shared_ptr<NameReservations> set;
  {
    std::lock_guard<std::mutex> lock(mu_);
    set.swap(set_);
  }
  if (set) set->Release(name_);
}

}  // namespace hvda
