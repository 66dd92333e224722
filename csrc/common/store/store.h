// Store: the rendezvous key-value store (launcher's TCP store, or in-memory
// for tests). Used to exchange addresses and ids while building communicators.
// Thread-safe: implementations may be called from several threads at once.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/util/status.h"

namespace hvda {

class Store {
 public:
  virtual ~Store() = default;
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // Blocks until key exists (returns its value) or the timeout passes (kTimeout).
  virtual Status Get(const std::string& key, std::string* value,
                     std::chrono::milliseconds timeout) = 0;
};

// Prepends a fixed prefix to every key (decorator; does not own `base`,
// which must outlive it).
class PrefixStore : public Store {
 public:
  PrefixStore(Store* base, std::string prefix) : base_(base), prefix_(std::move(prefix)) {}
  Status Set(const std::string& key, const std::string& value) override {
    return base_->Set(prefix_ + key, value);
  }
  Status Get(const std::string& key, std::string* value,
             std::chrono::milliseconds timeout) override {
    return base_->Get(prefix_ + key, value, timeout);
  }

 private:
  Store* base_;
  std::string prefix_;
};

}  // namespace hvda
