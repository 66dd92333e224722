#include "common/tensor_queue.h"

namespace hvda {

Status TensorQueue::Add(TensorEntry* entries, size_t n) {
  // One op (the common case) needs no heap arrays.
  const std::string* one_name = nullptr;
  const std::string* one_key = nullptr;
  std::vector<const std::string*> many_names, many_keys;
  const std::string** names = &one_name;
  const std::string** keys = &one_key;
  if (n > 1) {
    many_names.resize(n);
    many_keys.resize(n);
    names = many_names.data();
    keys = many_keys.data();
  }
  for (size_t i = 0; i < n; ++i) names[i] = &entries[i].request.name;
  std::string taken;
  if (!reserved_->TryReserve(names, n, keys, &taken))
    return Status::InvalidArgument(
        "Requested to collect a tensor with the name '" + taken +
        "', but a collective with this name is already in flight on this rank (its handle has "
        "not been synchronized yet). Give concurrent operations distinct names, or call "
        "synchronize() on the first one before reusing the name.");
  for (size_t i = 0; i < n; ++i)
    if (entries[i].work) entries[i].work->HoldName(reserved_, keys[i]);
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) {
    TensorEntry& e = entries[i];
    new_requests_.push_back(e.request);
    std::shared_ptr<Work> work = e.work;
    // The pair's key is copied from the name before the entry is moved.
    table_.emplace(e.request.name, std::move(e));
    e.work = std::move(work);
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
