// The collective engine (emu_core.h): unique ids, communicator handles,
// groups, and the stream operation that runs calls' plans until done. The
// calls themselves (validation, one function per kind) are in ccl_calls.cc.
#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ccl_call.h"
#include "config.h"
#include "runtime.h"

namespace hvda_emu {
namespace {

// ------------------------------------------------------------ unique ids

constexpr char kIdMagic[8] = {'H', 'V', 'D', 'A', 'E', 'M', 'U', '1'};
constexpr size_t kTokenBytes = 16;

// The segment name of an id: derived from its random token.
bool SegmentName(const char id[kUniqueIdBytes], std::string* name) {
  if (std::memcmp(id, kIdMagic, sizeof(kIdMagic)) != 0) return false;
  static const char kHex[] = "0123456789abcdef";
  *name = "/hvda_emu_";
  for (size_t i = 0; i < kTokenBytes; ++i) {
    const unsigned char b = static_cast<unsigned char>(id[sizeof(kIdMagic) + i]);
    *name += kHex[b >> 4];
    *name += kHex[b & 15];
  }
  return true;
}

// ----------------------------------------------------- communicator table

// The live communicator handles of each API (a handle is the Comm's
// address). Never destroyed, like the runtime (NOTE [One process-wide
// instance] in emu_core.h).
class CommTable {
 public:
  static CommTable& Get() {
    static CommTable* table = new CommTable();
    return *table;
  }
  CommHandle Add(std::shared_ptr<Comm> comm) {
    std::lock_guard<std::mutex> lock(mu_);
    CommHandle h = comm.get();
    live_[static_cast<int>(comm->api())].emplace(h, std::move(comm));
    return h;
  }
  std::shared_ptr<Comm> Find(CclApi api, CommHandle h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = live_[static_cast<int>(api)];
    auto it = m.find(h);
    return it == m.end() ? nullptr : it->second;
  }
  std::shared_ptr<Comm> Take(CclApi api, CommHandle h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& m = live_[static_cast<int>(api)];
    auto it = m.find(h);
    if (it == m.end()) return nullptr;
    std::shared_ptr<Comm> c = std::move(it->second);
    m.erase(it);
    return c;
  }

 private:
  std::mutex mu_;
  std::unordered_map<CommHandle, std::shared_ptr<Comm>> live_[kNumCclApis];
};

// ------------------------------------------------------------ running calls

// Runs the calls' plans together until all are done, or their
// communicators are aborted. Blocks the stream's worker like a device kernel
// that polls its peers' flags: it yields while a peer may still be about to
// arrive (kActiveSpin after the last progress), then sleeps in short naps and
// checks the peers' liveness. The spin is time-based, not a pass count: a
// peer whose stream reaches the collective a few hundred microseconds later
// (it negotiated later) is met at once, as on a device, not after a nap.
void RunCalls(const std::vector<Call>& calls) {
  // One plan per communicator, parts appended in call order.
  std::vector<std::pair<std::shared_ptr<Comm>, std::unique_ptr<Plan>>> plans;
  for (const Call& c : calls) {
    if (c.comm->aborted()) continue;
    Plan* plan = nullptr;
    for (auto& cp : plans) {
      if (cp.first == c.comm) plan = cp.second.get();
    }
    if (plan == nullptr) {
      plans.emplace_back(c.comm, std::make_unique<Plan>(c.comm->links()));
      plan = plans.back().second.get();
    }
    c.part(*plan);
  }
  constexpr auto kActiveSpin = std::chrono::microseconds(300);
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    bool moved = false;
    bool done = true;
    for (auto& cp : plans) {
      if (cp.first->aborted() || cp.second->Done()) continue;
      moved |= cp.second->Progress();
      done &= cp.second->Done();
    }
    if (done) return;
    const auto now = std::chrono::steady_clock::now();
    if (moved) {
      last_progress = now;
      continue;
    }
    if (now - last_progress < kActiveSpin) {
      sched_yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(30));
    for (auto& cp : plans) cp.first->CheckPeers();
  }
}

// Calls recorded between GroupStart and GroupEnd, per calling thread and API.
struct GroupState {
  int depth = 0;
  std::vector<std::pair<std::shared_ptr<Stream>, Call>> calls;
};
thread_local GroupState groups[kNumCclApis];

// Enqueues calls (all for stream) as one stream operation.
void Enqueue(Stream& stream, std::vector<Call> calls) {
  auto shared = std::make_shared<std::vector<Call>>(std::move(calls));
  stream.Enqueue([shared] { RunCalls(*shared); });
}

}  // namespace

std::shared_ptr<Comm> FindComm(CclApi api, CommHandle handle) {
  return CommTable::Get().Find(api, handle);
}

int Submit(CclApi api, std::shared_ptr<Stream> stream, Call call) {
  GroupState& g = groups[static_cast<int>(api)];
  if (g.depth > 0) {
    g.calls.emplace_back(std::move(stream), std::move(call));
  } else {
    std::vector<Call> one;
    one.push_back(std::move(call));
    Enqueue(*stream, std::move(one));
  }
  return kCclSuccess;
}

// ------------------------------------------------------------ management

int CclGetUniqueId(char id[kUniqueIdBytes]) {
  if (id == nullptr) return kCclInvalidArgument;
  std::memset(id, 0, kUniqueIdBytes);
  std::memcpy(id, kIdMagic, sizeof(kIdMagic));
  char* token = id + sizeof(kIdMagic);
  if (getrandom(token, kTokenBytes, 0) != static_cast<ssize_t>(kTokenBytes)) {
    // No entropy source: pid and time are unique enough on one host.
    const uint64_t words[2] = {static_cast<uint64_t>(getpid()),
                               static_cast<uint64_t>(
                                   std::chrono::steady_clock::now().time_since_epoch().count())};
    std::memcpy(token, words, kTokenBytes);
  }
  return kCclSuccess;
}

int CclCommInitRank(CclApi api, CommHandle* comm, int nranks, const char id[kUniqueIdBytes],
                    int rank) {
  std::string name;
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks || id == nullptr ||
      !SegmentName(id, &name)) {
    return kCclInvalidArgument;
  }
  *comm = nullptr;
  std::unique_ptr<ShmSegment> segment;
  if (nranks == 1) {
    segment = ShmSegment::CreatePrivate();
    if (segment == nullptr) return kCclSystem;
  } else {
    int code = kCclSystem;
    std::string error;
    segment = ShmSegment::Attach(name, nranks, rank, GetConfig().init_timeout_s, &code, &error);
    if (segment == nullptr) {
      std::fprintf(stderr, "hvda_emu: CommInitRank (rank %d of %d) failed: %s\n", rank, nranks,
                   error.c_str());
      return code;
    }
  }
  *comm = CommTable::Get().Add(std::make_shared<Comm>(api, rank, std::move(segment)));
  return kCclSuccess;
}

int CclCommDestroy(CclApi api, CommHandle comm) {
  return CommTable::Get().Take(api, comm) != nullptr ? kCclSuccess : kCclInvalidArgument;
}

int CclCommAbort(CclApi api, CommHandle comm) {
  std::shared_ptr<Comm> c = CommTable::Get().Take(api, comm);
  if (c == nullptr) return kCclInvalidArgument;
  c->Abort();
  return kCclSuccess;
}

int CclCommGetAsyncError(CclApi api, CommHandle comm, int* result) {
  std::shared_ptr<Comm> c = CommTable::Get().Find(api, comm);
  if (c == nullptr || result == nullptr) return kCclInvalidArgument;
  *result = c->async_error();
  return kCclSuccess;
}

int CclRedOpCreatePreMulSum(CclApi api, int* op, const void* scalar, int dtype, int residence,
                            CommHandle comm) {
  std::shared_ptr<Comm> c = CommTable::Get().Find(api, comm);
  const size_t es = DTypeSize(dtype);
  // Only host-immediate scalars (residence 1), read now.
  if (c == nullptr || op == nullptr || es == 0 || residence != 1 ||
      !ProcessDeviceMemory().IsHost(scalar, es)) {
    return kCclInvalidArgument;
  }
  Reduction red;
  red.dtype = dtype;
  red.op = kPreMulSum;
  red.nranks = c->nranks();
  std::memcpy(red.scalar, scalar, es);
  return c->AddPreMulSum(red, op);
}

int CclRedOpDestroy(CclApi api, int op, CommHandle comm) {
  std::shared_ptr<Comm> c = CommTable::Get().Find(api, comm);
  return c != nullptr && c->RemoveOp(op) ? kCclSuccess : kCclInvalidArgument;
}

int CclGroupStart(CclApi api) {
  ++groups[static_cast<int>(api)].depth;
  return kCclSuccess;
}

int CclGroupEnd(CclApi api) {
  GroupState& g = groups[static_cast<int>(api)];
  if (g.depth == 0) return kCclInvalidUsage;
  if (--g.depth > 0) return kCclSuccess;
  // One stream operation per stream, holding that stream's calls in order.
  std::vector<std::pair<std::shared_ptr<Stream>, std::vector<Call>>> by_stream;
  for (auto& sc : g.calls) {
    std::vector<Call>* calls = nullptr;
    for (auto& bs : by_stream) {
      if (bs.first == sc.first) calls = &bs.second;
    }
    if (calls == nullptr) {
      by_stream.emplace_back(sc.first, std::vector<Call>());
      calls = &by_stream.back().second;
    }
    calls->push_back(std::move(sc.second));
  }
  g.calls.clear();
  for (auto& bs : by_stream) Enqueue(*bs.first, std::move(bs.second));
  return kCclSuccess;
}

}  // namespace hvda_emu
