#include "common/name_reservations.h"

namespace hvda {

bool NameReservations::TryReserve(const std::vector<const std::string*>& names,
                                  std::string* taken) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < names.size(); ++i) {
    bool repeated = false;
    for (size_t j = 0; j < i; ++j) repeated |= *names[j] == *names[i];
    if (repeated || names_.count(*names[i])) {
      *taken = *names[i];
      return false;
    }
  }
  for (const std::string* n : names) names_.insert(*n);
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
