#include "common/tensor_queue.h"

namespace hvda {

Status TensorQueue::Add(std::vector<TensorEntry> entries) {
  std::vector<const std::string*> names;
  names.reserve(entries.size());
  for (const auto& e : entries) names.push_back(&e.request.name);
  std::string taken;
  if (!reserved_->TryReserve(names, &taken))
    return Status::InvalidArgument(
        "Requested to collect a tensor with the name '" + taken +
        "', but a collective with this name is already in flight on this rank (its handle has "
        "not been synchronized yet). Give concurrent operations distinct names, or call "
        "synchronize() on the first one before reusing the name.");
  for (auto& e : entries)
    if (e.work) e.work->HoldName(std::make_unique<NameReservation>(reserved_, e.request.name));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& e : entries) {
    new_requests_.push_back(e.request);
    // The pair's key is copied from the name before the entry is moved.
    table_.emplace(e.request.name, std::move(e));
  }
  return Status::OK();
}

void TensorQueue::PopNewRequests(std::vector<Request>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (out->empty()) {
    out->swap(new_requests_);
  } else {
    out->insert(out->end(), new_requests_.begin(), new_requests_.end());
    new_requests_.clear();
  }
}

bool TensorQueue::Take(const std::string& name, TensorEntry* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = table_.find(name);
  if (it == table_.end()) return false;
  *out = std::move(it->second);
  table_.erase(it);
  return true;
}

void TensorQueue::FailAll(const Status& st) {
  std::unordered_map<std::string, TensorEntry> table;
  {
    std::lock_guard<std::mutex> lock(mu_);
    table.swap(table_);
    new_requests_.clear();
  }
  for (auto& kv : table) kv.second.work->Complete(st);
}

bool TensorQueue::HasNewRequests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !new_requests_.empty();
}

size_t TensorQueue::InFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.size();
}

}  // namespace hvda
