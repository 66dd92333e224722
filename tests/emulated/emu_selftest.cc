// Self-test of the emulated runtimes (TOPS names mostly, CUDA where they
// differ): device memory, copies, memset, streams, events, host functions,
// and the guards that make plugin bugs visible - a missing stream wait reads
// stale data, a host dereference of device memory crashes.
//
// Usage: emu_selftest [test-name...]   (no name: all; exit status 1 on a
// failure). A test needing other knobs re-executes this program as a child
// with `--child NAME` and the knob in its environment. Every run is bounded
// by alarm().
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu_expect.h"
#include "emu_vendor_api.h"

namespace {

constexpr int kInvalidValue = 1;
constexpr int kNotReady = 600;
enum { kH2H = 0, kH2D = 1, kD2H = 2, kD2D = 3 };

using emu_test::current_test;
using emu_test::failures;

// A stream gate: a host function that blocks its stream until Open().
struct Gate {
  std::mutex mu;
  bool open = false;
  static void Wait(void* arg) {
    auto* g = static_cast<Gate*>(arg);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(g->mu);
        if (g->open) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
  }
};

void* DevAlloc(size_t n) {
  void* p = nullptr;
  OK(topsMalloc(&p, n));
  return p;
}

// Runs this program as `--child name` with env_kv set; returns its status.
int RunChild(const char* name, const char* env_kv) {
  const pid_t pid = fork();
  if (pid == 0) {
    putenv(const_cast<char*>(env_kv));
    execl("/proc/self/exe", "emu_selftest", "--child", name, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// ------------------------------------------------------------------ tests

void MemoryRoundTrip() {
  const size_t n = 3 * 4096 + 17;
  std::vector<unsigned char> in(n), out(n, 0);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<unsigned char>(i * 7 + 1);
  char* a = static_cast<char*>(DevAlloc(n));
  char* b = static_cast<char*>(DevAlloc(n + 100));
  OK(topsMemcpy(a, in.data(), n, kH2D));
  OK(topsMemcpy(b + 100, a, n, kD2D));  // a pointer into the middle of an allocation
  OK(topsMemcpy(out.data(), b + 100, n, kD2H));
  EXPECT(out == in);
  std::vector<unsigned char> host_copy(n);
  OK(topsMemcpy(host_copy.data(), in.data(), n, kH2H));
  EXPECT(host_copy == in);
  // 0-byte allocations: unique, freeable.
  void* z1 = DevAlloc(0);
  void* z2 = DevAlloc(0);
  EXPECT(z1 != nullptr && z2 != nullptr && z1 != z2);
  OK(topsFree(z1));
  OK(topsFree(z2));
  EXPECT_EQ(topsFree(b + 100), kInvalidValue);  // not the start of an allocation
  OK(topsFree(a));
  OK(topsFree(b));
  EXPECT_EQ(topsFree(a), kInvalidValue);  // double free
  OK(topsFree(nullptr));
  // Pinned host memory is host memory.
  void* pinned = nullptr;
  OK(topsHostMalloc(&pinned, 64, 0));
  std::memset(pinned, 5, 64);
  char* d = static_cast<char*>(DevAlloc(64));
  OK(topsMemcpy(d, pinned, 64, kH2D));
  OK(topsHostFree(pinned));
  EXPECT_EQ(topsHostFree(d), kInvalidValue);
  OK(topsFree(d));
}

void PointerValidation() {
  char host[64] = {};
  char* d = static_cast<char*>(DevAlloc(64));
  EXPECT_EQ(topsMemcpy(host, d, 64, kH2D), kInvalidValue);  // dst is host memory
  EXPECT_EQ(topsMemcpy(d, host, 64, kD2H), kInvalidValue);  // src is host memory
  EXPECT_EQ(topsMemcpy(d, d, 64, kH2H), kInvalidValue);     // device memory as host memory
  EXPECT_EQ(topsMemcpy(d, host, 65, kH2D), kInvalidValue);  // past the allocation's end
  EXPECT_EQ(topsMemcpy(d, host, 8, 7), kInvalidValue);      // unknown kind
  EXPECT_EQ(topsMemsetAsync(host, 0, 8, nullptr), kInvalidValue);
  EXPECT_EQ(topsMemcpyAsync(d, host, 8, kH2D, reinterpret_cast<topsStream_t>(host)),
            kInvalidValue);  // not a stream
  OK(topsMemcpy(d, host, 0, kH2D));  // 0 bytes: nothing to check
  EXPECT(std::strstr(topsGetErrorString(kInvalidValue), "InvalidValue") != nullptr);
  EXPECT(std::strstr(cudaGetErrorString(kNotReady), "NotReady") != nullptr);
  EXPECT_EQ(topsGetLastError(), kInvalidValue);  // the last failure is remembered
  OK(topsGetLastError());                        // and cleared by reading it
  OK(topsFree(d));
}

void MemsetAsync() {
  topsStream_t s;
  OK(topsStreamCreateWithFlags(&s, 1));
  char* d = static_cast<char*>(DevAlloc(1000));
  OK(topsMemsetAsync(d, 0x5a, 1000, s));
  OK(topsMemsetAsync(d + 10, 0x11, 5, s));
  char out[1000];
  OK(topsMemcpyAsync(out, d, 1000, kD2H, s));
  OK(topsStreamSynchronize(s));
  EXPECT(out[0] == 0x5a && out[9] == 0x5a && out[10] == 0x11 && out[14] == 0x11 &&
         out[15] == 0x5a && out[999] == 0x5a);
  OK(topsStreamDestroy(s));
  OK(topsFree(d));
}

std::mutex order_mu;
std::vector<int> order;
std::thread::id host_fn_thread;
void Append(void* arg) {
  std::lock_guard<std::mutex> lock(order_mu);
  order.push_back(static_cast<int>(reinterpret_cast<intptr_t>(arg)));
  host_fn_thread = std::this_thread::get_id();
}

void HostFuncOrdering() {
  topsStream_t s;
  OK(topsStreamCreateWithFlags(&s, 0));
  order.clear();
  char* d = static_cast<char*>(DevAlloc(8));
  for (intptr_t i = 0; i < 20; ++i) {
    OK(topsLaunchHostFunc(s, Append, reinterpret_cast<void*>(i)));
    if (i % 5 == 0) OK(topsMemsetAsync(d, static_cast<int>(i), 8, s));
  }
  OK(topsStreamSynchronize(s));
  std::vector<int> want;
  for (int i = 0; i < 20; ++i) want.push_back(i);
  EXPECT(order == want);
  EXPECT(host_fn_thread != std::this_thread::get_id());
  OK(topsStreamDestroy(s));
  OK(topsFree(d));
}

void CrossStreamEvents() {
  topsStream_t a, b;
  topsEvent_t e, never;
  OK(topsStreamCreateWithFlags(&a, 1));
  OK(topsStreamCreateWithFlags(&b, 1));
  OK(topsEventCreateWithFlags(&e, 2));
  OK(topsEventCreateWithFlags(&never, 2));
  OK(topsEventQuery(never));  // never recorded: complete
  Gate gate;
  char* d = static_cast<char*>(DevAlloc(256));
  OK(topsMemsetAsync(d, 1, 256, nullptr));
  OK(topsStreamSynchronize(nullptr));
  OK(topsLaunchHostFunc(a, Gate::Wait, &gate));
  OK(topsMemsetAsync(d, 9, 256, a));
  OK(topsEventRecord(e, a));
  OK(topsStreamWaitEvent(b, e, 0));
  char out[256] = {};
  OK(topsMemcpyAsync(out, d, 256, kD2H, b));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(out[0], 0);  // b is held behind a's gate, without blocking the host
  gate.Open();
  OK(topsStreamSynchronize(b));
  EXPECT(out[0] == 9 && out[255] == 9);
  OK(topsEventSynchronize(e));
  OK(topsEventQuery(e));
  EXPECT_EQ(topsStreamWaitEvent(b, e, 1), kInvalidValue);  // flags must be 0
  OK(topsEventDestroy(e));
  OK(topsEventDestroy(never));
  EXPECT_EQ(topsEventDestroy(e), kInvalidValue);
  OK(topsStreamDestroy(a));
  OK(topsStreamDestroy(b));
  EXPECT_EQ(topsGetLastError(), kInvalidValue);  // from the destroyed event
  OK(topsFree(d));
}

void StickyNotReady() {
  topsGetLastError();  // start clean
  for (int api = 0; api < 2; ++api) {  // 0: TOPS (sticky), 1: CUDA (not)
    Gate gate;
    void* s = nullptr;
    void* e = nullptr;
    if (api == 0) {
      OK(topsStreamCreateWithFlags(reinterpret_cast<topsStream_t*>(&s), 1));
      OK(topsEventCreateWithFlags(reinterpret_cast<topsEvent_t*>(&e), 2));
      OK(topsLaunchHostFunc(static_cast<topsStream_t>(s), Gate::Wait, &gate));
      OK(topsEventRecord(static_cast<topsEvent_t>(e), static_cast<topsStream_t>(s)));
      EXPECT_EQ(topsEventQuery(static_cast<topsEvent_t>(e)), kNotReady);
      EXPECT_EQ(topsGetLastError(), kNotReady);
      OK(topsGetLastError());
    } else {
      OK(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(&s), 1));
      OK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&e), 2));
      OK(cudaLaunchHostFunc(static_cast<cudaStream_t>(s), Gate::Wait, &gate));
      OK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
      EXPECT_EQ(cudaEventQuery(static_cast<cudaEvent_t>(e)), kNotReady);
      OK(cudaGetLastError());
    }
    gate.Open();
    OK(topsEventSynchronize(static_cast<topsEvent_t>(e)));  // one runtime under both names
    OK(topsEventQuery(static_cast<topsEvent_t>(e)));
    OK(topsEventDestroy(static_cast<topsEvent_t>(e)));
    OK(topsStreamDestroy(static_cast<topsStream_t>(s)));
  }
}

std::atomic<bool> drained{false};
void SlowSet(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  drained = true;
}

void DestroyDrains() {
  topsStream_t s;
  OK(topsStreamCreateWithFlags(&s, 1));
  drained = false;
  OK(topsLaunchHostFunc(s, SlowSet, nullptr));
  OK(topsStreamDestroy(s));
  EXPECT(drained.load());
  EXPECT_EQ(topsStreamSynchronize(s), kInvalidValue);  // the handle is gone
  // Freeing memory that queued work still uses is safe: it stays mapped.
  Gate gate;
  OK(topsStreamCreateWithFlags(&s, 1));
  char* d = static_cast<char*>(DevAlloc(1 << 20));
  OK(topsLaunchHostFunc(s, Gate::Wait, &gate));
  OK(topsMemsetAsync(d, 3, 1 << 20, s));
  OK(topsFree(d));
  gate.Open();
  OK(topsStreamDestroy(s));
}

void DevicesPerThread() {
  int count = 0;
  OK(topsGetDeviceCount(&count));
  EXPECT(count >= 2);
  EXPECT_EQ(topsSetDevice(count), kInvalidValue);
  EXPECT_EQ(topsGetLastError(), kInvalidValue);
  OK(topsSetDevice(1));
  int other = -1;
  std::thread([&] { topsGetDevice(&other); }).join();
  EXPECT_EQ(other, 0);  // the current device is per thread
  // Each device has its own default (NULL) stream: device 0's, held by a
  // gate, does not hold device 1's.
  Gate gate;
  OK(topsSetDevice(0));
  OK(topsLaunchHostFunc(nullptr, Gate::Wait, &gate));
  OK(topsSetDevice(1));
  OK(topsStreamSynchronize(nullptr));
  int dev = -1;
  OK(topsGetDevice(&dev));
  EXPECT_EQ(dev, 1);
  gate.Open();
  OK(topsSetDevice(0));
  OK(topsStreamSynchronize(nullptr));
}

// GUARD (a), run as a child with HVDA_EMU_STREAM_DELAY_US=100000: stream A
// has three memsets queued (done after ~300 ms), stream B copies the buffer
// out at ~100 ms. Without a wait B reads stale data; with it, A's result.
void MissingWaitChild() {
  topsStream_t a, b;
  topsEvent_t e;
  OK(topsStreamCreateWithFlags(&a, 1));
  OK(topsStreamCreateWithFlags(&b, 1));
  OK(topsEventCreateWithFlags(&e, 2));
  char* d = static_cast<char*>(DevAlloc(4096));
  OK(topsMemsetAsync(d, 0, 4096, a));
  OK(topsStreamSynchronize(a));
  unsigned char out[4096];
  for (int value = 1; value <= 3; ++value) OK(topsMemsetAsync(d, value, 4096, a));
  OK(topsMemcpyAsync(out, d, 4096, kD2H, b));  // BUG on purpose: no wait for a
  OK(topsStreamSynchronize(b));
  EXPECT(out[0] != 3);  // stale: the guard caught the missing wait
  OK(topsStreamSynchronize(a));
  for (int value = 4; value <= 6; ++value) OK(topsMemsetAsync(d, value, 4096, a));
  OK(topsEventRecord(e, a));
  OK(topsStreamWaitEvent(b, e, 0));
  OK(topsMemcpyAsync(out, d, 4096, kD2H, b));
  OK(topsStreamSynchronize(b));
  EXPECT(out[0] == 6 && out[4095] == 6);
  OK(topsEventDestroy(e));
  OK(topsStreamDestroy(a));
  OK(topsStreamDestroy(b));
  OK(topsFree(d));
}

void GuardMissingWait() {
  const int status = RunChild("missing_wait", "HVDA_EMU_STREAM_DELAY_US=100000");
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// GUARD (b): a host dereference of a device pointer crashes.
void GuardHostDereference() {
  char* d = static_cast<char*>(DevAlloc(4096));
  for (char* p : {d, d + 4095}) {
    const pid_t pid = fork();
    if (pid == 0) {
      const char c = *static_cast<volatile char*>(p);
      _exit(c == 0 ? 0 : 1);  // not reached when the guard works
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
  }
  OK(topsFree(d));
}

struct Test {
  const char* name;
  void (*fn)();
};

const Test kTests[] = {
    {"memory_round_trip", MemoryRoundTrip},   {"pointer_validation", PointerValidation},
    {"memset_async", MemsetAsync},            {"host_func_ordering", HostFuncOrdering},
    {"cross_stream_events", CrossStreamEvents}, {"sticky_not_ready", StickyNotReady},
    {"destroy_drains", DestroyDrains},        {"devices_per_thread", DevicesPerThread},
    {"guard_missing_wait", GuardMissingWait}, {"guard_host_dereference", GuardHostDereference},
};

}  // namespace

int main(int argc, char** argv) {
  alarm(60);  // a hang fails (SIGALRM) instead of stalling the suite
  if (argc == 3 && std::strcmp(argv[1], "--child") == 0) {
    current_test = argv[2];
    if (std::strcmp(argv[2], "missing_wait") == 0) MissingWaitChild();
    return failures == 0 ? 0 : 1;
  }
  int failed_tests = 0;
  int ran = 0;
  for (const Test& t : kTests) {
    bool selected = argc == 1;
    for (int i = 1; i < argc; ++i) selected |= std::strcmp(argv[i], t.name) == 0;
    if (!selected) continue;
    current_test = t.name;
    const int before = failures;
    t.fn();
    ++ran;
    const bool ok = failures == before;
    failed_tests += ok ? 0 : 1;
    std::printf("[%s] %s\n", ok ? " OK " : "FAIL", t.name);
    std::fflush(stdout);
  }
  std::printf("%d tests, %d failed\n", ran, failed_tests);
  return failed_tests == 0 && ran > 0 ? 0 : 1;
}
