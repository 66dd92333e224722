// Copies into shared memory that another CPU reads next (the shm backend's
// publishing steps).
//
// NOTE [Streaming publish]: a rank's segment is written by one CPU and read
// by its peers' CPUs. With ordinary stores the written lines sit dirty in the
// writer's caches, and every line a peer reads is a cache-to-cache transfer.
// On the 2-vCPU VMs we measure on, that transfer has phases, minutes long,
// in which it runs about 5x slower (benchmarks/host_probe.py: 2.3 instead of
// 13 GB/s), while memory itself keeps its speed. Non-temporal (streaming)
// stores send the lines to memory instead, and the peer reads them from there.
// Measured with two processes pinned to the two CPUs handing a buffer back
// and forth (2026-11-26, one run per size and phase, GB/s, ordinary copy /
// streaming copy; repeated runs that day read within 10% of these at 1 MiB,
// while the 16 MiB ordinary copy ranged 7-14.5 in the normal phase):
//   normal phase: 4 KiB 8.7 / 5.6, 64 KiB 13.6 / 17.6, 1 MiB 19.8 / 24.4, 16 MiB 7.0 / 18.5;
//   slow phase:   4 KiB 3.7 / 5.3, 64 KiB 3.8 / 17.8, 1 MiB 4.2 / 25.6, 16 MiB 5.4 / 15.1.
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
