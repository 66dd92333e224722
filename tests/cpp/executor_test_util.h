// Helpers for tests that drive an Executor directly: queue entries over
// caller-owned buffers, and running responses until their Works complete.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/executor.h"

namespace hvda {
namespace testing {

// A queue entry for `name` over caller-owned input/output buffers.
inline TensorEntry Entry(const std::string& name, std::vector<int64_t> shape, const void* in,
                         void* out) {
  TensorEntry e;
  e.request.name = name;
  e.request.shape = std::move(shape);
  e.input = in;
  e.output = out;
  e.work = std::make_shared<Work>();
  return e;
}

// Polls until nothing is in flight; Timeout after 20 s.
inline Status Drain(Executor& exec) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (exec.HasInflight()) {
    HVDA_RETURN_IF_ERROR(exec.PollCompletions());
    if (std::chrono::steady_clock::now() > deadline) return Status::Timeout("executor drain");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Status::OK();
}

}  // namespace testing
}  // namespace hvda
