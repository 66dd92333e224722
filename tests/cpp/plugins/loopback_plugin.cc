// A functional test plugin for ranks that are threads of one process (the
// C++ multi-rank harness): host memory, streams as worker threads that run
// their queue in order, events as stream positions, and collectives that
// meet in a process-local rendezvous keyed by the unique id. It exercises the
// HAL over a plugin (csrc/common/plugin/plugin_device.*, plugin_backend.*)
// and the executor over the real ABI; the emulated vendor stack (later)
// does the same across processes with vendor names. Kernels and reductions cover uint8, int32,
// int64, float32 and float64; other dtypes answer HVDA_UNSUPPORTED.
//
// Built three ways (root CMakeLists.txt, tests/cpp/plugin_abi_test.cc):
// - against csrc/include (ABI 1.1): also unique_id_release (each id counted),
//   comm_init_rank_config (its op timeout bounds the rendezvous waits);
// - with LOOPBACK_LEAN (ABI 1.1): memory_host_accessible with scale and
//   reduce_into left NULL (the core's host kernels run them), no alltoallv
//   (the core composes alltoall from grouped send/recv);
// - against tests/cpp/plugins/abi_1_0 (the 1.0 header, HVDA_PLUGIN_ABI_MINOR
//   0): none of the 1.1 fields, as a plugin built before them.
// send/recv are buffered messages between the ranks; inside a group they are
// collected per thread and run together at group_end (sends first). A peer
// equal to the caller's rank is refused and counted.
// hvda_loopback_stats (exported) reports the counters to the tests. The
// streams, events and rendezvous live in loopback_state.h.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "horovod_accel/plugin.h"

#include "loopback_state.h"

namespace {

using namespace loopback;  // NOLINT: one file, one plugin

// ---------------------------------------------------------------- kernels

template <typename T>
void ReduceT(T* dst, const T* src, int64_t n, hvda_reduce_op op) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case HVDA_SUM: dst[i] = dst[i] + src[i]; break;
      case HVDA_PRODUCT: dst[i] = dst[i] * src[i]; break;
      case HVDA_MIN: dst[i] = src[i] < dst[i] ? src[i] : dst[i]; break;
      case HVDA_MAX: dst[i] = src[i] > dst[i] ? src[i] : dst[i]; break;
      default: break;
    }
  }
}

bool Reducible(hvda_dtype t, hvda_reduce_op op) {
  bool type_ok = t == HVDA_UINT8 || t == HVDA_INT32 || t == HVDA_INT64 || t == HVDA_FLOAT32 ||
                 t == HVDA_FLOAT64;
  bool op_ok = op == HVDA_SUM || op == HVDA_PRODUCT || op == HVDA_MIN || op == HVDA_MAX;
  return type_ok && op_ok;
}

hvda_status Reduce(void* dst, const void* src, int64_t n, hvda_dtype t, hvda_reduce_op op) {
  switch (t) {
    case HVDA_UINT8: ReduceT(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n, op); break;
    case HVDA_INT32: ReduceT(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n, op); break;
    case HVDA_INT64: ReduceT(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n, op); break;
    case HVDA_FLOAT32: ReduceT(static_cast<float*>(dst), static_cast<const float*>(src), n, op); break;
    case HVDA_FLOAT64: ReduceT(static_cast<double*>(dst), static_cast<const double*>(src), n, op); break;
    default: return Fail(HVDA_UNSUPPORTED, "loopback plugin: dtype not supported");
  }
  return HVDA_OK;
}

template <typename T>
void ScaleT(T* b, int64_t n, double f) {
  for (int64_t i = 0; i < n; ++i) b[i] = static_cast<T>(b[i] * f);
}

size_t Size(hvda_dtype t) {
  switch (t) {
    case HVDA_UINT8: case HVDA_INT8: case HVDA_BOOL: return 1;
    case HVDA_INT16: case HVDA_FLOAT16: case HVDA_BFLOAT16: return 2;
    case HVDA_INT32: case HVDA_FLOAT32: return 4;
    default: return 8;
  }
}

// ---------------------------------------------------------------- device ops

hvda_status DeviceCount(int* n) { *n = 4; return HVDA_OK; }
hvda_status SetDevice(int) { return HVDA_OK; }
hvda_status Alloc(int, size_t n, void** p) {
  *p = std::malloc(n ? n : 1);
  return *p ? HVDA_OK : Fail(HVDA_OUT_OF_MEMORY, "malloc failed");
}
hvda_status FreeMem(int, void* p) { std::free(p); return HVDA_OK; }
hvda_status HostAlloc(size_t n, void** p) { return Alloc(0, n, p); }
hvda_status HostFree(void* p) { std::free(p); return HVDA_OK; }
hvda_status Memcpy(void* d, const void* src, size_t n, hvda_memcpy_kind, hvda_stream_t s) {
  S(s)->Enqueue([=] { std::memcpy(d, src, n); return HVDA_OK; });
  return HVDA_OK;
}
hvda_status Memset(void* d, int v, size_t n, hvda_stream_t s) {
  S(s)->Enqueue([=] { std::memset(d, v, n); return HVDA_OK; });
  return HVDA_OK;
}
hvda_status StreamCreate(int, hvda_stream_t* s) {
  *s = reinterpret_cast<hvda_stream_t>(new Stream());
  return HVDA_OK;
}
hvda_status StreamWrap(int d, void*, hvda_stream_t* s) { return StreamCreate(d, s); }
hvda_status StreamDestroy(hvda_stream_t s) { delete S(s); return HVDA_OK; }
hvda_status StreamSync(hvda_stream_t s) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> l(S(s)->mu);
    seq = S(s)->enqueued;
  }
  return S(s)->WaitFor(seq);
}
hvda_status EventCreate(int, hvda_event_t* e) {
  *e = reinterpret_cast<hvda_event_t>(new Event());
  return HVDA_OK;
}
hvda_status EventDestroy(hvda_event_t e) { delete E(e); return HVDA_OK; }
hvda_status EventRecord(hvda_event_t e, hvda_stream_t s) {
  std::lock_guard<std::mutex> l(S(s)->mu);
  E(e)->stream = S(s);
  E(e)->seq = S(s)->enqueued;
  return HVDA_OK;
}
hvda_status EventQuery(hvda_event_t e) {
  Stream* s = E(e)->stream;
  if (s == nullptr) return HVDA_OK;
  std::lock_guard<std::mutex> l(s->mu);
  if (s->error != HVDA_OK) return Fail(s->error, s->error_message);
  return s->done >= E(e)->seq ? HVDA_OK : HVDA_NOT_READY;
}
hvda_status EventSync(hvda_event_t e) {
  return E(e)->stream ? E(e)->stream->WaitFor(E(e)->seq) : HVDA_OK;
}
hvda_status StreamWaitEvent(hvda_stream_t s, hvda_event_t e) {
  Stream* other = E(e)->stream;
  uint64_t seq = E(e)->seq;
  if (other == nullptr || other == S(s)) return HVDA_OK;
  S(s)->Enqueue([other, seq] { return other->WaitFor(seq); });
  return HVDA_OK;
}
hvda_status ScaleK(void* b, int64_t n, hvda_dtype t, double f, hvda_stream_t s) {
  S(s)->Enqueue([=] {
    switch (t) {
      case HVDA_UINT8: ScaleT(static_cast<uint8_t*>(b), n, f); break;
      case HVDA_INT32: ScaleT(static_cast<int32_t*>(b), n, f); break;
      case HVDA_INT64: ScaleT(static_cast<int64_t*>(b), n, f); break;
      case HVDA_FLOAT32: ScaleT(static_cast<float*>(b), n, f); break;
      case HVDA_FLOAT64: ScaleT(static_cast<double*>(b), n, f); break;
      default: return Fail(HVDA_UNSUPPORTED, "loopback plugin: cannot scale this dtype");
    }
    return HVDA_OK;
  });
  return HVDA_OK;
}
hvda_status ReduceK(void* d, const void* src, int64_t n, hvda_dtype t, hvda_reduce_op op,
                    hvda_stream_t s) {
  if (!Reducible(t, op)) return Fail(HVDA_UNSUPPORTED, "loopback plugin: cannot reduce this");
  S(s)->Enqueue([=] { return Reduce(d, src, n, t, op); });
  return HVDA_OK;
}
hvda_status Batched(const hvda_copy_desc* c, size_t n, hvda_stream_t s) {
  std::vector<hvda_copy_desc> copies(c, c + n);
  S(s)->Enqueue([copies] {
    for (const auto& x : copies) std::memcpy(x.dst, x.src, x.bytes);
    return HVDA_OK;
  });
  return HVDA_OK;
}

// ---------------------------------------------------------------- ccl ops

size_t IdSize() { return 32; }
hvda_status GetId(void* id, size_t n) {
  std::string s = "loopback-" + std::to_string(Groups().next_id++);
  std::memset(id, 0, n);
  std::memcpy(id, s.data(), std::min(n, s.size()));
  std::lock_guard<std::mutex> l(Counters().mu);
  ++Counters().ids_made;
  Counters().live_ids[std::string(static_cast<const char*>(id), n)] = 1;
  return HVDA_OK;
}
// An id "holds" its rendezvous slot: released exactly once, by its maker.
hvda_status ReleaseId(const void* id, size_t n) {
  const std::string key(static_cast<const char*>(id), n);
  {
    std::lock_guard<std::mutex> l(Counters().mu);
    if (Counters().live_ids.erase(key) == 0) {
      ++Counters().bad_releases;
      return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: unknown or already released id");
    }
    ++Counters().ids_released;
  }
  std::lock_guard<std::mutex> l(Groups().mu);
  Groups().groups.erase(key);  // members keep the group through their Comm
  return HVDA_OK;
}
hvda_status CommInit(const void* id, size_t n, int nranks, int rank, int, double timeout,
                     hvda_comm_t* out) {
  std::string key(static_cast<const char*>(id), n);
  std::shared_ptr<Group> g;
  {
    std::lock_guard<std::mutex> l(Groups().mu);
    auto& slot = Groups().groups[key];
    if (!slot) slot = std::make_shared<Group>(nranks);
    g = slot;
  }
  {
    std::unique_lock<std::mutex> l(g->mu);
    ++g->joined;
    g->cv.notify_all();
    if (!g->cv.wait_for(l, std::chrono::duration<double>(timeout),
                        [&] { return g->joined >= nranks; }))
      return Fail(HVDA_TIMEOUT, "loopback plugin: not every rank joined the communicator");
  }
  *out = reinterpret_cast<hvda_comm_t>(new Comm{g, rank, timeout});
  return HVDA_OK;
}
#if HVDA_PLUGIN_ABI_MINOR >= 1
hvda_status CommInitConfig(const void* id, size_t n, int nranks, int rank, int device,
                           const hvda_comm_config_v1* config, hvda_comm_t* out) {
  double op_timeout = HVDA_HAS_FIELD(config, hvda_comm_config_v1, op_timeout_seconds)
                          ? config->op_timeout_seconds
                          : 0.0;
  {
    std::lock_guard<std::mutex> l(Counters().mu);
    Counters().last_op_timeout = op_timeout;
  }
  hvda_status s = CommInit(id, n, nranks, rank, device, config->init_timeout_seconds, out);
  // No true abort is needed here, but act as a library without one: every
  // later wait is bounded by the operation timeout (plugin.h "timeouts").
  if (s == HVDA_OK && op_timeout > 0) CM(*out)->timeout = op_timeout;
  return s;
}
#endif
hvda_status CommDestroy(hvda_comm_t c) { delete CM(c); return HVDA_OK; }
hvda_status CommAbort(hvda_comm_t c) {
  std::lock_guard<std::mutex> l(CM(c)->group->mu);
  CM(c)->group->aborted = true;
  CM(c)->group->cv.notify_all();
  return HVDA_OK;
}
hvda_status CommError(hvda_comm_t c) {
  std::lock_guard<std::mutex> l(CM(c)->group->mu);
  return CM(c)->group->aborted ? Fail(HVDA_REMOTE_ERROR, "loopback plugin: aborted") : HVDA_OK;
}
int Supports(hvda_collective c, hvda_dtype t, hvda_reduce_op op) {
  switch (c) {
    case HVDA_COLL_ALLREDUCE:
    case HVDA_COLL_REDUCESCATTER: return Reducible(t, op);
    case HVDA_COLL_ALLGATHER:
    case HVDA_COLL_BROADCAST:
    case HVDA_COLL_ALLTOALL:
    case HVDA_COLL_SEND_RECV: return 1;
    default: return 0;
  }
}
hvda_status Allreduce(const void* send, void* recv, size_t n, hvda_dtype t, hvda_reduce_op op,
                      hvda_comm_t c, hvda_stream_t s) {
  if (!Reducible(t, op)) return Fail(HVDA_UNSUPPORTED, "loopback plugin: cannot reduce this");
  const size_t bytes = n * Size(t);
  // Every rank reads every peer's input, so each stages its input first.
  auto staged = std::make_shared<std::vector<char>>(bytes);
  S(s)->Enqueue([=] { std::memcpy(staged->data(), send, bytes); return HVDA_OK; });
  return Round(CM(c), s, {staged->data(), recv, {}, {}},
               [=](const std::vector<Group::Post>& p) {
                 std::vector<char> acc(static_cast<const char*>(p[0].send),
                                       static_cast<const char*>(p[0].send) + bytes);
                 for (size_t r = 1; r < p.size(); ++r) {
                   hvda_status st = Reduce(acc.data(), p[r].send, n, t, op);
                   if (st != HVDA_OK) return st;
                 }
                 std::memcpy(recv, acc.data(), bytes);
                 (void)staged;  // captured so the posted staging buffer outlives the round
                 return HVDA_OK;
               });
}
hvda_status Broadcast(const void* send, void* recv, size_t n, hvda_dtype t, int root,
                      hvda_comm_t c, hvda_stream_t s) {
  const size_t bytes = n * Size(t);
  return Round(CM(c), s, {send, recv, {}, {}}, [=](const std::vector<Group::Post>& p) {
    if (recv != p[root].send) std::memcpy(recv, p[root].send, bytes);
    return HVDA_OK;
  });
}
hvda_status Allgather(const void* send, void* recv, size_t n, hvda_dtype t, hvda_comm_t c,
                      hvda_stream_t s) {
  const size_t bytes = n * Size(t);
  return Round(CM(c), s, {send, recv, {}, {}}, [=](const std::vector<Group::Post>& p) {
    for (size_t r = 0; r < p.size(); ++r)
      std::memcpy(static_cast<char*>(recv) + r * bytes, p[r].send, bytes);
    return HVDA_OK;
  });
}
hvda_status ReduceScatter(const void* send, void* recv, size_t n, hvda_dtype t, hvda_reduce_op op,
                          hvda_comm_t c, hvda_stream_t s) {
  if (!Reducible(t, op)) return Fail(HVDA_UNSUPPORTED, "loopback plugin: cannot reduce this");
  const size_t bytes = n * Size(t);
  const int me = CM(c)->rank;
  return Round(CM(c), s, {send, recv, {}, {}}, [=](const std::vector<Group::Post>& p) {
    std::vector<char> acc(static_cast<const char*>(p[0].send) + me * bytes,
                          static_cast<const char*>(p[0].send) + (me + 1) * bytes);
    for (size_t r = 1; r < p.size(); ++r) {
      hvda_status st = Reduce(acc.data(), static_cast<const char*>(p[r].send) + me * bytes, n, t, op);
      if (st != HVDA_OK) return st;
    }
    std::memcpy(recv, acc.data(), bytes);
    return HVDA_OK;
  });
}
// ---- point-to-point. A send deposits a copy; a recv waits for it.
struct P2p {
  bool send;
  void* buf;
  size_t bytes;
  int peer;
};

hvda_status RunP2p(Comm* c, const P2p& op) {
  Group& g = *c->group;
  std::unique_lock<std::mutex> l(g.mu);
  if (op.send) {
    const char* b = static_cast<const char*>(op.buf);
    g.mail[{c->rank, op.peer}].emplace_back(b, b + op.bytes);
    g.cv.notify_all();
    return HVDA_OK;
  }
  auto& box = g.mail[{op.peer, c->rank}];
  if (!g.cv.wait_for(l, std::chrono::duration<double>(c->timeout),
                     [&] { return !box.empty() || g.aborted; }))
    return Fail(HVDA_TIMEOUT, "loopback plugin: recv timed out");
  if (g.aborted) return Fail(HVDA_REMOTE_ERROR, "loopback plugin: communicator aborted");
  std::vector<char> m = std::move(box.front());
  box.pop_front();
  if (m.size() != op.bytes)
    return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: send/recv sizes disagree");
  std::memcpy(op.buf, m.data(), m.size());
  return HVDA_OK;
}

// The calling thread's open group (groups are per thread, plugin.h).
struct OpenGroup {
  int depth = 0;
  Comm* comm = nullptr;
  hvda_stream_t stream = nullptr;
  std::vector<P2p> ops;
};
thread_local OpenGroup open_group;

hvda_status PostP2p(P2p op, hvda_comm_t comm, hvda_stream_t s) {
  Comm* c = CM(comm);
  if (op.peer == c->rank) {
    std::lock_guard<std::mutex> l(Counters().mu);
    ++Counters().self_peers;
    return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: send/recv with the caller's own rank");
  }
  if (op.peer < 0 || op.peer >= c->group->size)
    return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: no such peer");
  OpenGroup& g = open_group;
  if (g.depth == 0) {
    S(s)->Enqueue([c, op] { return RunP2p(c, op); });
    return HVDA_OK;
  }
  if (g.comm == nullptr) {
    g.comm = c;
    g.stream = s;
  } else if (g.comm != c || g.stream != s) {
    return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: one group, two communicators or streams");
  }
  g.ops.push_back(op);
  return HVDA_OK;
}
hvda_status Send(const void* buf, size_t n, hvda_dtype t, int peer, hvda_comm_t c,
                 hvda_stream_t s) {
  return PostP2p({true, const_cast<void*>(buf), n * Size(t), peer}, c, s);
}
hvda_status Recv(void* buf, size_t n, hvda_dtype t, int peer, hvda_comm_t c, hvda_stream_t s) {
  return PostP2p({false, buf, n * Size(t), peer}, c, s);
}
hvda_status GroupStart(void) {
  ++open_group.depth;
  return HVDA_OK;
}
hvda_status GroupEnd(void) {
  OpenGroup& g = open_group;
  if (g.depth == 0) return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: group_end without start");
  if (--g.depth > 0 || g.ops.empty()) return HVDA_OK;
  std::vector<P2p> ops = std::move(g.ops);
  Comm* c = g.comm;
  hvda_stream_t s = g.stream;
  g = OpenGroup();
  // Sends first: they never block, so the group always progresses.
  std::stable_partition(ops.begin(), ops.end(), [](const P2p& o) { return o.send; });
  S(s)->Enqueue([c, ops] {
    for (const P2p& op : ops)
      if (hvda_status st = RunP2p(c, op)) return st;
    return HVDA_OK;
  });
  return HVDA_OK;
}
hvda_status Alltoallv(const void* send, const size_t* sc, const size_t* sd, void* recv,
                      const size_t* rc, const size_t* rd, hvda_dtype t, hvda_comm_t c,
                      hvda_stream_t s) {
  const int n = CM(c)->group->size, me = CM(c)->rank;
  const size_t es = Size(t);
  Group::Post mine{send, recv, std::vector<size_t>(sc, sc + n), std::vector<size_t>(sd, sd + n)};
  std::vector<size_t> rcv(rc, rc + n), rdv(rd, rd + n);
  return Round(CM(c), s, mine, [=](const std::vector<Group::Post>& p) {
    for (int r = 0; r < n; ++r) {
      if (p[r].counts[me] != rcv[r])
        return Fail(HVDA_INVALID_ARGUMENT, "loopback plugin: alltoallv counts disagree");
      std::memcpy(static_cast<char*>(recv) + rdv[r] * es,
                  static_cast<const char*>(p[r].send) + p[r].displs[me] * es, rcv[r] * es);
    }
    return HVDA_OK;
  });
}

hvda_status Probe(const hvda_host_api_v1*) { return HVDA_OK; }
hvda_status Init(const hvda_host_api_v1*) { return HVDA_OK; }
hvda_status Finalize() { return HVDA_OK; }
const char* LastError() { return last_message.c_str(); }

#if defined(LOOPBACK_LEAN) && HVDA_PLUGIN_ABI_MINOR < 1
#error "LOOPBACK_LEAN needs the ABI 1.1 header"
#endif

const hvda_device_ops_v1 kDevice = [] {
  hvda_device_ops_v1 d{};
  d.struct_size = sizeof(d);
  d.device_count = DeviceCount;
  d.set_device = SetDevice;
  d.mem_alloc = Alloc;
  d.mem_free = FreeMem;
  d.host_alloc = HostAlloc;
  d.host_free = HostFree;
  d.memcpy_async = Memcpy;
  d.memset_async = Memset;
  d.stream_create = StreamCreate;
  d.stream_wrap = StreamWrap;
  d.stream_destroy = StreamDestroy;
  d.stream_synchronize = StreamSync;
  d.stream_wait_event = StreamWaitEvent;
  d.event_create = EventCreate;
  d.event_destroy = EventDestroy;
  d.event_record = EventRecord;
  d.event_query = EventQuery;
  d.event_synchronize = EventSync;
#ifdef LOOPBACK_LEAN
#ifndef LOOPBACK_NO_FLAG  // (that variant must be refused by the loader)
  d.memory_host_accessible = 1;  // malloc'd: the core supplies scale / reduce_into
#endif
  (void)ScaleK;
  (void)ReduceK;
#else
  d.scale = ScaleK;
  d.reduce_into = ReduceK;
#endif
  d.batched_copy = Batched;
  return d;
}();

const hvda_ccl_ops_v1 kCcl = [] {
  hvda_ccl_ops_v1 c{};
  c.struct_size = sizeof(c);
  c.unique_id_size = IdSize;
  c.get_unique_id = GetId;
  c.comm_init_rank = CommInit;
  c.comm_destroy = CommDestroy;
  c.comm_abort = CommAbort;
  c.comm_get_async_error = CommError;
  c.supports = Supports;
  c.allreduce = Allreduce;
  c.broadcast = Broadcast;
  c.allgather = Allgather;
  c.reduce_scatter = ReduceScatter;
  c.send = Send;
  c.recv = Recv;
  c.group_start = GroupStart;
  c.group_end = GroupEnd;
  c.allgatherv = nullptr;  // composed by the core
#ifdef LOOPBACK_LEAN
  (void)Alltoallv;  // composed by the core from grouped send/recv
#else
  c.alltoallv = Alltoallv;
#endif
#if HVDA_PLUGIN_ABI_MINOR >= 1
  c.unique_id_release = ReleaseId;
  c.comm_init_rank_config = CommInitConfig;
#else
  (void)ReleaseId;
#endif
  return c;
}();

const hvda_plugin_v1 kPlugin = {sizeof(hvda_plugin_v1), HVDA_PLUGIN_ABI_MAJOR,
                                HVDA_PLUGIN_ABI_MINOR, "loopback", "0.1.0", "loopback",
                                Probe, Init, Finalize, LastError, &kDevice, &kCcl};

}  // namespace

extern "C" HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t, uint32_t) {
  return &kPlugin;
}

// For the tests (tests/cpp/plugin_abi_test.cc): the counters since load.
extern "C" HVDA_PLUGIN_EXPORT void hvda_loopback_stats(uint64_t* ids_made, uint64_t* ids_released,
                                                       uint64_t* bad_releases,
                                                       uint64_t* self_peers,
                                                       double* last_op_timeout) {
  std::lock_guard<std::mutex> l(loopback::Counters().mu);
  *ids_made = loopback::Counters().ids_made;
  *ids_released = loopback::Counters().ids_released;
  *bad_releases = loopback::Counters().bad_releases;
  *self_peers = loopback::Counters().self_peers;
  *last_op_timeout = loopback::Counters().last_op_timeout;
}
// While on, rendezvous waits ignore their timeout and comm_abort (a plugin
// breaking plugin.h's "timeouts" contract, for the bounded-teardown test).
extern "C" HVDA_PLUGIN_EXPORT void hvda_loopback_hang(int on) {
  loopback::Counters().hang.store(on != 0);
}
