#include "common/response_cache.h"

#include <algorithm>

namespace hvda {

bool SameSignature(const Request& a, const Request& b) {
  return a.type == b.type && a.dtype == b.dtype && a.device == b.device &&
         a.root_rank == b.root_rank && a.reduce_op == b.reduce_op && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.shape == b.shape && a.splits == b.splits;
}

ResponseCache::Lookup ResponseCache::Find(const Request& req, uint32_t* slot) const {
  auto it = by_name_.find(req.name);
  if (it == by_name_.end()) return Lookup::kMiss;
  *slot = it->second;
  return SameSignature(slots_[it->second].request, req) ? Lookup::kHit : Lookup::kInvalid;
}

const Response& ResponseCache::Touch(uint32_t slot) {
  Entry& e = slots_[slot];
  lru_.splice(lru_.begin(), lru_, e.lru_pos);
  return e.response;
}

void ResponseCache::Put(const Response& response, const Request& local_request) {
  if (capacity_ == 0 || response.names.size() != 1) return;
  switch (response.type) {
    case ResponseType::kAllreduce:
    case ResponseType::kAllgather:
    case ResponseType::kBroadcast:
    case ResponseType::kAlltoall:
    case ResponseType::kReducescatter:
    case ResponseType::kAdasum:
      break;
    default:
      return;
  }
  auto existing = by_name_.find(response.names[0]);
  if (existing != by_name_.end()) Erase(existing->second);
  if (by_name_.size() >= capacity_) Erase(lru_.back());
  uint32_t slot;
  if (!free_slots_.empty()) {
    // Lowest free slot first, so that slot choice depends only on history.
    auto it = std::min_element(free_slots_.begin(), free_slots_.end());
    slot = *it;
    free_slots_.erase(it);
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Entry& e = slots_[slot];
  e.used = true;
  e.response = response;
  e.request = local_request;
  lru_.push_front(slot);
  e.lru_pos = lru_.begin();
  by_name_[response.names[0]] = slot;
}

void ResponseCache::Erase(uint32_t slot) {
  if (!Has(slot)) return;
  Entry& e = slots_[slot];
  by_name_.erase(e.response.names[0]);
  lru_.erase(e.lru_pos);
  e.used = false;
  e.response = Response();
  free_slots_.push_back(slot);
}

}  // namespace hvda
