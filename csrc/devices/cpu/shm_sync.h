// Cross-process arrival flags for the shm backend.
//
// NOTE [shm barrier]: every rank owns one ShmRankControl at the start of its
// own segment, and only that rank writes its `arrived` counter: it counts the
// barriers the rank has reached. Barrier number k completes for a rank when
// every peer's counter is >= k. Peers are therefore never more than one
// barrier apart, and counters only grow (compared modulo 2^32).
// Waiting spins briefly, then yields, then sleeps on a futex on the peer's
// counter, because ranks often outnumber cores: pure spinning would steal the
// CPU from the very peer being waited for. A waiter whose peer last arrived
// from the waiter's own CPU moves itself to another CPU, or else sleeps at
// once (NOTE [Shared CPU] in shm_sync.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/util/status.h"

namespace hvda {
namespace cpu {

// Lives in shared memory (zero-filled by ftruncate = the initial state).
// One cache line per field group, so a rank's writes never false-share with
// its peers' reads of other fields.
struct alignas(64) ShmRankControl {
  std::atomic<uint32_t> arrived;   // futex word: barriers reached by the owner
  std::atomic<uint32_t> sleepers;  // peers asleep on `arrived` (wake only if > 0)
  char pad0[56];
  std::atomic<int32_t> pid;        // owner's process id, for early death detection
  std::atomic<int32_t> cpu;        // CPU the owner last arrived from (NOTE [Shared CPU])
  std::atomic<uint32_t> left;      // nonzero: the owner takes no further part (ShmLeave)
  char pad1[52];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex needs a plain 32-bit word");
static_assert(sizeof(ShmRankControl) == 128, "control layout is shared between processes");

// Publishes that the owner reached barrier `count` and wakes sleeping peers.
// Called only by the owner of `self`.
void ShmArrive(ShmRankControl* self, uint32_t count);

// Tells the owner's peers that it takes no further part in this
// communicator (its backend failed or was destroyed): a peer waiting for one
// of its barriers stops at once instead of at its deadline. Arrivals the owner
// published before still count. Called only by the owner of `self`.
void ShmLeave(ShmRankControl* self);

// Why ShmWaitArrived gave up on a peer.
enum class ShmPeerGone { kNo, kDied, kLeft };

// What one waiter (a communicator's rank) remembers between waits (NOTE
// [Shared CPU] in shm_sync.cc). Owned by the communicator; used by one thread
// at a time (its collectives are serialised).
struct ShmWaitState {
  ShmRankControl* self = nullptr;  // the waiter's own control: `cpu` is republished after a move
  std::chrono::steady_clock::time_point last_move{};  // when it last moved itself off a CPU
};

// Blocks until peer->arrived >= count. Returns false if `deadline` passes
// first (*gone kNo), the peer's process is gone (kDied) or the peer left
// (kLeft, ShmLeave). Never hangs.
bool ShmWaitArrived(ShmRankControl* peer, uint32_t count,
                    std::chrono::steady_clock::time_point deadline, ShmWaitState* state,
                    ShmPeerGone* gone);

}  // namespace cpu
}  // namespace hvda
