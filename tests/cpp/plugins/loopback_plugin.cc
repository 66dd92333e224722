// A functional test plugin for ranks that are threads of one process (the
// C++ multi-rank harness): host memory, streams as worker threads that run
// their queue in order, events as stream positions, and collectives that
// meet in a process-local rendezvous keyed by the unique id. It exercises the
// plugin adapter (csrc/common/plugin/plugin_device.*) and the executor over
// the real ABI; the emulated vendor stack (later) does the same across
// processes with vendor names. Kernels and reductions cover uint8, int32,
// int64, float32 and float64; other dtypes answer HVDA_UNSUPPORTED.
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

namespace {

thread_local std::string last_message;

hvda_status Fail(hvda_status s, const std::string& m) {
  last_message = m;
  return s;
}

// ---------------------------------------------------------------- streams

struct Stream {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<hvda_status()>> queue;
  uint64_t enqueued = 0, done = 0;
  hvda_status error = HVDA_OK;
  std::string error_message;
  bool stop = false;
  std::thread worker;

  Stream() : worker([this] { Run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
    }
    cv.notify_all();
    worker.join();
  }
  void Enqueue(std::function<hvda_status()> fn) {
    std::lock_guard<std::mutex> l(mu);
    queue.push_back(std::move(fn));
    ++enqueued;
    cv.notify_all();
  }
  void Run() {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      auto fn = std::move(queue.front());
      queue.pop_front();
      l.unlock();
      hvda_status s = fn();
      std::string m = s == HVDA_OK ? "" : last_message;
      l.lock();
      if (s != HVDA_OK && error == HVDA_OK) {
        error = s;
        error_message = m;
      }
      ++done;
      cv.notify_all();
    }
  }
  hvda_status WaitFor(uint64_t seq) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return done >= seq || error != HVDA_OK; });
    return error == HVDA_OK ? HVDA_OK : Fail(error, error_message);
  }
};

struct Event {
  Stream* stream = nullptr;
  uint64_t seq = 0;
};

Stream* S(hvda_stream_t s) { return reinterpret_cast<Stream*>(s); }
Event* E(hvda_event_t e) { return reinterpret_cast<Event*>(e); }

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

// ---------------------------------------------------------------- rendezvous

// The ranks of one communicator. A collective is a round: every rank posts
// its arguments, waits for all, computes its own output from the peers'
// posts, then waits for all again before inputs may change.
struct Group {
  explicit Group(int n) : size(n), posts(n) {}
  struct Post {
    const void* send = nullptr;
    void* recv = nullptr;
    std::vector<size_t> counts, displs;
  };
  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int joined = 0;
  uint64_t arrivals = 0;  // total arrivals at barriers
  bool aborted = false;
  std::vector<Post> posts;

  // Blocks until every rank reached this barrier (or timeout / abort).
  hvda_status Barrier(double timeout_s) {
    std::unique_lock<std::mutex> l(mu);
    const uint64_t target = (arrivals / size + 1) * size;
    ++arrivals;
    cv.notify_all();
    bool ok = cv.wait_for(l, std::chrono::duration<double>(timeout_s),
                          [&] { return arrivals >= target || aborted; });
    if (aborted) return Fail(HVDA_REMOTE_ERROR, "loopback plugin: communicator aborted");
    return ok ? HVDA_OK : Fail(HVDA_TIMEOUT, "loopback plugin: a peer did not arrive");
  }
};

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Group>> groups;
  std::atomic<uint64_t> next_id{1};
};

Registry& Groups() {
  static Registry r;  // process-local by design: the ranks are threads
  return r;
}

struct Comm {
  std::shared_ptr<Group> group;
  int rank;
  double timeout;
};

Comm* CM(hvda_comm_t c) { return reinterpret_cast<Comm*>(c); }

// Runs body(group posts) on stream s as one round.
hvda_status Round(Comm* c, hvda_stream_t s, Group::Post mine,
                  std::function<hvda_status(const std::vector<Group::Post>&)> body) {
  S(s)->Enqueue([c, mine, body] {
    Group& g = *c->group;
    {
      std::lock_guard<std::mutex> l(g.mu);
      g.posts[c->rank] = mine;
    }
    hvda_status st = g.Barrier(c->timeout);
    if (st != HVDA_OK) return st;
    std::vector<Group::Post> posts;
    {
      std::lock_guard<std::mutex> l(g.mu);
      posts = g.posts;
    }
    st = body(posts);
    hvda_status st2 = g.Barrier(c->timeout);
    return st != HVDA_OK ? st : st2;
  });
  return HVDA_OK;
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
    case HVDA_COLL_ALLTOALL: return 1;
    default: return 0;  // no send/recv: alltoall goes through alltoallv below
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
hvda_status SendRecvUnsupported(int, hvda_comm_t, hvda_stream_t) {
  return Fail(HVDA_UNSUPPORTED, "loopback plugin: no point-to-point");
}
hvda_status Send(const void*, size_t, hvda_dtype, int peer, hvda_comm_t c, hvda_stream_t s) {
  return SendRecvUnsupported(peer, c, s);
}
hvda_status Recv(void*, size_t, hvda_dtype, int peer, hvda_comm_t c, hvda_stream_t s) {
  return SendRecvUnsupported(peer, c, s);
}
hvda_status GroupMark(void) { return HVDA_OK; }
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

const hvda_device_ops_v1 kDevice = {
    sizeof(hvda_device_ops_v1), DeviceCount, SetDevice, Alloc, FreeMem, HostAlloc, HostFree,
    Memcpy, Memset, StreamCreate, StreamWrap, StreamDestroy, StreamSync, StreamWaitEvent,
    EventCreate, EventDestroy, EventRecord, EventQuery, EventSync, ScaleK, ReduceK, Batched,
    nullptr};

const hvda_ccl_ops_v1 kCcl = {
    sizeof(hvda_ccl_ops_v1), IdSize, GetId, CommInit, CommDestroy, CommAbort, CommError,
    Supports, Allreduce, Broadcast, Allgather, ReduceScatter, Send, Recv, GroupMark, GroupMark,
    nullptr /* allgatherv: composed by the core */, Alltoallv};

const hvda_plugin_v1 kPlugin = {sizeof(hvda_plugin_v1), HVDA_PLUGIN_ABI_MAJOR,
                                HVDA_PLUGIN_ABI_MINOR, "loopback", "0.1.0", "loopback",
                                Probe, Init, Finalize, LastError, &kDevice, &kCcl};

}  // namespace

extern "C" HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t, uint32_t) {
  return &kPlugin;
}
