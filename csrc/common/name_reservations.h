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
  // is already reserved or repeated in `names`; *taken receives it. The
  // pointers are only read during the call.
  bool TryReserve(const std::vector<const std::string*>& names, std::string* taken);
  void Release(const std::string& name);

 private:
  mutable std::mutex mu_;
  std::unordered_set<std::string> names_;
};

// One reserved name, released when Release() is called or the holder is
// destroyed, whichever comes first. Owned by the Work of the op.
class NameReservation {
 public:
  NameReservation(std::shared_ptr<NameReservations> set, std::string name)
      : set_(std::move(set)), name_(std::move(name)) {}
  ~NameReservation() { Release(); }
  NameReservation(const NameReservation&) = delete;
  NameReservation& operator=(const NameReservation&) = delete;
  void Release();

 private:
  std::mutex mu_;
  std::shared_ptr<NameReservations> set_;  // null once released
  std::string name_;
};

}  // namespace hvda
