// In-process Store for tests (ranks as threads) and size-1 jobs.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "common/store/store.h"

namespace hvda {

class MemoryStore : public Store {
 public:
  Status Set(const std::string& key, const std::string& value) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      data_[key] = value;
    }
    cv_.notify_all();
    return Status::OK();
  }
  Status Get(const std::string& key, std::string* value,
             std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    bool found = cv_.wait_for(lock, timeout, [&] { return data_.count(key) > 0; });
    if (!found) return Status::Timeout("store key '" + key + "' not set within timeout");
    *value = data_[key];
    return Status::OK();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> data_;
};

}  // namespace hvda
