// PluginActivity: how many collectives the core has run through one device
// plugin's collective library since the plugin was loaded, per kind.
//
// This is the evidence the conformance suite asks for (docs/conformance.md,
// "Proof that the plugin ran it"): a case that moved data on an accelerator
// must have raised its kind's count on every member rank. A plugin whose
// tensors silently took the CPU path would pass every value check and
// still fail there. PluginBackend counts each collective once, when it is
// issued (before the plugin is called: a call that fails still counts, its
// failure is reported on its own); composed collectives count as the one
// kind the core asked for (an uneven allgather made of broadcasts is one
// allgather).
//
// Thread-safety: Count from the background thread, Snapshot from any thread
// (relaxed atomics: a snapshot taken after an op's Work completed sees it,
// because completion is published through the Work's own synchronization).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/hal/collective_backend.h"

namespace hvda {

class PluginActivity {
 public:
  static constexpr int kKinds = static_cast<int>(CollectiveKind::kBarrier) + 1;

  void Count(CollectiveKind kind) {
    counts_[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
  }
  // (kind name, count) for every kind, in CollectiveKind order: "allreduce",
  // "allgather", "broadcast", "alltoall", "reducescatter", "barrier".
  std::vector<std::pair<std::string, uint64_t>> Snapshot() const {
    static const char* const kNames[kKinds] = {"allreduce", "allgather",     "broadcast",
                                               "alltoall",  "reducescatter", "barrier"};
    std::vector<std::pair<std::string, uint64_t>> out;
    for (int k = 0; k < kKinds; ++k)
      out.emplace_back(kNames[k], counts_[k].load(std::memory_order_relaxed));
    return out;
  }

 private:
  std::array<std::atomic<uint64_t>, kKinds> counts_{};
};

}  // namespace hvda
