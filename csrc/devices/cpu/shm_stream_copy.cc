#include "devices/cpu/shm_stream_copy.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "devices/cpu/shm_ranges.h"

namespace hvda {
namespace cpu {
namespace shm {

#if defined(__x86_64__)
// SSE2 is part of x86-64, so no CPU dispatch: 16-byte streaming stores fill
// whole lines in the write-combining buffers and measured as fast as 64-byte
// ones (docs/design/shm_backend.md, "Measurements").
void StreamBytes(void* dst, const void* src, int64_t len) {
  if (len <= 0) return;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Ordinary stores up to the first 64-byte boundary of dst.
  const int64_t head = std::min<int64_t>(len, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, static_cast<size_t>(head));
  d += head;
  s += head;
  len -= head;
  const int64_t lines = len / 64;
  for (int64_t i = 0; i < lines; ++i, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, static_cast<size_t>(len % 64));
}

void StoreFence() { _mm_sfence(); }
#else
void StreamBytes(void* dst, const void* src, int64_t len) { CopyBytes(dst, src, len); }

void StoreFence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

int64_t LastLevelCacheBytes() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return l2;
#endif
  return int64_t{32} << 20;
}

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
