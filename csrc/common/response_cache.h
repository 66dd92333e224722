// Response cache: remembers the response of a tensor name so that, in the
// steady state, ranks agree on work with one bit-vector AND instead of a
// gather and a broadcast.
//
// NOTE [Identical caches]: every rank applies the same sequence of Put, Touch
// and Erase calls (driven by the identical response lists and the AND-ed bit
// vectors), so slot numbers and LRU order are the same on every rank. Only the
// request signature stored beside each response is rank-local (allgather's
// dim0, alltoall's splits differ per rank).
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/message.h"

namespace hvda {

class ResponseCache {
 public:
  enum class Lookup { kHit, kMiss, kInvalid };

  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}
  size_t capacity() const { return capacity_; }
  size_t size() const { return by_name_.size(); }

  // Classifies a local request; sets *slot for kHit and kInvalid (same name,
  // different parameters).
  Lookup Find(const Request& req, uint32_t* slot) const;

  // The cached response of a slot; marks it most recently used.
  const Response& Touch(uint32_t slot);

  // Caches a single-tensor response with this rank's request. Evicts the
  // least recently used entry when full. No-op for uncacheable types.
  void Put(const Response& response, const Request& local_request);

  void Erase(uint32_t slot);
  bool Has(uint32_t slot) const { return slot < slots_.size() && slots_[slot].used; }

 private:
  struct Entry {
    bool used = false;
    Response response;
    Request request;
    std::list<uint32_t>::iterator lru_pos;
  };

  size_t capacity_;
  std::vector<Entry> slots_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::list<uint32_t> lru_;  // front = most recently used
};

// Whether two requests for the same name ask for the same operation.
bool SameSignature(const Request& a, const Request& b);

}  // namespace hvda
