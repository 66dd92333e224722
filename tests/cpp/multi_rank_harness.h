// In-process multi-rank harness: runs `body` on `size` threads that share one
// MemoryStore, and fails the test if any rank does not finish in time.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/hal/collective_backend.h"
#include "common/store/memory_store.h"

namespace hvda {
namespace testing {

// A CommunicatorSpec for `rank` of `size`, all on one host.
inline CommunicatorSpec LocalSpec(Store* store, const std::string& prefix, int rank, int size) {
  CommunicatorSpec spec;
  spec.store = store;
  spec.prefix = prefix;
  spec.rank = rank;
  spec.size = size;
  for (int r = 0; r < size; ++r) {
    spec.global_ranks.push_back(r);
    spec.hosts.push_back("localhost");
  }
  spec.timeout_seconds = 20.0;
  return spec;
}

// Runs body(rank, size, store) on `size` threads; blocks until all return.
inline void RunRanks(int size, const std::function<void(int, int, Store*)>& body,
                     std::chrono::seconds deadline = std::chrono::seconds(60)) {
  MemoryStore store;
  std::vector<std::future<void>> done;
  for (int r = 0; r < size; ++r)
    done.push_back(std::async(std::launch::async, [&, r] { body(r, size, &store); }));
  auto until = std::chrono::steady_clock::now() + deadline;
  for (int r = 0; r < size; ++r) {
    if (done[r].wait_until(until) != std::future_status::ready) {
      ADD_FAILURE() << "rank " << r << " did not finish within the deadline";
      std::terminate();  // a hung rank would hang the whole test binary
    }
    done[r].get();
  }
}

}  // namespace testing
}  // namespace hvda
