// example_plugin_smoke PLUGIN_SO NRANKS
//
// A standalone multi-process test of the example plugin over its real TCP
// mesh, written (like the plugin) only against horovod_accel/plugin.h. The
// parent forks NRANKS ranks and waits for them (hard timeout); rank 0 hands
// each unique id to the others through pipes made before the fork. Each
// rank dlopens the plugin and checks: the tables, streams and events,
// kernels (where the plugin has them), every collective against exact
// expected values, then (NRANKS >= 2) a peer that stays silent (HVDA_TIMEOUT
// after the 5 s op timeout) and a peer that dies (an error, at once).
// Prints "example_plugin_smoke: OK" and exits 0 only if every check passed.
//
// The example device's memory is host memory, so the test fills and reads
// device buffers directly (after synchronizing), as the plugin allows.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "horovod_accel/plugin.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxRanks = 16;
constexpr double kOpTimeout = 5;  // seconds, for the failure tests

int g_rank = 0, g_nranks = 1, g_failures = 0;
int g_pipes[kMaxRanks][2];  // rank 0 writes ids to rank r through g_pipes[r]
const hvda_plugin_v1* g_plugin = nullptr;
const hvda_device_ops_v1* g_dev = nullptr;
const hvda_ccl_ops_v1* g_ccl = nullptr;
hvda_event_t g_event = nullptr;
std::vector<void*> g_allocs;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool Check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::fprintf(stderr, "example_plugin_smoke: rank %d: FAILED: %s\n", g_rank, what.c_str());
  }
  return ok;
}

bool Expect(hvda_status got, hvda_status want, const char* call) {
  return Check(got == want, std::string(call) + " returned " + std::to_string(got) + ", want " +
                                std::to_string(want) + " (last_error: " + g_plugin->last_error() + ")");
}
#define OK(call) Expect((call), HVDA_OK, #call)
#define EXPECT_STATUS(call, want) Expect((call), (want), #call)

const char* HostGetenv(const hvda_host_api_v1*, const char* name) { return ::getenv(name); }
void HostLog(const hvda_host_api_v1*, hvda_log_level level, const char* message) {
  if (level >= HVDA_LOG_INFO) std::fprintf(stderr, "[plugin log, rank %d] %s\n", g_rank, message);
}
const hvda_host_api_v1 g_host = {sizeof(hvda_host_api_v1), 1, 1, HostLog, HostGetenv};

int Device() { return g_rank % 4; }

template <typename T>
T* Alloc(size_t count) {
  void* p = nullptr;
  OK(g_dev->mem_alloc(Device(), count * sizeof(T), &p));
  g_allocs.push_back(p);
  return static_cast<T*>(p);
}

// Records the event after the work enqueued on `s` and waits for it.
hvda_status Finish(hvda_stream_t s) {
  OK(g_dev->event_record(g_event, s));
  return g_dev->event_synchronize(g_event);
}

// Polls the event until it is no longer NOT_READY (or `limit` seconds).
hvda_status PollEvent(hvda_event_t e, double limit) {
  Clock::time_point t0 = Clock::now();
  hvda_status s;
  while ((s = g_dev->event_query(e)) == HVDA_NOT_READY && Since(t0) < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return s;
}

void Sleep(void* ms) { std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(ms))); }
void Bump(void* counter) { ++*static_cast<int*>(counter); }

// ---------------------------------------------------------------- ids and communicators

std::vector<char> ShareId() {
  std::vector<char> id(g_ccl->unique_id_size());
  if (g_rank == 0) {
    OK(g_ccl->get_unique_id(id.data(), id.size()));
    for (int r = 1; r < g_nranks; ++r)
      Check(write(g_pipes[r][1], id.data(), id.size()) == static_cast<ssize_t>(id.size()), "write id");
  } else {
    size_t got = 0;
    while (got < id.size()) {
      ssize_t n = read(g_pipes[g_rank][0], id.data() + got, id.size() - got);
      if (!Check(n > 0, "read id (rank 0 gone?)")) break;
      got += static_cast<size_t>(n);
    }
  }
  return id;
}

bool HasV11Ccl() {
  return g_plugin->abi_minor >= 1 && HVDA_HAS_FIELD(g_ccl, hvda_ccl_ops_v1, comm_init_rank_config) &&
         g_ccl->comm_init_rank_config != nullptr && g_ccl->unique_id_release != nullptr;
}

// comm_init_rank_config with op_timeout where the plugin has it (else
// comm_init_rank: its op timeout is HOROVOD_ACCEL_TIMEOUT_SECONDS).
hvda_comm_t MakeComm(const std::vector<char>& id, bool config, double op_timeout) {
  hvda_comm_t comm = nullptr;
  if (config && HasV11Ccl()) {
    const hvda_comm_config_v1 cfg{sizeof(hvda_comm_config_v1), 60, op_timeout};
    OK(g_ccl->comm_init_rank_config(id.data(), id.size(), g_nranks, g_rank, Device(), &cfg, &comm));
  } else {
    OK(g_ccl->comm_init_rank(id.data(), id.size(), g_nranks, g_rank, Device(), 60, &comm));
  }
  if (g_rank == 0 && HasV11Ccl()) {  // exactly once per id
    OK(g_ccl->unique_id_release(id.data(), id.size()));
    EXPECT_STATUS(g_ccl->unique_id_release(id.data(), id.size()), HVDA_INVALID_ARGUMENT);
  }
  return comm;
}

// ---------------------------------------------------------------- local checks

void CheckTables(hvda_plugin_entry_v1 entry) {
  Check(std::strcmp(g_plugin->name, "example") == 0, "name is 'example'");
  Check(std::strcmp(g_plugin->device_type, "example") == 0, "device_type is 'example'");
  Check(g_plugin->abi_major == 1, "abi_major is 1");
  Check(entry(2, 0) == nullptr, "entry(2, 0) is NULL (no ABI 2)");
  const bool host_kernels_field = HVDA_HAS_FIELD(g_dev, hvda_device_ops_v1, memory_host_accessible);
  if (g_plugin->abi_minor >= 1) {  // the 1.1 build leaves the kernels to the core
    Check(host_kernels_field && g_dev->memory_host_accessible == 1, "memory_host_accessible == 1");
    Check(g_dev->scale == nullptr && g_dev->reduce_into == nullptr, "scale, reduce_into NULL");
    Check(HasV11Ccl(), "unique_id_release and comm_init_rank_config set");
    Check(entry(1, 0) == nullptr, "entry(1, 0) is NULL (this build needs a 1.1 core)");
  } else {  // the 1.0 build has kernels and none of the 1.1 fields
    Check(!host_kernels_field, "no memory_host_accessible in a 1.0 table");
    Check(g_dev->scale != nullptr && g_dev->reduce_into != nullptr, "scale, reduce_into set");
    Check(!HVDA_HAS_FIELD(g_ccl, hvda_ccl_ops_v1, unique_id_release), "no 1.1 ccl fields");
    Check(entry(1, 0) == g_plugin, "entry(1, 0) serves a 1.0 core");
  }
  Check(g_ccl->allgatherv == nullptr && g_ccl->alltoallv == nullptr, "allgatherv, alltoallv NULL");
}

void CheckDevice() {
  int count = 0;
  OK(g_dev->device_count(&count));
  Check(count == 4, "device_count is 4 (HOROVOD_EXAMPLE_DEVICE_COUNT unset)");
  OK(g_dev->set_device(Device()));
  EXPECT_STATUS(g_dev->set_device(count), HVDA_INVALID_ARGUMENT);
  void *a = nullptr, *b = nullptr;
  OK(g_dev->mem_alloc(Device(), 0, &a));
  OK(g_dev->mem_alloc(Device(), 0, &b));
  Check(a != nullptr && b != nullptr && a != b, "0-byte allocations are unique");
  Check(reinterpret_cast<uintptr_t>(a) % 64 == 0, "64-byte aligned");
  OK(g_dev->mem_free(Device(), a));
  OK(g_dev->mem_free(Device(), b));
}

void CheckStreams() {
  const size_t n = 1031;
  hvda_stream_t s = nullptr, s2 = nullptr, w1 = nullptr, w2 = nullptr;
  OK(g_dev->stream_create(Device(), &s));
  OK(g_dev->stream_create(Device(), &s2));
  uint8_t *a = Alloc<uint8_t>(n), *b = Alloc<uint8_t>(n), *c = Alloc<uint8_t>(200);
  int calls = 0;
  OK(g_dev->memset_async(a, 7, n, s));
  OK(g_dev->memcpy_async(b, a, n, HVDA_COPY_DEVICE_TO_DEVICE, s));
  const hvda_copy_desc copies[2] = {{c, a, 100}, {c + 100, b, 100}};
  OK(g_dev->batched_copy(copies, 2, s));
  OK(g_dev->launch_host_func(s, Bump, &calls));
  OK(Finish(s));
  OK(g_dev->stream_synchronize(s));
  Check(b[n - 1] == 7 && c[0] == 7 && c[199] == 7 && calls == 1, "memset, memcpy, batched_copy, host func");

  // The default stream: every wrap is a new handle whose work runs at once.
  EXPECT_STATUS(g_dev->stream_wrap(Device(), &calls, &w1), HVDA_INVALID_ARGUMENT);
  Check(std::strstr(g_plugin->last_error(), "no native streams") != nullptr, "wrap(non-NULL) says why");
  OK(g_dev->stream_wrap(Device(), nullptr, &w1));
  OK(g_dev->stream_wrap(Device(), nullptr, &w2));
  Check(w1 != w2, "each wrap is a new handle");
  OK(g_dev->memset_async(a, 3, n, w1));
  Check(a[0] == 3, "work on a wrapped NULL stream runs at once");
  OK(g_dev->event_record(g_event, w1));
  OK(g_dev->event_query(g_event));
  OK(g_dev->stream_destroy(w1));

  // stream_wait_event never blocks the host; the next work waits.
  int sleep_ms = 200;
  OK(g_dev->launch_host_func(s, Sleep, &sleep_ms));
  OK(g_dev->memset_async(a, 9, n, s));
  hvda_event_t e = nullptr;
  OK(g_dev->event_create(Device(), &e));
  OK(g_dev->event_record(e, s));
  Clock::time_point t0 = Clock::now();
  OK(g_dev->stream_wait_event(w2, e));
  Check(Since(t0) < 0.1, "stream_wait_event on the default stream does not block");
  OK(g_dev->memcpy_async(b, a, n, HVDA_COPY_DEVICE_TO_DEVICE, w2));
  Check(b[0] == 9 && b[n - 1] == 9, "work after stream_wait_event saw the other stream's work");

  // A wait waits for the record it saw, not for a later re-record.
  OK(g_dev->event_record(e, s));  // complete: s is idle
  OK(g_dev->event_synchronize(e));
  OK(g_dev->stream_wait_event(s2, e));
  sleep_ms = 600;
  OK(g_dev->launch_host_func(s, Sleep, &sleep_ms));
  OK(g_dev->event_record(e, s));  // re-recorded: pending for 600 ms
  EXPECT_STATUS(g_dev->event_query(e), HVDA_NOT_READY);
  t0 = Clock::now();
  OK(g_dev->memset_async(c, 1, 200, s2));
  OK(Finish(s2));
  Check(Since(t0) < 0.4, "a re-recorded event does not change an earlier wait");
  OK(g_dev->event_synchronize(e));
  OK(g_dev->event_destroy(e));
  for (hvda_stream_t x : {s, s2, w2}) OK(g_dev->stream_destroy(x));
}

// Test-side float16 codec for exactly representable normal values.
uint16_t Half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) == 0) return static_cast<uint16_t>(x >> 16);
  return static_cast<uint16_t>(((x >> 16) & 0x8000u) | ((((x >> 23) & 0xffu) - 112) << 10) |
                               ((x >> 13) & 0x3ffu));
}

void CheckKernels() {
  if (g_dev->scale == nullptr) return;  // the 1.1 build: the core's kernels
  hvda_stream_t s = nullptr;
  OK(g_dev->stream_create(Device(), &s));
  uint16_t *h = Alloc<uint16_t>(3), *h2 = Alloc<uint16_t>(3);
  int8_t* i8 = Alloc<int8_t>(2);
  int32_t* i32 = Alloc<int32_t>(2);
  uint8_t* bo = Alloc<uint8_t>(4);
  h[0] = Half(1.5f), h2[0] = Half(2.25f);   // float16
  h[1] = Half(2.25f), h2[1] = Half(-0.25f);
  h[2] = 0x3f80, h2[2] = 0x3b80;  // bfloat16 1 + 2^-8: a tie, rounds to even (1)
  i8[0] = 100, i8[1] = 100;
  i32[0] = -7, i32[1] = 7;
  bo[0] = 1, bo[1] = 0, bo[2] = 1, bo[3] = 0;
  OK(g_dev->reduce_into(h, h2, 2, HVDA_FLOAT16, HVDA_SUM, s));
  OK(g_dev->reduce_into(h + 2, h2 + 2, 1, HVDA_BFLOAT16, HVDA_SUM, s));
  OK(g_dev->reduce_into(i8, i8 + 1, 1, HVDA_INT8, HVDA_SUM, s));
  OK(g_dev->reduce_into(bo, bo + 2, 1, HVDA_BOOL, HVDA_SUM, s));       // 1 or 1
  OK(g_dev->reduce_into(bo + 1, bo + 2, 1, HVDA_BOOL, HVDA_PRODUCT, s));  // 0 and 1
  OK(g_dev->scale(i32, 2, HVDA_INT32, 0.5, s));
  OK(Finish(s));
  Check(h[0] == Half(3.75f) && h[1] == Half(2.0f), "reduce_into float16 Sum");
  Check(h[2] == 0x3f80, "reduce_into bfloat16 Sum rounds ties to even");
  Check(i8[0] == -56, "reduce_into int8 Sum wraps");
  Check(bo[0] == 1 && bo[1] == 0, "reduce_into bool Sum = or, Product = and");
  Check(i32[0] == -3 && i32[1] == 3, "scale int32 truncates toward zero");
  EXPECT_STATUS(g_dev->reduce_into(h, h2, 1, HVDA_FLOAT16, HVDA_AVERAGE, s), HVDA_UNSUPPORTED);
  OK(g_dev->stream_destroy(s));
}

void CheckSupports() {
  const bool v11 = g_plugin->abi_minor >= 1;
  Check(g_ccl->supports(HVDA_COLL_ALLREDUCE, HVDA_FLOAT32, HVDA_SUM) == 1, "supports allreduce f32 Sum");
  Check(g_ccl->supports(HVDA_COLL_REDUCESCATTER, HVDA_BFLOAT16, HVDA_PRODUCT) == 1, "supports rs bf16");
  Check(g_ccl->supports(HVDA_COLL_ALLREDUCE, HVDA_BOOL, HVDA_MIN) == 1, "supports allreduce bool Min");
  Check(g_ccl->supports(HVDA_COLL_ALLREDUCE, HVDA_FLOAT32, HVDA_AVERAGE) == 0, "no Average");
  Check(g_ccl->supports(HVDA_COLL_ALLREDUCE, static_cast<hvda_dtype>(10), HVDA_SUM) == (v11 ? 1 : 0),
        "uint16 (10) only in the 1.1 build");
  Check(g_ccl->supports(HVDA_COLL_ALLREDUCE, static_cast<hvda_dtype>(11), HVDA_SUM) == 0, "dtype 11");
  Check(g_ccl->supports(HVDA_COLL_ALLGATHER, HVDA_UINT8, HVDA_SUM) == 1, "supports allgather u8");
  Check(g_ccl->supports(HVDA_COLL_BROADCAST, HVDA_FLOAT32, HVDA_SUM) == 0, "broadcast: uint8 only");
  Check(g_ccl->supports(HVDA_COLL_SEND_RECV, HVDA_UINT8, HVDA_SUM) == 1, "supports send/recv u8");
  Check(g_ccl->supports(HVDA_COLL_ALLTOALL, HVDA_UINT8, HVDA_SUM) == 0, "no alltoall");
  Check(g_ccl->supports(HVDA_COLL_BARRIER, HVDA_INT32, HVDA_SUM) == 0, "no barrier");
}

// ---------------------------------------------------------------- collectives

const char* OpName(hvda_reduce_op op) {
  return op == HVDA_SUM ? "Sum" : op == HVDA_MIN ? "Min" : op == HVDA_MAX ? "Max" : "Product";
}

// Rank r contributes Input(op, r, i); Expected is the exact result.
double Input(hvda_reduce_op op, int r, size_t i) {
  return op == HVDA_PRODUCT ? static_cast<double>((i + r) % 3 + 1) : static_cast<double>(i % 7 + r);
}
double Expected(hvda_reduce_op op, size_t i) {
  const int n = g_nranks;
  switch (op) {
    case HVDA_SUM: return n * static_cast<double>(i % 7) + n * (n - 1) / 2;
    case HVDA_MIN: return static_cast<double>(i % 7);
    case HVDA_MAX: return static_cast<double>(i % 7 + n - 1);
    default: {
      double p = 1;
      for (int r = 0; r < n; ++r) p *= Input(HVDA_PRODUCT, r, i);
      return p;
    }
  }
}

// Counts mismatches of buf against want(i); reports the first.
template <typename T, typename Want>
void CheckValues(const T* buf, size_t count, Want want, const std::string& what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < count; ++i)
    if (static_cast<double>(buf[i]) != want(i) && bad++ == 0) first = i;
  if (bad > 0)
    Check(false, what + ": " + std::to_string(bad) + " wrong values, first [" + std::to_string(first) +
                     "] = " + std::to_string(static_cast<double>(buf[first])) + ", want " +
                     std::to_string(want(first)));
}

template <typename T>
void AllreduceCase(hvda_comm_t comm, hvda_stream_t s, hvda_dtype dtype, const char* name,
                   size_t count, bool in_place) {
  T* send = Alloc<T>(count);
  T* recv = in_place ? send : Alloc<T>(count);
  for (hvda_reduce_op op : {HVDA_SUM, HVDA_MIN, HVDA_MAX, HVDA_PRODUCT}) {
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<T>(Input(op, g_rank, i));
    OK(g_ccl->allreduce(send, recv, count, dtype, op, comm, s));
    OK(Finish(s));
    CheckValues(recv, count, [op](size_t i) { return Expected(op, i); },
                std::string("allreduce ") + name + " " + OpName(op) + " of " + std::to_string(count) +
                    (in_place ? " in place" : ""));
  }
}

void CheckCollectives(hvda_comm_t comm, hvda_stream_t s) {
  const int n = g_nranks, me = g_rank;
  const size_t kOdd = 1031, kLarge = 3 * 1000 * 1000 + 17;
  AllreduceCase<float>(comm, s, HVDA_FLOAT32, "float32", kOdd, false);
  AllreduceCase<int32_t>(comm, s, HVDA_INT32, "int32", kOdd, false);
  AllreduceCase<float>(comm, s, HVDA_FLOAT32, "float32", kLarge, true);
  AllreduceCase<int32_t>(comm, s, HVDA_INT32, "int32", kLarge, true);

  uint16_t* h = Alloc<uint16_t>(kOdd);  // float16 Sum, values exact in float16
  for (size_t i = 0; i < kOdd; ++i) h[i] = Half(0.5f * (i % 5) + me);
  OK(g_ccl->allreduce(h, h, kOdd, HVDA_FLOAT16, HVDA_SUM, comm, s));
  OK(Finish(s));
  size_t bad = 0;
  for (size_t i = 0; i < kOdd; ++i) bad += h[i] != Half(0.5f * n * (i % 5) + n * (n - 1) / 2);
  Check(bad == 0, "allreduce float16 Sum: " + std::to_string(bad) + " wrong values");

  float* none = Alloc<float>(0);  // a 0-element allreduce completes
  OK(g_ccl->allreduce(none, none, 0, HVDA_FLOAT32, HVDA_SUM, comm, s));
  OK(Finish(s));

  uint8_t* a = Alloc<uint8_t>(kOdd);  // broadcast from the last rank, out of place and in place
  uint8_t* b = Alloc<uint8_t>(kOdd);
  for (size_t i = 0; i < kOdd; ++i) a[i] = me == n - 1 ? static_cast<uint8_t>(i * 13 + 5) : 0, b[i] = 0;
  OK(g_ccl->broadcast(a, b, kOdd, HVDA_UINT8, n - 1, comm, s));
  OK(g_ccl->broadcast(a, a, kOdd, HVDA_UINT8, n - 1, comm, s));
  OK(Finish(s));
  auto bcast = [](size_t i) { return static_cast<double>(static_cast<uint8_t>(i * 13 + 5)); };
  CheckValues(b, kOdd, bcast, "broadcast from the last rank");
  CheckValues(a, kOdd, bcast, "broadcast from the last rank, in place");

  uint8_t* all = Alloc<uint8_t>(kOdd * n);  // allgather
  for (size_t i = 0; i < kOdd; ++i) a[i] = static_cast<uint8_t>(me * 31 + i);
  OK(g_ccl->allgather(a, all, kOdd, HVDA_UINT8, comm, s));
  OK(Finish(s));
  CheckValues(all, kOdd * n, [](size_t i) { return static_cast<double>(static_cast<uint8_t>((i / 1031) * 31 + i % 1031)); },
              "allgather");

  float* rs = Alloc<float>(kOdd * n);  // reduce_scatter: rank p gets segment p
  float* mine = Alloc<float>(kOdd);
  for (hvda_reduce_op op : {HVDA_SUM, HVDA_MAX}) {
    for (size_t j = 0; j < kOdd * n; ++j) rs[j] = static_cast<float>(me + j / kOdd + (j % kOdd) % 5);
    OK(g_ccl->reduce_scatter(rs, mine, kOdd, HVDA_FLOAT32, op, comm, s));
    OK(Finish(s));
    CheckValues(mine, kOdd, [op, n, me](size_t i) {
      double base = me + static_cast<double>(i % 5);
      return op == HVDA_SUM ? n * base + n * (n - 1) / 2 : base + n - 1;
    }, std::string("reduce_scatter ") + OpName(op));
  }

  // alltoall as the core composes it: per peer in rank order a send then a
  // recv, own block copied with memcpy_async; small and large blocks.
  for (size_t block : {kOdd, size_t{4} << 20}) {
    uint8_t* out = Alloc<uint8_t>(block * n);
    uint8_t* in = Alloc<uint8_t>(block * n);
    for (int q = 0; q < n; ++q) std::memset(out + q * block, me * 16 + q, block);
    OK(g_dev->memcpy_async(in + me * block, out + me * block, block, HVDA_COPY_DEVICE_TO_DEVICE, s));
    OK(g_ccl->group_start());
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      OK(g_ccl->send(out + q * block, block, HVDA_UINT8, q, comm, s));
      OK(g_ccl->recv(in + q * block, block, HVDA_UINT8, q, comm, s));
    }
    OK(g_ccl->group_end());
    OK(Finish(s));
    CheckValues(in, block * n, [block, me](size_t i) { return static_cast<double>(static_cast<uint8_t>((i / block) * 16 + me)); },
                "alltoall (grouped send/recv) of " + std::to_string(block) + "-byte blocks");
  }
  OK(g_ccl->group_start());  // a self peer is refused; group_end still fine
  EXPECT_STATUS(g_ccl->send(a, 1, HVDA_UINT8, me, comm, s), HVDA_INVALID_ARGUMENT);
  OK(g_ccl->group_end());
  EXPECT_STATUS(g_ccl->send(a, 1, HVDA_UINT8, (me + 1) % n, comm, s), HVDA_INVALID_ARGUMENT);

  // Uneven allgather as grouped broadcasts: roots 0..n-1, own counts.
  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (int q = 0; q < n; ++q) counts[q] = 100 + 37 * q, displs[q] = total, total += counts[q];
  uint8_t* gathered = Alloc<uint8_t>(total);
  uint8_t* own = Alloc<uint8_t>(counts[me]);
  for (size_t i = 0; i < counts[me]; ++i) own[i] = static_cast<uint8_t>(me * 7 + i);
  OK(g_ccl->group_start());
  for (int q = 0; q < n; ++q)
    OK(g_ccl->broadcast(q == me ? own : gathered + displs[q], gathered + displs[q], counts[q], HVDA_UINT8, q, comm, s));
  OK(g_ccl->group_end());
  OK(Finish(s));
  for (int q = 0; q < n; ++q)
    CheckValues(gathered + displs[q], counts[q], [q](size_t i) { return static_cast<double>(static_cast<uint8_t>(q * 7 + i)); },
                "grouped broadcast from root " + std::to_string(q));
}

// ---------------------------------------------------------------- failures

// The last rank joins a communicator but stays silent: the others' allreduce
// must fail with HVDA_TIMEOUT after the 5 s op timeout, not hang.
// Returns the id of the next communicator (the silent rank must not leave
// before the others saw their timeout: it waits for that id first).
std::vector<char> CheckSilentPeer() {
  const bool silent = g_rank == g_nranks - 1;
  hvda_comm_t comm = MakeComm(ShareId(), true, kOpTimeout);
  const Clock::time_point t0 = Clock::now();
  if (silent) {
    std::vector<char> next = ShareId();  // comes once rank 0 saw its timeout
    std::this_thread::sleep_until(t0 + std::chrono::seconds(8));  // and the others too
    OK(g_ccl->comm_destroy(comm));
    return next;
  }
  hvda_stream_t s = nullptr, s2 = nullptr;
  OK(g_dev->stream_create(Device(), &s));
  OK(g_dev->stream_create(Device(), &s2));
  float* buf = Alloc<float>(1031);
  OK(g_ccl->allreduce(buf, buf, 1031, HVDA_FLOAT32, HVDA_SUM, comm, s));
  OK(g_dev->event_record(g_event, s));
  const hvda_status st = PollEvent(g_event, 20);
  const double took = Since(t0);
  Check(st == HVDA_TIMEOUT, "silent peer: event reports HVDA_TIMEOUT, got " + std::to_string(st) +
                                " (" + g_plugin->last_error() + ")");
  Check(took > kOpTimeout - 0.5 && took < kOpTimeout + 2, "silent peer: timed out after " + std::to_string(took) + " s");
  EXPECT_STATUS(g_dev->event_synchronize(g_event), HVDA_TIMEOUT);  // sticky
  EXPECT_STATUS(g_dev->stream_synchronize(s), HVDA_TIMEOUT);
  EXPECT_STATUS(g_ccl->comm_get_async_error(comm), HVDA_TIMEOUT);
  OK(g_ccl->allreduce(buf, buf, 1031, HVDA_FLOAT32, HVDA_SUM, comm, s2));  // later work fails at once
  Clock::time_point t1 = Clock::now();
  Check(Finish(s2) != HVDA_OK && Since(t1) < 1, "after a timeout, later collectives fail at once");
  t1 = Clock::now();
  OK(g_ccl->comm_abort(comm));
  OK(g_ccl->comm_destroy(comm));
  OK(g_dev->stream_destroy(s));
  OK(g_dev->stream_destroy(s2));
  Check(Since(t1) < 1, "abort, destroy return promptly");
  return ShareId();
}

// The last rank _exit()s while the others are inside an allreduce: they
// must see an error well within the op timeout (the connection closes).
void CheckLostPeer(hvda_comm_t comm) {
  if (g_rank == g_nranks - 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::fflush(nullptr);
    _exit(g_failures == 0 ? 0 : 1);
  }
  hvda_stream_t s = nullptr;
  OK(g_dev->stream_create(Device(), &s));
  float* buf = Alloc<float>(1 << 20);
  const Clock::time_point t0 = Clock::now();
  OK(g_ccl->allreduce(buf, buf, 1 << 20, HVDA_FLOAT32, HVDA_SUM, comm, s));
  OK(g_dev->event_record(g_event, s));
  const hvda_status st = PollEvent(g_event, 20);
  const double took = Since(t0);
  Check(st != HVDA_OK && st != HVDA_NOT_READY, "lost peer: event reports an error, got " +
                                                   std::to_string(st));
  Check(took < kOpTimeout, "lost peer: reported after " + std::to_string(took) + " s");
  Check(g_ccl->comm_get_async_error(comm) != HVDA_OK, "lost peer: comm_get_async_error not OK");
  const Clock::time_point t1 = Clock::now();
  OK(g_ccl->comm_abort(comm));
  OK(g_ccl->comm_destroy(comm));
  OK(g_dev->stream_destroy(s));
  Check(Since(t1) < 1, "lost peer: abort, destroy return promptly");
}

// ---------------------------------------------------------------- one rank

int RunRank(const char* so) {
  for (int r = 0; r < g_nranks; ++r) {  // keep only this rank's pipe ends
    if (g_rank != 0) close(g_pipes[r][1]);
    if (r != g_rank || r == 0) close(g_pipes[r][0]);
  }
  void* lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return Check(false, std::string("dlopen: ") + dlerror()), 1;
  auto entry = reinterpret_cast<hvda_plugin_entry_v1>(dlsym(lib, HVDA_PLUGIN_ENTRY_V1));
  if (!Check(entry != nullptr, "no symbol " HVDA_PLUGIN_ENTRY_V1)) return 1;
  g_plugin = entry(1, 1);
  if (!Check(g_plugin != nullptr, "entry(1, 1) returned NULL")) return 1;
  g_dev = g_plugin->device;
  g_ccl = g_plugin->ccl;
  CheckTables(entry);
  if (!OK(g_plugin->probe(&g_host)) || !OK(g_plugin->init(&g_host))) return 1;
  OK(g_dev->event_create(Device(), &g_event));

  CheckDevice();
  CheckStreams();
  CheckKernels();
  CheckSupports();

  hvda_stream_t s = nullptr;
  OK(g_dev->stream_create(Device(), &s));
  hvda_comm_t comm = MakeComm(ShareId(), true, 60);
  CheckCollectives(comm, s);
  OK(g_ccl->comm_destroy(comm));
  OK(g_dev->stream_destroy(s));

  if (g_nranks >= 2) {
    std::vector<char> next_id = CheckSilentPeer();
    CheckLostPeer(MakeComm(next_id, false, kOpTimeout));  // the last rank _exit()s in there
  }
  OK(g_dev->event_destroy(g_event));
  for (void* p : g_allocs) OK(g_dev->mem_free(Device(), p));
  OK(g_plugin->finalize());
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::atoi(argv[2]) < 1 || std::atoi(argv[2]) > kMaxRanks) {
    std::fprintf(stderr, "usage: example_plugin_smoke PLUGIN_SO NRANKS (1..%d)\n", kMaxRanks);
    return 2;
  }
  g_nranks = std::atoi(argv[2]);
  // The op timeout of comm_init_rank (no config), which the ABI 1.0 build reads.
  setenv("HOROVOD_ACCEL_TIMEOUT_SECONDS", "5", 1);
  for (int r = 0; r < g_nranks; ++r)
    if (pipe(g_pipes[r]) != 0) return 2;
  std::vector<pid_t> pids;
  for (int r = 0; r < g_nranks; ++r) {
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      g_rank = r;
      int code = RunRank(argv[1]);
      std::fflush(nullptr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < g_nranks; ++r) close(g_pipes[r][0]), close(g_pipes[r][1]);

  // Wait for every rank, at most 120 s; then kill what is left.
  int failed = 0, left = g_nranks;
  const Clock::time_point t0 = Clock::now();
  while (left > 0 && Since(t0) < 120) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int r = 0; r < g_nranks; ++r) {
      if (pids[r] != pid) continue;
      pids[r] = -1;
      --left;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ++failed;
        std::fprintf(stderr, "example_plugin_smoke: rank %d failed (%s %d)\n", r,
                     WIFEXITED(status) ? "exit" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      }
    }
  }
  for (int r = 0; r < g_nranks; ++r) {
    if (pids[r] <= 0) continue;
    std::fprintf(stderr, "example_plugin_smoke: rank %d still running after 120 s: killed\n", r);
    kill(pids[r], SIGKILL);
    waitpid(pids[r], nullptr, 0);
    ++failed;
  }
  if (failed != 0) {
    std::printf("example_plugin_smoke: FAILED (%d of %d ranks)\n", failed, g_nranks);
    return 1;
  }
  std::printf("example_plugin_smoke: OK\n");
  return 0;
}
