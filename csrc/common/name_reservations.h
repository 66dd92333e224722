// NameReservations: the tensor names of one process set that this rank has
// enqueued and whose handles are not released yet.
//
// NOTE [Name reservation]: a name is reserved from enqueue until the caller
// releases the op's Work (Python: synchronize() of its handle) or drops the
// last reference to it, not merely until the op completes. So whether a
// second op with the same name is accepted never depends on how fast the
// first one completed: it is refused (InvalidArgument) until the first
// handle has been synchronized, on every run. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace hvda {

class NameReservations {
 public:
  // Reserves every name or none. Returns false, reserving nothing, if a name
  // is already reserved or repeated in names[0..n); *taken receives it. On
  // success keys[i] points at the reserved copy of names[i], valid until
  // Release(keys[i]). `names` is only read during the call.
  bool TryReserve(const std::string* const* names, size_t n, const std::string** keys,
                  std::string* taken);
  // key: as returned by TryReserve; released once.
  void Release(const std::string* key);

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> names_;
};

// One reserved name, released explicitly (Release, idempotent and
// thread-safe) or on destruction. Empty (reserves nothing) until Hold.
class NameReservation {
 public:
  NameReservation() = default;
  ~NameReservation() { Release(); }
  NameReservation(const NameReservation&) = delete;
  NameReservation& operator=(const NameReservation&) = delete;
  // Takes over `key` of `set` (from TryReserve). Called once, before the
  // reservation is shared with other threads.
  void Hold(std::shared_ptr<NameReservations> set, const std::string* key) {
    set_ = std::move(set);
    key_ = key;
  }
  void Release();

 private:
  std::mutex mu_;
  std::shared_ptr<NameReservations> set_;  // null once released (or never held)
  const std::string* key_ = nullptr;       // owned by *set_
};

}  // namespace hvda
