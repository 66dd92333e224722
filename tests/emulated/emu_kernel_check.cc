// Checks the engine's two emulation-only entry points (emu_core.h), which the
// vendor API subset does not have: the kernel-launch primitive
// hvda_emu::RtLaunchKernel (stream order, range validation, memory kept
// mapped until the kernel ran) and the copy counters hvda_emu_copy_counts.
//
// Usage: emu_kernel_check (exit status 1 on a failure; prints one
// "[ OK ] name" / "[FAIL] name" line per check and a summary). Bounded by
// alarm().
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "emu_core.h"
#include "emu_expect.h"
#include "emu_vendor_api.h"

namespace {

constexpr int kInvalidValue = 1;
enum { kH2H = 0, kH2D = 1, kD2H = 2, kD2D = 3 };

using emu_test::current_test;
using emu_test::failures;

// A host function that blocks its stream until `open` is set.
void WaitOpen(void* arg) {
  auto* open = static_cast<std::atomic<bool>*>(arg);
  while (!open->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void* DevAlloc(size_t n) {
  void* p = nullptr;
  OK(topsMalloc(&p, n));
  return p;
}

// Kernel: out[i] = 2 * in[i] for `count` floats; records that it ran.
struct Twice {
  size_t count;
  std::atomic<int>* ran;
  static void Run(void* arg, char* const* shadows) {
    auto* k = static_cast<Twice*>(arg);
    const float* in = reinterpret_cast<const float*>(shadows[0]);
    float* out = reinterpret_cast<float*>(shadows[1]);
    for (size_t i = 0; i < k->count; ++i) out[i] = 2 * in[i];
    k->ran->fetch_add(1);
    delete k;  // the kernel owns its argument once the launch succeeded
  }
};

// The kernel runs on the stream after earlier work (a gate, then the copy
// that fills its input) and before later work (the copy of its output).
void KernelStreamOrder() {
  const size_t count = 1000;
  std::vector<float> in(count), out(count, 0);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i) - 3.5f;
  void* a = DevAlloc(count * 4);
  void* b = DevAlloc(count * 4);
  topsStream_t s = nullptr;
  OK(topsStreamCreateWithFlags(&s, 1));
  std::atomic<bool> open{false};
  std::atomic<int> ran{0};
  OK(topsLaunchHostFunc(s, WaitOpen, &open));
  OK(topsMemcpyAsync(a, in.data(), count * 4, kH2D, s));
  const void* ptrs[] = {a, b};
  const size_t sizes[] = {count * 4, count * 4};
  OK(hvda_emu::RtLaunchKernel(s, Twice::Run, new Twice{count, &ran}, ptrs, sizes, 2));
  OK(topsMemcpyAsync(out.data(), b, count * 4, kD2H, s));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ran.load(), 0);  // the stream is still gated
  open = true;
  OK(topsStreamSynchronize(s));
  EXPECT_EQ(ran.load(), 1);
  bool right = true;
  for (size_t i = 0; i < count; ++i) right &= out[i] == 2 * in[i];
  EXPECT(right);
  OK(topsStreamDestroy(s));
  OK(topsFree(a));
  OK(topsFree(b));
}

void NeverRuns(void*, char* const*) { ++failures; }

// Each range is validated like a copy's device side; on failure nothing is
// enqueued. Empty ranges are not checked and get a null shadow.
void KernelValidation() {
  char host[64] = {};
  void* d = DevAlloc(64);
  const void* host_ptr[] = {host};
  const void* dev_ptr[] = {d};
  const size_t n8[] = {8};
  const size_t n65[] = {65};
  EXPECT_EQ(hvda_emu::RtLaunchKernel(nullptr, NeverRuns, nullptr, host_ptr, n8, 1),
            kInvalidValue);  // host memory
  EXPECT_EQ(hvda_emu::RtLaunchKernel(nullptr, NeverRuns, nullptr, dev_ptr, n65, 1),
            kInvalidValue);  // past the allocation's end
  EXPECT_EQ(hvda_emu::RtLaunchKernel(nullptr, nullptr, nullptr, dev_ptr, n8, 1), kInvalidValue);
  EXPECT_EQ(hvda_emu::RtLaunchKernel(nullptr, NeverRuns, nullptr, dev_ptr, n8, -1),
            kInvalidValue);
  EXPECT_EQ(hvda_emu::RtLaunchKernel(nullptr, NeverRuns, nullptr, nullptr, nullptr, 1),
            kInvalidValue);
  EXPECT_EQ(hvda_emu::RtLaunchKernel(host, NeverRuns, nullptr, dev_ptr, n8, 1),
            kInvalidValue);  // not a stream
  static char* seen[2];
  const void* mixed[] = {nullptr, d};
  const size_t mixed_sizes[] = {0, 64};
  OK(hvda_emu::RtLaunchKernel(
      nullptr, [](void*, char* const* shadows) { seen[0] = shadows[0], seen[1] = shadows[1]; },
      nullptr, mixed, mixed_sizes, 2));
  OK(hvda_emu::RtLaunchKernel(nullptr, [](void*, char* const*) {}, nullptr, nullptr, nullptr, 0));
  OK(topsStreamSynchronize(nullptr));
  EXPECT(seen[0] == nullptr);
  EXPECT(seen[1] != nullptr && seen[1] != static_cast<char*>(d));  // the shadow, not d
  OK(topsFree(d));
}

// Memory freed while a kernel using it is queued stays mapped until it ran.
void KernelKeepsMemory() {
  void* a = DevAlloc(4096);
  void* b = DevAlloc(4096);
  std::vector<float> in(1024, 1.5f), out(1024, 0);
  OK(topsMemcpy(a, in.data(), 4096, kH2D));
  topsStream_t s = nullptr;
  OK(topsStreamCreateWithFlags(&s, 1));
  std::atomic<bool> open{false};
  std::atomic<int> ran{0};
  OK(topsLaunchHostFunc(s, WaitOpen, &open));
  const void* ptrs[] = {a, b};
  const size_t sizes[] = {4096, 4096};
  OK(hvda_emu::RtLaunchKernel(s, Twice::Run, new Twice{1024, &ran}, ptrs, sizes, 2));
  OK(topsFree(a));  // both freed before the kernel ran
  OK(topsFree(b));
  open = true;
  OK(topsStreamSynchronize(s));  // a crash here would be the bug
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(topsMemcpy(out.data(), b, 4096, kD2H), kInvalidValue);  // freed for new work
  OK(topsStreamDestroy(s));
}

struct Counts {
  uint64_t v[4];
};

Counts ReadCounts() {
  Counts c;
  hvda_emu_copy_counts(c.v);
  return c;
}

// Host<->device copies through the synchronous and the asynchronous call,
// through both APIs' names, are counted when issued; device-to-device,
// host-to-host and rejected copies are not.
void CopyCounters() {
  std::vector<char> host(256, 1);
  void* d = DevAlloc(256);
  void* e = DevAlloc(256);
  const Counts before = ReadCounts();
  OK(topsMemcpy(d, host.data(), 100, kH2D));
  OK(cudaMemcpyAsync(d, host.data(), 28, kH2D, nullptr));
  OK(topsMemcpyAsync(host.data(), d, 64, kD2H, nullptr));
  OK(topsMemcpy(e, d, 256, kD2D));
  OK(cudaMemcpy(host.data() + 128, host.data(), 64, kH2H));
  EXPECT_EQ(topsMemcpy(host.data(), d, 300, kD2H), kInvalidValue);
  topsGetLastError();
  OK(topsStreamSynchronize(nullptr));
  const Counts after = ReadCounts();
  EXPECT_EQ(after.v[0] - before.v[0], 2u);
  EXPECT_EQ(after.v[1] - before.v[1], 128u);
  EXPECT_EQ(after.v[2] - before.v[2], 1u);
  EXPECT_EQ(after.v[3] - before.v[3], 64u);
  OK(topsFree(d));
  OK(topsFree(e));
}

struct Test {
  const char* name;
  void (*fn)();
};

const Test kTests[] = {
    {"kernel_stream_order", KernelStreamOrder},
    {"kernel_validation", KernelValidation},
    {"kernel_keeps_memory", KernelKeepsMemory},
    {"copy_counters", CopyCounters},
};

}  // namespace

int main() {
  alarm(60);  // a hang fails (SIGALRM) instead of stalling the suite
  int failed_tests = 0;
  for (const Test& t : kTests) {
    current_test = t.name;
    const int before = failures;
    t.fn();
    const bool ok = failures == before;
    failed_tests += ok ? 0 : 1;
    std::printf("[%s] %s\n", ok ? " OK " : "FAIL", t.name);
    std::fflush(stdout);
  }
  std::printf("%zu tests, %d failed\n", sizeof(kTests) / sizeof(kTests[0]), failed_tests);
  return failed_tests == 0 ? 0 : 1;
}
