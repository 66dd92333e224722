// Multi-process check of the emulated collective libraries, run as N
// separate processes (tests/python/test_emulated_stack.py starts them). It
// loads the libraries as a plugin does - dlopen() of HOROVOD_GCU_RUNTIME_LIB
// + HOROVOD_ECCL_LIB (--api eccl) or HOROVOD_CUDA_RUNTIME_LIB +
// HOROVOD_NCCL_LIB (--api nccl) - and checks every collective against
// values computed from f(rank, index), so no expected value needs
// communication.
//
// Usage: emu_ccl_check --api eccl|nccl --rank R --nranks N --dir DIR
//                      [--mode checks|deadpeer]
// Rank 0 writes each unique id to DIR/<name>.id; the others read it.
// Output: "PASS name" / "FAIL name: why" lines, "HASH key value" lines
// (every rank must print the same), "INFO ..." lines; exit status 0 when
// every check passed. deadpeer mode (N = 2; the test kills rank 1 once
// DIR/enqueued exists) prints "DEADPEER async_error=E detect_s=T".
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// ------------------------------------------------------------ the API

struct UniqueId { char internal[128]; };
using Stream = void*;
using Comm = void*;

// The vendor functions, resolved by name (API_SUBSET.md signatures).
struct Api {
  bool eccl = false;
  int (*Malloc)(void**, size_t);
  int (*Free)(void*);
  int (*Memcpy)(void*, const void*, size_t, int);
  int (*StreamCreateWithFlags)(Stream*, unsigned);
  int (*StreamDestroy)(Stream);
  int (*StreamSynchronize)(Stream);
  int (*EventCreateWithFlags)(void**, unsigned);
  int (*EventRecord)(void*, Stream);
  int (*EventQuery)(void*);
  int (*EventDestroy)(void*);
  int (*GetLastError)();
  int (*GetUniqueId)(UniqueId*);
  int (*CommInitRank)(Comm*, int, UniqueId, int);
  int (*CommDestroy)(Comm);
  int (*CommAbort)(Comm);
  int (*CommGetAsyncError)(Comm, int*);
  int (*AllReduce)(const void*, void*, size_t, int, int, Comm, Stream);
  int (*Broadcast)(const void*, void*, size_t, int, int, Comm, Stream);
  int (*AllGather)(const void*, void*, size_t, int, Comm, Stream);
  int (*ReduceScatter)(const void*, void*, size_t, int, int, Comm, Stream);
  int (*Send)(const void*, size_t, int, int, Comm, Stream);
  int (*Recv)(void*, size_t, int, int, Comm, Stream);
  int (*GroupStart)();
  int (*GroupEnd)();
  int (*RedOpCreatePreMulSum)(int*, void*, int, int, Comm);
  int (*RedOpDestroy)(int, Comm);
  const char* (*GetErrorString)(int);
  int (*AllGatherV)(const void*, size_t, void*, const size_t*, const size_t*, int, Comm, Stream);
  int (*AlltoAllv)(const void*, const size_t*, const size_t*, int, void*, const size_t*,
                   const size_t*, int, Comm, Stream);
};

Api api;

[[noreturn]] void Die(const std::string& why) {
  std::printf("FAIL setup: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(2);
}

void* Open(const char* env) {
  const char* path = std::getenv(env);
  if (path == nullptr) Die(std::string(env) + " is not set");
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) Die(dlerror());
  return h;
}

template <typename Fn>
void Sym(void* lib, const std::string& name, Fn* fn, bool required = true) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name.c_str()));
  if (*fn == nullptr && required) Die("missing symbol " + name);
}

void LoadApi(bool eccl) {
  api.eccl = eccl;
  void* rt = Open(eccl ? "HOROVOD_GCU_RUNTIME_LIB" : "HOROVOD_CUDA_RUNTIME_LIB");
  void* cl = Open(eccl ? "HOROVOD_ECCL_LIB" : "HOROVOD_NCCL_LIB");
  const std::string r = eccl ? "tops" : "cuda";
  const std::string c = eccl ? "eccl" : "nccl";
  Sym(rt, r + "Malloc", &api.Malloc);
  Sym(rt, r + "Free", &api.Free);
  Sym(rt, r + "Memcpy", &api.Memcpy);
  Sym(rt, r + "StreamCreateWithFlags", &api.StreamCreateWithFlags);
  Sym(rt, r + "StreamDestroy", &api.StreamDestroy);
  Sym(rt, r + "StreamSynchronize", &api.StreamSynchronize);
  Sym(rt, r + "EventCreateWithFlags", &api.EventCreateWithFlags);
  Sym(rt, r + "EventRecord", &api.EventRecord);
  Sym(rt, r + "EventQuery", &api.EventQuery);
  Sym(rt, r + "EventDestroy", &api.EventDestroy);
  Sym(rt, r + "GetLastError", &api.GetLastError);
  Sym(cl, c + "GetUniqueId", &api.GetUniqueId);
  Sym(cl, c + "CommInitRank", &api.CommInitRank);
  Sym(cl, c + "CommDestroy", &api.CommDestroy);
  Sym(cl, c + "CommAbort", &api.CommAbort);
  Sym(cl, c + "CommGetAsyncError", &api.CommGetAsyncError);
  Sym(cl, c + "AllReduce", &api.AllReduce);
  Sym(cl, c + "Broadcast", &api.Broadcast);
  Sym(cl, c + "AllGather", &api.AllGather);
  Sym(cl, c + "ReduceScatter", &api.ReduceScatter);
  Sym(cl, c + "Send", &api.Send);
  Sym(cl, c + "Recv", &api.Recv);
  Sym(cl, c + "GroupStart", &api.GroupStart);
  Sym(cl, c + "GroupEnd", &api.GroupEnd);
  Sym(cl, c + "RedOpCreatePreMulSum", &api.RedOpCreatePreMulSum);
  Sym(cl, c + "RedOpDestroy", &api.RedOpDestroy);
  Sym(cl, c + "GetErrorString", &api.GetErrorString);
  // ECCL only: the NCCL library must not have them.
  Sym(cl, "ecclAllGatherV", &api.AllGatherV, eccl);
  Sym(cl, "ecclAlltoAllv", &api.AlltoAllv, eccl);
  if (!eccl && (api.AllGatherV != nullptr || api.AlltoAllv != nullptr)) {
    Die("the NCCL library exports ecclAllGatherV / ecclAlltoAllv");
  }
}

// ------------------------------------------------------------ values

enum DType { kI8, kU8, kI32, kU32, kI64, kU64, kF16, kF32, kF64, kBF16, kNumDTypes };
const char* const kDTypeNames[] = {"int8", "uint8", "int32", "uint32", "int64",
                                   "uint64", "float16", "float32", "float64", "bfloat16"};
const size_t kDTypeSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
enum Op { kSum, kProd, kMax, kMin, kAvg, kPreMulSum2 };  // kPreMulSum2: PreMulSum by 2
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg", "premulsum2"};

double HalfToDouble(uint16_t h) {
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
// Exact for integers of magnitude <= 2048 (the only values written).
uint16_t IntToHalf(double v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  double a = std::fabs(v);
  int e = 0;
  while (a >= 2) { a /= 2; ++e; }
  return sign | static_cast<uint16_t>(((e + 15) << 10) | static_cast<int>((a - 1) * 1024));
}

void Put(int t, void* buf, size_t i, double v) {
  char* p = static_cast<char*>(buf) + i * kDTypeSize[t];
  switch (t) {
    case kI8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case kU8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case kI32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case kU32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case kI64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case kU64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    case kF16: { uint16_t x = IntToHalf(v); std::memcpy(p, &x, 2); break; }
    case kF32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case kF64: std::memcpy(p, &v, 8); break;
    case kBF16: {
      float f = static_cast<float>(v);  // small integers: the low 16 bits are 0
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t x = static_cast<uint16_t>(bits >> 16);
      std::memcpy(p, &x, 2);
      break;
    }
  }
}

double Get(int t, const void* buf, size_t i) {
  const char* p = static_cast<const char*>(buf) + i * kDTypeSize[t];
  switch (t) {
    case kI8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case kU8: { uint8_t x; std::memcpy(&x, p, 1); return x; }
    case kI32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case kU32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case kI64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case kU64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case kF16: { uint16_t x; std::memcpy(&x, p, 2); return HalfToDouble(x); }
    case kF32: { float x; std::memcpy(&x, p, 4); return x; }
    case kF64: { double x; std::memcpy(&x, p, 8); return x; }
    case kBF16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      uint32_t bits = static_cast<uint32_t>(x) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
  }
  return 0;
}

bool IsInt(int t) { return t <= kU64; }

bool Close(int t, double got, double want) {
  if (IsInt(t)) return got == want;
  const double tol = (t == kF16 || t == kBF16) ? 1e-2 : (t == kF32 ? 1e-6 : 1e-12);
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

// The input of rank r at index i: small positive integers, exact in every
// type, whose products over 3 ranks fit int8.
double F(int r, size_t i) { return static_cast<double>(((r + 1) * (i % 7 + 1)) % 5 + 1); }

double Expected(int op, int t, int n, size_t i) {
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    const double x = F(r, i);
    switch (op) {
      case kSum: case kAvg: acc = r == 0 ? x : acc + x; break;
      case kProd: acc = r == 0 ? x : acc * x; break;
      case kMax: acc = r == 0 ? x : std::max(acc, x); break;
      case kMin: acc = r == 0 ? x : std::min(acc, x); break;
      case kPreMulSum2: acc += 2 * x; break;
    }
  }
  if (op == kAvg) acc = IsInt(t) ? std::trunc(acc / n) : acc / n;
  return acc;
}

uint64_t Fnv(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

// ------------------------------------------------------------ harness

int rank = 0, nranks = 1;
std::string dir;
int failures = 0;

struct Failure {
  std::string why;
};

#define REQUIRE(cond, ...)                                                       \
  do {                                                                           \
    if (!(cond)) {                                                               \
      char msg_[512];                                                            \
      std::snprintf(msg_, sizeof(msg_), __VA_ARGS__);                            \
      throw Failure{std::string(#cond) + " at line " + std::to_string(__LINE__) + \
                    ": " + msg_};                                                \
    }                                                                            \
  } while (0)
#define CALL(x) do { const int rc_ = (x); REQUIRE(rc_ == 0, "returned %d", rc_); } while (0)

void Check(const char* name, const std::function<void()>& body) {
  try {
    body();
    std::printf("PASS %s\n", name);
  } catch (const Failure& f) {
    ++failures;
    std::printf("FAIL %s: %s\n", name, f.why.c_str());
  }
  std::fflush(stdout);
}

void* DevAlloc(size_t bytes) {
  void* p = nullptr;
  CALL(api.Malloc(&p, bytes));
  return p;
}
void ToDev(void* d, const std::vector<char>& h) { CALL(api.Memcpy(d, h.data(), h.size(), 1)); }
std::vector<char> FromDev(const void* d, size_t bytes) {
  std::vector<char> h(bytes);
  if (bytes > 0) CALL(api.Memcpy(h.data(), d, bytes, 2));
  return h;
}

// The communicator `name`: rank 0 makes the id and publishes it in DIR.
Comm InitComm(const std::string& name) {
  UniqueId id;
  const std::string path = dir + "/" + name + ".id";
  if (rank == 0) {
    CALL(api.GetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename(tmp.c_str(), path.c_str());
  } else {
    for (int i = 0;; ++i) {
      std::ifstream in(path, std::ios::binary);
      if (in.read(id.internal, sizeof(id.internal))) break;
      REQUIRE(i < 60000, "no unique id in %s", path.c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  Comm c = nullptr;
  CALL(api.CommInitRank(&c, nranks, id, rank));
  return c;
}

Comm comm = nullptr;
Stream stream = nullptr;

// Makes the op of kind `op` for dtype t on comm c (a PreMulSum for
// kPreMulSum2); *made says whether it must be destroyed.
int MakeOp(int op, int t, Comm c, bool* made) {
  *made = false;
  if (op != kPreMulSum2) return op;
  std::vector<char> two(8);
  Put(t, two.data(), 0, 2);
  int id = -1;
  CALL(api.RedOpCreatePreMulSum(&id, two.data(), t, 1, c));
  REQUIRE(id >= 5, "PreMulSum op %d", id);
  *made = true;
  return id;
}

// ------------------------------------------------------------ checks

void CheckAllReduce() {
  const size_t count = 1031;
  for (int t = 0; t < kNumDTypes; ++t) {
    const size_t es = kDTypeSize[t];
    std::vector<char> in(count * es);
    for (size_t i = 0; i < count; ++i) Put(t, in.data(), i, F(rank, i));
    void* s = DevAlloc(count * es);
    void* r = DevAlloc(count * es);
    for (int op = kSum; op <= kPreMulSum2; ++op) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        bool made;
        const int vop = MakeOp(op, t, comm, &made);
        ToDev(s, in);
        CALL(api.AllReduce(s, in_place ? s : r, count, t, vop, comm, stream));
        CALL(api.StreamSynchronize(stream));
        std::vector<char> out = FromDev(in_place ? s : r, count * es);
        for (size_t i = 0; i < count; ++i) {
          const double want = Expected(op, t, nranks, i);
          REQUIRE(Close(t, Get(t, out.data(), i), want), "%s %s%s [%zu]: got %g want %g",
                  kDTypeNames[t], kOpNames[op], in_place ? " in place" : "", i,
                  Get(t, out.data(), i), want);
        }
        std::printf("HASH allreduce.%s.%s.%d %016llx\n", kDTypeNames[t], kOpNames[op], in_place,
                    static_cast<unsigned long long>(Fnv(out.data(), out.size())));
        if (made) CALL(api.RedOpDestroy(vop, comm));
      }
    }
    CALL(api.Free(s));
    CALL(api.Free(r));
  }
}

void CheckAllReduceBitIdentical() {
  // Random floats: rounding depends on the order of the sum; every rank
  // must still get the same bits (HASH lines are compared across ranks).
  const size_t count = 100003;
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> in(count);
  for (float& x : in) x = dist(gen);
  void* d = DevAlloc(count * 4);
  CALL(api.Memcpy(d, in.data(), count * 4, 1));
  CALL(api.AllReduce(d, d, count, kF32, kSum, comm, stream));
  CALL(api.StreamSynchronize(stream));
  std::vector<char> out = FromDev(d, count * 4);
  std::printf("HASH allreduce.random.float32 %016llx\n",
              static_cast<unsigned long long>(Fnv(out.data(), out.size())));
  // A count smaller than nranks leaves some ranks without a block.
  CALL(api.Memcpy(d, in.data(), 8, 1));
  CALL(api.AllReduce(d, d, 2, kF32, kMax, comm, stream));
  CALL(api.StreamSynchronize(stream));
  std::vector<char> two = FromDev(d, 8);
  std::printf("HASH allreduce.count2 %016llx\n",
              static_cast<unsigned long long>(Fnv(two.data(), two.size())));
  CALL(api.Free(d));
}

void CheckBroadcast() {
  const size_t count = 1001;
  for (int t : {kF32, kI8, kBF16}) {
    const size_t es = kDTypeSize[t];
    void* s = DevAlloc(count * es);
    void* r = DevAlloc(count * es);
    for (int root = 0; root < nranks; ++root) {
      for (int in_place = 0; in_place < 2; ++in_place) {
        std::vector<char> in(count * es), zero(count * es, 0);
        for (size_t i = 0; i < count; ++i) Put(t, in.data(), i, F(rank, i));
        ToDev(s, in);
        ToDev(r, zero);
        void* dst = in_place ? s : r;
        CALL(api.Broadcast(s, dst, count, t, root, comm, stream));
        CALL(api.StreamSynchronize(stream));
        std::vector<char> out = FromDev(dst, count * es);
        for (size_t i = 0; i < count; ++i) {
          REQUIRE(Get(t, out.data(), i) == F(root, i), "%s root %d [%zu]", kDTypeNames[t], root,
                  i);
        }
      }
    }
    CALL(api.Free(s));
    CALL(api.Free(r));
  }
}

void CheckAllGather() {
  const size_t count = 777;
  const size_t n = static_cast<size_t>(nranks);
  void* s = DevAlloc(count * 4);
  void* r = DevAlloc(count * 4 * n);
  // 0: out of place; 1: NCCL's in place (s = r + rank * count); 2: s == r.
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<char> in(count * 4), zero(count * 4 * n, 0);
    for (size_t i = 0; i < count; ++i) Put(kI32, in.data(), i, F(rank, i) + 10 * rank);
    ToDev(r, zero);
    char* src = mode == 0 ? static_cast<char*>(s)
                          : static_cast<char*>(r) + (mode == 1 ? count * 4 * rank : 0);
    ToDev(src, in);
    CALL(api.AllGather(src, r, count, kI32, comm, stream));
    CALL(api.StreamSynchronize(stream));
    std::vector<char> out = FromDev(r, count * 4 * n);
    for (int p = 0; p < nranks; ++p) {
      for (size_t i = 0; i < count; ++i) {
        REQUIRE(Get(kI32, out.data(), p * count + i) == F(p, i) + 10 * p, "mode %d rank %d [%zu]",
                mode, p, i);
      }
    }
  }
  CALL(api.Free(s));
  CALL(api.Free(r));
}

void CheckReduceScatter() {
  const size_t rc = 513;
  const size_t n = static_cast<size_t>(nranks);
  for (int op : {kSum, kPreMulSum2}) {
    // 0: out of place; 1: NCCL's in place (r = s + rank * rc); 2: s == r.
    for (int mode = 0; mode < 3; ++mode) {
      bool made;
      const int vop = MakeOp(op, kF32, comm, &made);
      void* s = DevAlloc(rc * n * 4);
      void* r = DevAlloc(rc * 4);
      std::vector<char> in(rc * n * 4);
      for (size_t i = 0; i < rc * n; ++i) Put(kF32, in.data(), i, F(rank, i));
      ToDev(s, in);
      char* dst = mode == 0 ? static_cast<char*>(r)
                            : static_cast<char*>(s) + (mode == 1 ? rc * 4 * rank : 0);
      CALL(api.ReduceScatter(s, dst, rc, kF32, vop, comm, stream));
      CALL(api.StreamSynchronize(stream));
      std::vector<char> out = FromDev(dst, rc * 4);
      for (size_t i = 0; i < rc; ++i) {
        const double want = Expected(op, kF32, nranks, rank * rc + i);
        REQUIRE(Get(kF32, out.data(), i) == want, "%s mode %d [%zu]: got %g want %g",
                kOpNames[op], mode, i, Get(kF32, out.data(), i), want);
      }
      if (made) CALL(api.RedOpDestroy(vop, comm));
      CALL(api.Free(s));
      CALL(api.Free(r));
    }
  }
}

// Fills n bytes with a pattern of (from, to, salt).
std::vector<char> Pattern(int from, int to, size_t n, int salt = 0) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 31 + from * 7 + to * 13 + salt) % 251);
  return v;
}

void CheckSendRecv() {
  // Every rank sends to and receives from every rank (itself included) in
  // one group, messages far larger than the channels.
  const size_t big = (3u << 20) + 123;
  std::vector<void*> sbuf(nranks), rbuf(nranks);
  for (int p = 0; p < nranks; ++p) {
    sbuf[p] = DevAlloc(big);
    rbuf[p] = DevAlloc(big);
    ToDev(sbuf[p], Pattern(rank, p, big));
  }
  CALL(api.GroupStart());
  for (int p = 0; p < nranks; ++p) {
    CALL(api.Send(sbuf[p], big, kU8, p, comm, stream));
    CALL(api.Recv(rbuf[p], big, kU8, p, comm, stream));
  }
  CALL(api.GroupEnd());
  CALL(api.StreamSynchronize(stream));
  for (int p = 0; p < nranks; ++p) REQUIRE(FromDev(rbuf[p], big) == Pattern(p, rank, big), "from %d", p);
  // A ring outside of a group: even ranks send first, odd ranks receive
  // first; each call is its own stream operation.
  if (nranks > 1) {
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    const size_t n = 100000;
    ToDev(sbuf[0], Pattern(rank, next, n, 1));
    if (rank % 2 == 0) {
      CALL(api.Send(sbuf[0], n / 4, kI32, next, comm, stream));
      CALL(api.Recv(rbuf[0], n / 4, kI32, prev, comm, stream));
    } else {
      CALL(api.Recv(rbuf[0], n / 4, kI32, prev, comm, stream));
      CALL(api.Send(sbuf[0], n / 4, kI32, next, comm, stream));
    }
    CALL(api.StreamSynchronize(stream));
    REQUIRE(FromDev(rbuf[0], n) == Pattern(prev, rank, n, 1), "ring from %d", prev);
  }
  for (int p = 0; p < nranks; ++p) {
    CALL(api.Free(sbuf[p]));
    CALL(api.Free(rbuf[p]));
  }
}

void CheckAllGatherV() {
  if (!api.eccl) return;
  const size_t n = static_cast<size_t>(nranks);
  std::vector<size_t> counts(n), displs(n);
  size_t total = 0;
  for (size_t p = 0; p < n; ++p) {
    counts[p] = p == 1 ? 0 : (p * 37 + 5) % 50 + 1;  // rank 1 sends nothing
    displs[p] = total + p;                           // gaps between blocks
    total = displs[p] + counts[p];
  }
  void* r = DevAlloc(total * 8);
  void* s = DevAlloc(counts[rank] * 8 + 8);
  for (int in_place = 0; in_place < 2; ++in_place) {
    ToDev(r, std::vector<char>(total * 8, 0));
    std::vector<char> mine(counts[rank] * 8);
    for (size_t i = 0; i < counts[rank]; ++i) Put(kI64, mine.data(), i, 1000.0 * rank + i);
    char* src = in_place ? static_cast<char*>(r) + displs[rank] * 8 : static_cast<char*>(s);
    if (!mine.empty()) ToDev(src, mine);
    CALL(api.AllGatherV(src, counts[rank], r, counts.data(), displs.data(), kI64, comm, stream));
    CALL(api.StreamSynchronize(stream));
    std::vector<char> out = FromDev(r, total * 8);
    for (size_t p = 0; p < n; ++p) {
      for (size_t i = 0; i < counts[p]; ++i) {
        REQUIRE(Get(kI64, out.data(), displs[p] + i) == 1000.0 * p + i, "in_place %d rank %zu [%zu]",
                in_place, p, i);
      }
    }
  }
  CALL(api.Free(r));
  CALL(api.Free(s));
}

void CheckAlltoAllv() {
  if (!api.eccl) return;
  const size_t n = static_cast<size_t>(nranks);
  // Rank a sends (a + 2b) % 4 * 100 + 3 elements to rank b, except none
  // when (a + 2b) % 4 == 1.
  auto amount = [](size_t a, size_t b) {
    return (a + 2 * b) % 4 == 1 ? size_t{0} : (a + 2 * b) % 4 * 100 + 3;
  };
  std::vector<size_t> sc(n), sd(n), rcn(n), rd(n);
  size_t stot = 0, rtot = 0;
  for (size_t p = 0; p < n; ++p) {
    sc[p] = amount(rank, p);
    sd[p] = stot;
    stot += sc[p];
    rcn[p] = amount(p, rank);
    rd[p] = rtot;
    rtot += rcn[p];
  }
  for (int in_place = 0; in_place < 2; ++in_place) {
    void* s = DevAlloc(std::max(stot, rtot) * 4);
    void* r = in_place ? s : DevAlloc(rtot * 4);
    std::vector<char> in(stot * 4);
    for (size_t p = 0; p < n; ++p) {
      for (size_t i = 0; i < sc[p]; ++i) Put(kF32, in.data(), sd[p] + i, 1000.0 * rank + 10.0 * p + i % 7);
    }
    if (!in.empty()) ToDev(s, in);
    CALL(api.AlltoAllv(s, sc.data(), sd.data(), kF32, r, rcn.data(), rd.data(), kF32, comm, stream));
    CALL(api.StreamSynchronize(stream));
    std::vector<char> out = FromDev(r, rtot * 4);
    for (size_t p = 0; p < n; ++p) {
      for (size_t i = 0; i < rcn[p]; ++i) {
        const double want = 1000.0 * p + 10.0 * rank + i % 7;
        REQUIRE(Get(kF32, out.data(), rd[p] + i) == want, "in_place %d from %zu [%zu]", in_place,
                p, i);
      }
    }
    CALL(api.Free(s));
    if (!in_place) CALL(api.Free(r));
  }
}

void CheckZeroCounts() {
  CALL(api.AllReduce(nullptr, nullptr, 0, kF32, kSum, comm, stream));
  CALL(api.Broadcast(nullptr, nullptr, 0, kF32, 0, comm, stream));
  CALL(api.AllGather(nullptr, nullptr, 0, kF32, comm, stream));
  CALL(api.ReduceScatter(nullptr, nullptr, 0, kF32, kSum, comm, stream));
  CALL(api.GroupStart());
  for (int p = 0; p < nranks; ++p) {
    CALL(api.Send(nullptr, 0, kF32, p, comm, stream));
    CALL(api.Recv(nullptr, 0, kF32, p, comm, stream));
  }
  CALL(api.GroupEnd());
  if (api.eccl) {
    std::vector<size_t> zeros(nranks, 0);
    CALL(api.AlltoAllv(nullptr, zeros.data(), zeros.data(), kF32, nullptr, zeros.data(),
                       zeros.data(), kF32, comm, stream));
    CALL(api.AllGatherV(nullptr, 0, nullptr, zeros.data(), zeros.data(), kF32, comm, stream));
  }
  CALL(api.StreamSynchronize(stream));
}

void CheckInvalidArguments() {
  std::vector<float> host(16);
  void* d = DevAlloc(64);
  REQUIRE(api.AllReduce(host.data(), d, 16, kF32, kSum, comm, stream) == 4, "host send buffer");
  REQUIRE(api.AllReduce(d, host.data(), 16, kF32, kSum, comm, stream) == 4, "host recv buffer");
  REQUIRE(api.AllReduce(d, d, 17, kF32, kSum, comm, stream) == 4, "past the allocation");
  REQUIRE(api.AllReduce(d, d, 16, 42, kSum, comm, stream) == 4, "bad dtype");
  REQUIRE(api.AllReduce(d, d, 16, kF32, 99, comm, stream) == 4, "bad op");
  REQUIRE(api.Broadcast(d, d, 16, kF32, nranks, comm, stream) == 4, "bad root");
  REQUIRE(api.Send(d, 16, kF32, nranks, comm, stream) == 4, "bad peer");
  REQUIRE(api.AllReduce(d, d, 16, kF32, kSum, reinterpret_cast<Comm>(d), stream) == 4,
          "bad communicator");
  REQUIRE(api.GroupEnd() == 5, "GroupEnd without GroupStart");
  REQUIRE(std::strlen(api.GetErrorString(4)) > 5, "an error string");
  float two = 2;
  int op;
  REQUIRE(api.RedOpCreatePreMulSum(&op, &two, kF32, 0, comm) == 4, "device-resident scalar");
  REQUIRE(api.RedOpCreatePreMulSum(&op, d, kF32, 1, comm) == 4, "scalar in device memory");
  CALL(api.RedOpCreatePreMulSum(&op, &two, kF32, 1, comm));
  REQUIRE(api.AllReduce(d, d, 4, kF64, op, comm, stream) == 4, "PreMulSum of another dtype");
  CALL(api.RedOpDestroy(op, comm));
  REQUIRE(api.RedOpDestroy(op, comm) == 4, "op destroyed twice");
  CALL(api.Free(d));
}

void CheckGroupedCollectives() {
  // Two allreduces and a broadcast in one group, on one communicator.
  const size_t count = 300000;  // larger than a channel
  void* a = DevAlloc(count * 4);
  void* b = DevAlloc(count * 4);
  void* c = DevAlloc(64);
  std::vector<char> in(count * 4), cin(64);
  for (size_t i = 0; i < count; ++i) Put(kI32, in.data(), i, F(rank, i));
  for (size_t i = 0; i < 16; ++i) Put(kF32, cin.data(), i, rank);
  ToDev(a, in);
  ToDev(b, in);
  ToDev(c, cin);
  CALL(api.GroupStart());
  CALL(api.AllReduce(a, a, count, kI32, kSum, comm, stream));
  CALL(api.AllReduce(b, b, count, kI32, kMax, comm, stream));
  CALL(api.Broadcast(c, c, 16, kF32, nranks - 1, comm, stream));
  CALL(api.GroupEnd());
  CALL(api.StreamSynchronize(stream));
  std::vector<char> oa = FromDev(a, count * 4), ob = FromDev(b, count * 4), oc = FromDev(c, 64);
  for (size_t i = 0; i < count; ++i) {
    REQUIRE(Get(kI32, oa.data(), i) == Expected(kSum, kI32, nranks, i), "sum [%zu]", i);
    REQUIRE(Get(kI32, ob.data(), i) == Expected(kMax, kI32, nranks, i), "max [%zu]", i);
  }
  REQUIRE(Get(kF32, oc.data(), 15) == nranks - 1, "broadcast");
  CALL(api.Free(a));
  CALL(api.Free(b));
  CALL(api.Free(c));
}

void CheckTwoCommunicators() {
  // A second communicator used from a second stream, concurrently.
  Comm c2 = InitComm("second");
  Stream s2;
  CALL(api.StreamCreateWithFlags(&s2, 1));
  const size_t count = 1 << 20;
  void* a = DevAlloc(count * 4);
  void* b = DevAlloc(count * 4);
  std::vector<char> in(count * 4);
  for (size_t i = 0; i < count; ++i) Put(kF32, in.data(), i, F(rank, i));
  ToDev(a, in);
  ToDev(b, in);
  CALL(api.AllReduce(a, a, count, kF32, kSum, comm, stream));
  CALL(api.AllReduce(b, b, count, kF32, kMin, c2, s2));
  CALL(api.StreamSynchronize(stream));
  CALL(api.StreamSynchronize(s2));
  std::vector<char> oa = FromDev(a, count * 4), ob = FromDev(b, count * 4);
  for (size_t i = 0; i < count; i += 97) {
    REQUIRE(Get(kF32, oa.data(), i) == Expected(kSum, kF32, nranks, i), "comm 1 [%zu]", i);
    REQUIRE(Get(kF32, ob.data(), i) == Expected(kMin, kF32, nranks, i), "comm 2 [%zu]", i);
  }
  CALL(api.CommDestroy(c2));
  CALL(api.StreamDestroy(s2));
  CALL(api.Free(a));
  CALL(api.Free(b));
}

void CheckLargeAllReduce() {
  const size_t count = 16u << 20;  // 64 MiB of float32
  std::vector<float> in(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 1000 + rank);
  void* d = DevAlloc(count * 4);
  CALL(api.Memcpy(d, in.data(), count * 4, 1));
  const auto t0 = std::chrono::steady_clock::now();
  CALL(api.AllReduce(d, d, count, kF32, kSum, comm, stream));
  CALL(api.StreamSynchronize(stream));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<float> out(count);
  CALL(api.Memcpy(out.data(), d, count * 4, 2));
  const double base = nranks * (nranks - 1) / 2.0;
  for (size_t i = 0; i < count; ++i) {
    REQUIRE(out[i] == static_cast<float>(nranks * (i % 1000) + base), "[%zu] got %g", i, out[i]);
  }
  std::printf("INFO 64 MiB allreduce: %.3f s (%.0f MB/s algbw)\n", secs, 64 * 1.048576 / secs);
  CALL(api.Free(d));
}

void CheckOneRankScaling() {
  // How a plugin scales a buffer: an allreduce with a PreMulSum op on a
  // communicator of this rank alone (no rendezvous, no shared memory).
  UniqueId id;
  CALL(api.GetUniqueId(&id));
  Comm solo = nullptr;
  CALL(api.CommInitRank(&solo, 1, id, 0));
  const size_t count = 1 << 18;
  std::vector<float> in(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 100);
  void* d = DevAlloc(count * 4);
  CALL(api.Memcpy(d, in.data(), count * 4, 1));
  float half = 0.5f;
  int op;
  CALL(api.RedOpCreatePreMulSum(&op, &half, kF32, 1, solo));
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 10; ++k) CALL(api.AllReduce(d, d, count, kF32, op, solo, stream));
  CALL(api.StreamSynchronize(stream));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<float> out(count);
  CALL(api.Memcpy(out.data(), d, count * 4, 2));
  for (size_t i = 0; i < count; ++i) {
    REQUIRE(out[i] == static_cast<float>(i % 100) / 1024, "[%zu] got %g", i, out[i]);
  }
  std::printf("INFO 10 one-rank scalings of 1 MiB: %.4f s\n", secs);
  CALL(api.RedOpDestroy(op, solo));
  CALL(api.CommDestroy(solo));
  CALL(api.Free(d));
}

void CheckNoAsyncError() {
  int e = -1;
  CALL(api.CommGetAsyncError(comm, &e));
  REQUIRE(e == 0, "async error %d", e);
}

// ------------------------------------------------------------ dead peer

int DeadPeer() {
  comm = InitComm("deadpeer");
  CALL(api.StreamCreateWithFlags(&stream, 1));
  const size_t count = 1 << 20;
  void* d = DevAlloc(count * 4);
  CALL(api.AllReduce(d, d, 1000, kF32, kSum, comm, stream));  // both ranks are in
  CALL(api.StreamSynchronize(stream));
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(600));  // killed by the test
    return 1;
  }
  void* event;
  CALL(api.EventCreateWithFlags(&event, 2));
  CALL(api.AllReduce(d, d, count, kF32, kSum, comm, stream));  // rank 1 never joins
  CALL(api.EventRecord(event, stream));
  std::ofstream(dir + "/enqueued") << "1";
  const auto t0 = std::chrono::steady_clock::now();
  int e = 0;
  while (e == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    CALL(api.CommGetAsyncError(comm, &e));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("DEADPEER async_error=%d detect_s=%.3f\n", e, secs);
  REQUIRE(e == (api.eccl ? 2 : 6), "async error %d", e);
  REQUIRE(api.EventQuery(event) == 600, "the stream must stay blocked until the abort");
  api.GetLastError();
  // The abort unblocks the stream; a watchdog turns a hang into a failure.
  std::atomic<bool> synced{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 1000 && !synced; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!synced) {
      std::printf("FAIL deadpeer: the stream stayed blocked after CommAbort\n");
      std::fflush(stdout);
      std::_Exit(3);
    }
  });
  CALL(api.CommAbort(comm));
  CALL(api.StreamSynchronize(stream));
  synced = true;
  watchdog.join();
  REQUIRE(api.AllReduce(d, d, count, kF32, kSum, comm, stream) == 4, "an aborted handle is gone");
  CALL(api.EventDestroy(event));
  std::printf("PASS deadpeer\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  alarm(240);  // a hang fails (SIGALRM) instead of stalling the suite
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string which = "eccl", mode = "checks";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--api") which = v;
    else if (k == "--rank") rank = std::atoi(v.c_str());
    else if (k == "--nranks") nranks = std::atoi(v.c_str());
    else if (k == "--dir") dir = v;
    else if (k == "--mode") mode = v;
    else Die("unknown argument " + k);
  }
  if (dir.empty() || (which != "eccl" && which != "nccl")) Die("need --api eccl|nccl and --dir");
  LoadApi(which == "eccl");
  if (mode == "deadpeer") {
    try {
      return DeadPeer();
    } catch (const Failure& f) {
      std::printf("FAIL deadpeer: %s\n", f.why.c_str());
      return 1;
    }
  }
  try {
    comm = InitComm("main");
    CALL(api.StreamCreateWithFlags(&stream, 1));
  } catch (const Failure& f) {
    Die("init: " + f.why);
  }
  Check("allreduce", CheckAllReduce);
  Check("allreduce_bit_identical", CheckAllReduceBitIdentical);
  Check("broadcast", CheckBroadcast);
  Check("allgather", CheckAllGather);
  Check("reduce_scatter", CheckReduceScatter);
  Check("send_recv", CheckSendRecv);
  if (api.eccl) Check("allgatherv", CheckAllGatherV);
  if (api.eccl) Check("alltoallv", CheckAlltoAllv);
  Check("zero_counts", CheckZeroCounts);
  Check("invalid_arguments", CheckInvalidArguments);
  Check("grouped_collectives", CheckGroupedCollectives);
  Check("two_communicators", CheckTwoCommunicators);
  Check("large_allreduce", CheckLargeAllReduce);
  Check("one_rank_scaling", CheckOneRankScaling);
  Check("no_async_error", CheckNoAsyncError);
  try {
    CALL(api.CommDestroy(comm));
    CALL(api.StreamDestroy(stream));
  } catch (const Failure& f) {
    ++failures;
    std::printf("FAIL teardown: %s\n", f.why.c_str());
  }
  std::printf("INFO %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
