// Copies into shared memory that another CPU reads next (the shm backend's
// publishing steps).
//
// NOTE [Streaming publish]: a rank's segment is written by one CPU and read
// by its peers' CPUs. With ordinary stores the written lines sit dirty in the
// writer's caches, and every line a peer reads is a cache-to-cache transfer.
// On the 2-vCPU VMs we measure on, that transfer has phases, minutes long,
// in which it runs several times slower (benchmarks/host_probe.py), while
// memory itself keeps its speed. Non-temporal (streaming) stores send the
// lines to memory instead, and the peer reads them from there; a buffer
// handed back and forth between two CPUs moves faster that way from 64 KiB
// up in either phase (docs/design/shm_backend.md, "Measurements").
// Which of the two an operation uses is decided from measurements (NOTE
// [Adaptive copies] in shm_copy_modes.h): in the normal phase, ordinary
// stores are faster inside a whole collective from 1 MiB up.
#pragma once

#include <cstdint>

namespace hvda {
namespace cpu {
namespace shm {

// memcpy with non-temporal stores where the CPU has them (x86-64); plain
// memcpy elsewhere. The stores are weakly ordered: call StoreFence() before
// telling a peer the data is there (ShmBackend::Sync does). dst and src must
// not overlap; either may be null when len <= 0. Never blocks.
void StreamBytes(void* dst, const void* src, int64_t len);

// Orders every earlier store of this thread, streaming ones included, before
// every later one.
void StoreFence();

// Bytes of this CPU's last-level cache (sysconf), or 32 MiB if the system
// does not say.
int64_t LastLevelCacheBytes();

// StreamBytes or CopyBytes (shm_ranges.h).
using CopyFn = void (*)(void* dst, const void* src, int64_t len);

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
