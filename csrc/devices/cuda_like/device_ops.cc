// hvda_device_ops_v1 over a CUDA-like runtime (vendor_api.h).
#include "devices/cuda_like/device_ops.h"

#include <algorithm>
#include <new>
#include <utility>

#include "devices/cuda_like/framework_streams.h"
#include "devices/cuda_like/host_kernels.h"
#include "devices/cuda_like/plugin_instance.h"

namespace hvda {
namespace vendor {
namespace {

PluginStream* S(hvda_stream_t s) { return reinterpret_cast<PluginStream*>(s); }
PluginEvent* E(hvda_event_t e) { return reinterpret_cast<PluginEvent*>(e); }

hvda_status SetDevice(PluginInstance* p, int device) {
  return RuntimeResult(*p, p->api().set_device(device), p->spec().rt.set_device);
}

hvda_status DeviceCount(int* count) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().get_device_count(count), p->spec().rt.get_device_count);
}

hvda_status SetDeviceOp(int device) {
  HVDA_REQUIRE(p);
  return SetDevice(p, device);
}

hvda_status MemAlloc(int device, size_t bytes, void** ptr) {
  HVDA_REQUIRE(p);
  if (auto s = SetDevice(p, device)) return s;
  // One byte for empty buffers: a valid, unique, freeable pointer (plugin.h).
  return RuntimeResult(*p, p->api().malloc(ptr, std::max<size_t>(bytes, 1)), p->spec().rt.malloc);
}

hvda_status MemFree(int device, void* ptr) {
  HVDA_REQUIRE(p);
  if (ptr == nullptr) return HVDA_OK;
  if (auto s = SetDevice(p, device)) return s;
  return RuntimeResult(*p, p->api().free(ptr), p->spec().rt.free);
}

hvda_status HostAlloc(size_t bytes, void** ptr) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().host_alloc(ptr, std::max<size_t>(bytes, 1), 0),
                       p->spec().rt.host_alloc);
}

hvda_status HostFree(void* ptr) {
  HVDA_REQUIRE(p);
  if (ptr == nullptr) return HVDA_OK;
  return RuntimeResult(*p, p->api().host_free(ptr), p->spec().rt.host_free);
}

int CopyKind(const VendorSpec& spec, hvda_memcpy_kind kind) {
  switch (kind) {
    case HVDA_COPY_HOST_TO_DEVICE: return spec.memcpy_h2d;
    case HVDA_COPY_DEVICE_TO_HOST: return spec.memcpy_d2h;
    default: return spec.memcpy_d2d;
  }
}

hvda_status MemcpyAsync(void* dst, const void* src, size_t bytes, hvda_memcpy_kind kind,
                        hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  if (bytes == 0) return HVDA_OK;
  return RuntimeResult(
      *p, p->api().memcpy_async(dst, src, bytes, CopyKind(p->spec(), kind), S(stream)->native),
      p->spec().rt.memcpy_async);
}

hvda_status MemsetAsync(void* dst, int value, size_t bytes, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  if (bytes == 0) return HVDA_OK;
  return RuntimeResult(*p, p->api().memset_async(dst, value, bytes, S(stream)->native),
                       p->spec().rt.memset_async);
}

hvda_status StreamCreate(int device, hvda_stream_t* out) {
  HVDA_REQUIRE(p);
  if (auto s = SetDevice(p, device)) return s;
  NativeStream native = nullptr;
  if (auto s = RuntimeResult(*p, p->api().stream_create_with_flags(&native, p->spec().stream_non_blocking),
                             p->spec().rt.stream_create_with_flags))
    return s;
  auto* st = new (std::nothrow) PluginStream();
  if (st == nullptr) {
    p->api().stream_destroy(native);
    return Fail(HVDA_OUT_OF_MEMORY, "out of host memory for a stream handle");
  }
  st->native = native;
  st->device = device;
  st->owned = true;
  *out = reinterpret_cast<hvda_stream_t>(st);
  return HVDA_OK;
}

hvda_status StreamWrap(int device, void* native, hvda_stream_t* out) {
  HVDA_REQUIRE(p);
  auto* st = new (std::nothrow) PluginStream();
  if (st == nullptr) return Fail(HVDA_OUT_OF_MEMORY, "out of host memory for a stream handle");
  st->native = native;
  st->device = device;
  st->owned = false;
  *out = reinterpret_cast<hvda_stream_t>(st);
  return HVDA_OK;
}

hvda_status StreamSynchronize(hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().stream_synchronize(S(stream)->native),
                       p->spec().rt.stream_synchronize);
}

hvda_status StreamDestroy(hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  PluginStream* st = S(stream);
  hvda_status result = HVDA_OK;
  if (st->staging != nullptr) {  // staged work may still read it
    result = StreamSynchronize(stream);
    p->api().host_free(st->staging);
  }
  if (st->owned) {
    hvda_status s = RuntimeResult(*p, p->api().stream_destroy(st->native),
                                  p->spec().rt.stream_destroy);
    if (result == HVDA_OK) result = s;
  }
  delete st;
  return result;
}

hvda_status StreamWaitEvent(hvda_stream_t stream, hvda_event_t event) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().stream_wait_event(S(stream)->native, E(event)->native, 0),
                       p->spec().rt.stream_wait_event);
}

hvda_status EventCreate(int device, hvda_event_t* out) {
  HVDA_REQUIRE(p);
  if (auto s = SetDevice(p, device)) return s;
  NativeEvent native = nullptr;
  if (auto s = RuntimeResult(*p, p->api().event_create_with_flags(&native, p->spec().event_disable_timing),
                             p->spec().rt.event_create_with_flags))
    return s;
  auto* ev = new (std::nothrow) PluginEvent();
  if (ev == nullptr) {
    p->api().event_destroy(native);
    return Fail(HVDA_OUT_OF_MEMORY, "out of host memory for an event handle");
  }
  ev->native = native;
  ev->device = device;
  *out = reinterpret_cast<hvda_event_t>(ev);
  return HVDA_OK;
}

hvda_status EventDestroy(hvda_event_t event) {
  HVDA_REQUIRE(p);
  hvda_status s = RuntimeResult(*p, p->api().event_destroy(E(event)->native),
                                p->spec().rt.event_destroy);
  delete E(event);
  return s;
}

hvda_status EventRecord(hvda_event_t event, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().event_record(E(event)->native, S(stream)->native),
                       p->spec().rt.event_record);
}

hvda_status EventQuery(hvda_event_t event) {
  HVDA_REQUIRE(p);
  const int r = p->api().event_query(E(event)->native);
  if (r == p->spec().rt_not_ready) {
    // TOPS leaves a sticky error behind a NotReady query; clear it so the
    // next checked call does not report it.
    if (p->spec().not_ready_is_sticky) p->api().get_last_error();
    return HVDA_NOT_READY;
  }
  return RuntimeResult(*p, r, p->spec().rt.event_query);
}

hvda_status EventSynchronize(hvda_event_t event) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().event_synchronize(E(event)->native),
                       p->spec().rt.event_synchronize);
}

// ---------------------------------------------------------------- staged kernels

// Work of a host function: runs on the runtime's thread once the stream got
// there; owns itself (deleted after running).
struct StagedKernel {
  enum Kind { kScale, kReduce } kind;
  void* a;        // pinned host: the buffer (scale) or dst (reduce)
  const void* b;  // pinned host: src (reduce)
  int64_t count;
  hvda_dtype dtype;
  double factor;
  hvda_reduce_op op;

  static void Run(void* arg) {
    auto* k = static_cast<StagedKernel*>(arg);
    if (k->kind == kScale) HostScale(k->a, k->count, k->dtype, k->factor);
    else HostReduceInto(k->a, k->b, k->count, k->dtype, k->op);
    delete k;
  }
};

// The stream's pinned staging buffer, at least `bytes` (grown after the
// stream's earlier work, which may still use the old one, has run).
hvda_status Staging(PluginInstance* p, PluginStream* st, size_t bytes, void** out) {
  if (st->staging_bytes < bytes) {
    if (st->staging != nullptr) {
      if (auto s = RuntimeResult(*p, p->api().stream_synchronize(st->native),
                                 p->spec().rt.stream_synchronize))
        return s;
      p->api().host_free(st->staging);
      st->staging = nullptr;
      st->staging_bytes = 0;
    }
    const size_t grown = std::max(bytes, size_t{1} << 20);
    if (auto s = RuntimeResult(*p, p->api().host_alloc(&st->staging, grown, 0),
                               p->spec().rt.host_alloc))
      return s;
    st->staging_bytes = grown;
  }
  *out = st->staging;
  return HVDA_OK;
}

// Copies `n` device buffers to the staging area, runs k on them on the host
// (in stream order) and copies the first back.
hvda_status RunStaged(PluginInstance* p, PluginStream* st, StagedKernel k, void* dev_a,
                      const void* dev_b) {
  const VendorApi& a = p->api();
  const VendorSpec& spec = p->spec();
  const size_t bytes = static_cast<size_t>(k.count) * DtypeSize(k.dtype);
  void* stage = nullptr;
  if (auto s = Staging(p, st, dev_b != nullptr ? 2 * bytes : bytes, &stage)) return s;
  char* host_a = static_cast<char*>(stage);
  char* host_b = host_a + bytes;
  if (auto s = RuntimeResult(*p, a.memcpy_async(host_a, dev_a, bytes, spec.memcpy_d2h, st->native),
                             spec.rt.memcpy_async))
    return s;
  if (dev_b != nullptr) {
    if (auto s = RuntimeResult(*p, a.memcpy_async(host_b, dev_b, bytes, spec.memcpy_d2h, st->native),
                               spec.rt.memcpy_async))
      return s;
  }
  auto* job = new (std::nothrow) StagedKernel(k);
  if (job == nullptr) return Fail(HVDA_OUT_OF_MEMORY, "out of host memory for a staged kernel");
  job->a = host_a;
  job->b = host_b;
  if (auto s = RuntimeResult(*p, a.launch_host_func(st->native, &StagedKernel::Run, job),
                             spec.rt.launch_host_func)) {
    delete job;
    return s;
  }
  return RuntimeResult(*p, a.memcpy_async(dev_a, host_a, bytes, spec.memcpy_h2d, st->native),
                       spec.rt.memcpy_async);
}

bool IsFloat(hvda_dtype d) {
  return d == HVDA_FLOAT16 || d == HVDA_BFLOAT16 || d == HVDA_FLOAT32 || d == HVDA_FLOAT64;
}

hvda_status Scale(void* buf, int64_t count, hvda_dtype dtype, double factor,
                  hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  if (count <= 0 || factor == 1.0) return HVDA_OK;
  if (DtypeSize(dtype) == 0) return Fail(HVDA_INVALID_ARGUMENT, "scale: unknown dtype");
  PluginStream* st = S(stream);
  const VendorApi& a = p->api();
  const VendorSpec& spec = p->spec();
  const int vdt = spec.dtype[dtype];
  // Floating point (not float64, NOTE [One-rank PreMulSum tail]): a
  // PreMulSum allreduce over a one-rank communicator runs buf * factor on
  // the device without a kernel of our own.
  if (IsFloat(dtype) && dtype != HVDA_FLOAT64 && vdt >= 0 && a.red_op_create_pre_mul_sum != nullptr) {
    NativeComm self = nullptr;
    if (auto s = p->SelfComm(st->device, &self)) return s;
    alignas(8) unsigned char scalar[8];
    ScalarOf(factor, dtype, scalar);
    int op = -1;
    if (auto s = CclResult(*p, a.red_op_create_pre_mul_sum(&op, scalar, vdt,
                                                           spec.scalar_host_immediate, self),
                           spec.ccl.red_op_create_pre_mul_sum))
      return s;
    // NOTE [One-rank PreMulSum tail]: NCCL's in-place one-rank PreMulSum
    // left elements unscaled above 16 KiB when the byte count was not a
    // multiple of 32 (seen with NCCL 2.28.9; the sweep is in
    // docs/design/plugins.md). So the buffer is scaled as a body of whole
    // 32-byte blocks and a tail under 32 bytes, two calls on one stream.
    // float64 lost elements inside whole blocks too and takes the staged
    // host kernel below (exact, slower) until the plugin has a kernel.
    const size_t esize = DtypeSize(dtype);
    const size_t total = static_cast<size_t>(count);
    const size_t body = (total * esize / 32 * 32) / esize;
    hvda_status s = HVDA_OK;
    for (const auto& piece : {std::make_pair(size_t{0}, body), std::make_pair(body, total - body)}) {
      if (piece.second == 0) continue;
      void* at = static_cast<char*>(buf) + piece.first * esize;
      s = CclResult(*p, a.all_reduce(at, at, piece.second, vdt, op, self, st->native),
                    spec.ccl.all_reduce);
      if (s != HVDA_OK) break;
    }
    a.red_op_destroy(op, self);  // the enqueued reductions keep what they need
    return s;
  }
  StagedKernel k{StagedKernel::kScale, nullptr, nullptr, count, dtype, factor, HVDA_SUM};
  return RunStaged(p, st, k, buf, nullptr);
}

hvda_status ReduceInto(void* dst, const void* src, int64_t count, hvda_dtype dtype,
                       hvda_reduce_op op, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  if (count <= 0) return HVDA_OK;
  if (DtypeSize(dtype) == 0) return Fail(HVDA_INVALID_ARGUMENT, "reduce_into: unknown dtype");
  if (op != HVDA_SUM && op != HVDA_MIN && op != HVDA_MAX && op != HVDA_PRODUCT)
    return Fail(HVDA_UNSUPPORTED, "reduce_into supports Sum, Min, Max and Product only");
  StagedKernel k{StagedKernel::kReduce, nullptr, nullptr, count, dtype, 1.0, op};
  return RunStaged(p, S(stream), k, dst, src);
}

hvda_status BatchedCopy(const hvda_copy_desc* copies, size_t n, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  for (size_t i = 0; i < n; ++i) {
    if (copies[i].bytes == 0) continue;
    if (auto s = RuntimeResult(*p, p->api().memcpy_async(copies[i].dst, copies[i].src,
                                                         copies[i].bytes, p->spec().memcpy_d2d,
                                                         S(stream)->native),
                               p->spec().rt.memcpy_async))
      return s;
  }
  return HVDA_OK;
}

hvda_status LaunchHostFunc(hvda_stream_t stream, void (*fn)(void*), void* arg) {
  HVDA_REQUIRE(p);
  return RuntimeResult(*p, p->api().launch_host_func(S(stream)->native, fn, arg),
                       p->spec().rt.launch_host_func);
}

}  // namespace

const hvda_device_ops_v1* DeviceOps() {
  static const hvda_device_ops_v1 ops = [] {
    hvda_device_ops_v1 o{};
    o.struct_size = sizeof(o);
    o.device_count = DeviceCount;
    o.set_device = SetDeviceOp;
    o.mem_alloc = MemAlloc;
    o.mem_free = MemFree;
    o.host_alloc = HostAlloc;
    o.host_free = HostFree;
    o.memcpy_async = MemcpyAsync;
    o.memset_async = MemsetAsync;
    o.stream_create = StreamCreate;
    o.stream_wrap = StreamWrap;
    o.stream_destroy = StreamDestroy;
    o.stream_synchronize = StreamSynchronize;
    o.stream_wait_event = StreamWaitEvent;
    o.event_create = EventCreate;
    o.event_destroy = EventDestroy;
    o.event_record = EventRecord;
    o.event_query = EventQuery;
    o.event_synchronize = EventSynchronize;
    o.scale = Scale;
    o.reduce_into = ReduceInto;
    o.batched_copy = BatchedCopy;
    o.launch_host_func = LaunchHostFunc;
    o.stream_from_framework = StreamFromFramework;
    return o;
  }();
  return &ops;
}

}  // namespace vendor
}  // namespace hvda
