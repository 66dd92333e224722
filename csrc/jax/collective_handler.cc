// The XLA FFI handlers that run one Horovod collective (or one group) inside
// a compiled JAX program, registered by horovod_accel/jax/xla_link.py as the
// custom-call target "hvda_collective": hvda_jax_collective_cpu for the "cpu"
// platform (host buffers), hvda_jax_collective_cuda for "CUDA" (device
// buffers, XLA's stream handed to the core, which serves them through the
// CUDA device plugin: no host staging).
//
// Call contract (what horovod_accel/jax/xla_lowering.py emits):
//   operands: an ordering token, then the n >= 1 input buffers;
//   results:  a token, then the n output buffers (shapes fixed at trace time);
//   attributes: kind (hvda_core_op_type), name (the full core name of the
//     first tensor; tensor i > 0 of a group gets name + "." + i), process_set,
//     reduce_op, prescale, postscale, root_rank.
// The token threads every Horovod custom call of a program into one chain
// (an ordered JAX effect), so each rank issues its collectives in program
// order; the core matches them across ranks by name.
//
// Blocking: the handler blocks XLA's executing thread until the ops complete
// (enqueue_wait drives the core's negotiation from this thread). Every core
// failure path completes the ops (mismatch, lost peer, shutdown, the
// deadlock timeout), so it never blocks forever.
//
// Copies: allreduce, broadcast and reducescatter hand XLA's buffers to the
// core, which reads the input and writes the result in place (when the
// lowering aliases the output to the input, both are one buffer); allgather
// and alltoall receive a core-allocated result (its size is known only after
// negotiation) and copy it into XLA's output, whose size was fixed at trace
// time: a different size is an error that says why. On CUDA those two are
// refused (core_api.h offers no device-allocated results yet; the Python
// side says so at trace time).
//
// CUDA ordering: XLA launches the kernels producing the inputs on its stream
// before calling the handler, possibly not yet run. The core records an event
// on that stream and its communicator's stream waits for it; the handler
// returns once the collective has written the outputs, so the kernels XLA
// launches after it read finished data.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core_link.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace hvda_jax {
namespace {

// The core's dtype code of an XLA element type; -1 when the core has none.
int32_t CoreDtype(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::U8: return 0;
    case ffi::DataType::S8: return 1;
    case ffi::DataType::S16: return 2;
    case ffi::DataType::S32: return 3;
    case ffi::DataType::S64: return 4;
    case ffi::DataType::F16: return 5;
    case ffi::DataType::BF16: return 6;
    case ffi::DataType::F32: return 7;
    case ffi::DataType::F64: return 8;
    case ffi::DataType::PRED: return 9;
    case ffi::DataType::U16: return 10;
    default: return -1;
  }
}

ffi::ErrorCode XlaCode(int32_t status) {
  switch (status) {
    case HVDA_CORE_PRECONDITION: return ffi::ErrorCode::kFailedPrecondition;
    case HVDA_CORE_ABORTED: return ffi::ErrorCode::kAborted;
    case HVDA_CORE_INVALID_ARGUMENT: return ffi::ErrorCode::kInvalidArgument;
    case HVDA_CORE_TIMEOUT: return ffi::ErrorCode::kDeadlineExceeded;
    case HVDA_CORE_UNAVAILABLE: return ffi::ErrorCode::kUnavailable;
    case HVDA_CORE_UNIMPLEMENTED: return ffi::ErrorCode::kUnimplemented;
    default: return ffi::ErrorCode::kUnknown;
  }
}

// Every message starts with "horovod_accel: ", which the Python side (the
// elastic run loop) uses to tell Horovod's failures from other XLA errors.
ffi::Error Failure(ffi::ErrorCode code, const std::string& message) {
  return ffi::Error(code, "horovod_accel: " + message);
}

// One op's completion, filled in by Done on the calling thread (enqueue_wait
// calls `done` before it returns). Lives on the handler's stack.
struct Slot {
  const std::string* name = nullptr;
  int32_t kind = 0;
  void* copy_to = nullptr;  // core-allocated results go here
  size_t copy_bytes = 0;
  int32_t status = HVDA_CORE_OK;
  std::string message;
};

void Done(void* user, const hvda_core_result* r) {
  Slot* slot = static_cast<Slot*>(user);
  if (r->status != HVDA_CORE_OK) {
    slot->status = r->status;
    slot->message = r->message != nullptr ? r->message : "unknown error";
    return;
  }
  if (slot->copy_to == nullptr && slot->copy_bytes == 0) return;  // written in place
  if (r->output_bytes != slot->copy_bytes) {
    slot->status = HVDA_CORE_INVALID_ARGUMENT;
    const char* what = slot->kind == HVDA_CORE_ALLGATHER ? "allgather" : "alltoall";
    slot->message = std::string(what) + " '" + *slot->name + "' inside jax.jit received " +
                    std::to_string(r->output_bytes) + " bytes, but its output was sized " +
                    std::to_string(slot->copy_bytes) + " bytes when the function was traced: " +
                    (slot->kind == HVDA_CORE_ALLGATHER
                         ? "inside jit every rank must gather the same first dimension"
                         : "inside jit alltoall sends equal splits on every rank") +
                    ". Call it outside jax.jit for ragged shapes.";
    return;
  }
  if (r->output_bytes > 0) std::memcpy(slot->copy_to, r->output, r->output_bytes);
}

bool CoreAllocatesOutput(int32_t kind) {
  return kind == HVDA_CORE_ALLGATHER || kind == HVDA_CORE_ALLTOALL;
}

// Where the buffers of a call live: host (device_type null) or an
// accelerator's memory with XLA's stream for it.
struct Placement {
  const char* device_type = nullptr;
  int32_t device = -1;
  void* stream = nullptr;
};

ffi::Error Collective(const Placement& where, ffi::RemainingArgs args, ffi::RemainingRets rets,
                      int64_t kind, std::string_view name, int64_t process_set,
                      int64_t reduce_op, double prescale, double postscale, int64_t root_rank) {
  const std::string link = LinkError();
  if (!link.empty()) return Failure(ffi::ErrorCode::kFailedPrecondition, link);
  // Operand 0 and result 0 are the ordering token.
  const size_t n = args.size() - 1;
  if (args.size() < 2 || rets.size() != args.size())
    return Failure(ffi::ErrorCode::kInternal,
                   "hvda_collective called with " + std::to_string(args.size()) + " operands and " +
                       std::to_string(rets.size()) + " results (expected a token and n >= 1 "
                       "buffers each)");
  std::vector<std::string> names(n);
  std::vector<std::vector<int64_t>> shapes(n);
  std::vector<Slot> slots(n);
  std::vector<hvda_core_op> ops(n);
  for (size_t i = 0; i < n; ++i) {
    auto in = args.get<ffi::AnyBuffer>(i + 1);
    auto out = rets.get<ffi::AnyBuffer>(i + 1);
    if (in.has_error()) return in.error();
    if (out.has_error()) return out.error();
    names[i] = std::string(name);
    if (n > 1) names[i] += "." + std::to_string(i);
    const int32_t dtype = CoreDtype(in->element_type());
    if (dtype < 0)
      return Failure(ffi::ErrorCode::kInvalidArgument,
                     "tensor '" + names[i] + "' has an element type Horovod does not support");
    auto dims = in->dimensions();
    shapes[i].assign(dims.begin(), dims.end());
    slots[i].name = &names[i];
    slots[i].kind = static_cast<int32_t>(kind);
    hvda_core_op& op = ops[i];
    op = hvda_core_op{};
    op.struct_size = sizeof(hvda_core_op);
    op.type = static_cast<int32_t>(kind);
    op.name = names[i].c_str();
    op.process_set_id = static_cast<int32_t>(process_set);
    op.input = in->untyped_data();
    if (CoreAllocatesOutput(op.type)) {
      if (where.device_type != nullptr)
        return Failure(ffi::ErrorCode::kUnimplemented,
                       "tensor '" + names[i] + "': allgather and alltoall inside jax.jit run on "
                       "CPU arrays only for now");
      op.output = nullptr;
      slots[i].copy_to = (*out)->untyped_data();
      slots[i].copy_bytes = (*out)->size_bytes();
    } else {
      op.output = (*out)->untyped_data();
    }
    op.dtype = dtype;
    op.shape = shapes[i].data();
    op.ndim = static_cast<int32_t>(shapes[i].size());
    op.reduce_op = static_cast<int32_t>(reduce_op);
    op.prescale = prescale;
    op.postscale = postscale;
    op.root_rank = static_cast<int32_t>(root_rank);
    op.splits = nullptr;  // alltoall inside jit: equal split
    op.num_splits = 0;
    op.done = &Done;
    op.done_user = &slots[i];
    op.device_type = where.device_type;
    op.device = where.device;
    op.stream = where.stream;
  }
  const hvda_core_api_v1* api = CoreApi();
  int32_t rc = api->enqueue_wait(CoreRuntime(), ops.data(), static_cast<int32_t>(n));
  if (rc != HVDA_CORE_OK) return Failure(XlaCode(rc), api->last_error());
  for (const Slot& s : slots)
    if (s.status != HVDA_CORE_OK) return Failure(XlaCode(s.status), s.message);
  return ffi::Error::Success();
}

ffi::Error CollectiveCpu(ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t kind,
                         std::string_view name, int64_t process_set, int64_t reduce_op,
                         double prescale, double postscale, int64_t root_rank) {
  return Collective(Placement{}, args, rets, kind, name, process_set, reduce_op, prescale,
                    postscale, root_rank);
}

// The device type the CUDA plugin serves (the name torch's tensors carry too).
constexpr char kCudaDeviceType[] = "cuda";

ffi::Error CollectiveCuda(void* stream, int32_t device_ordinal, ffi::RemainingArgs args,
                          ffi::RemainingRets rets, int64_t kind, std::string_view name,
                          int64_t process_set, int64_t reduce_op, double prescale,
                          double postscale, int64_t root_rank) {
  return Collective(Placement{kCudaDeviceType, device_ordinal, stream}, args, rets, kind, name,
                    process_set, reduce_op, prescale, postscale, root_rank);
}

}  // namespace
}  // namespace hvda_jax

// Exported (the library builds with hidden visibility): Python hands their
// addresses to jax.ffi.register_ffi_target.
extern "C" __attribute__((visibility("default"))) XLA_FFI_Error* hvda_jax_collective_cpu(
    XLA_FFI_CallFrame* call_frame);
extern "C" __attribute__((visibility("default"))) XLA_FFI_Error* hvda_jax_collective_cuda(
    XLA_FFI_CallFrame* call_frame);

#define HVDA_JAX_COLLECTIVE_ATTRS                \
  .RemainingArgs()                               \
      .RemainingRets()                           \
      .Attr<int64_t>("kind")                     \
      .Attr<std::string_view>("name")            \
      .Attr<int64_t>("process_set")              \
      .Attr<int64_t>("reduce_op")                \
      .Attr<double>("prescale")                  \
      .Attr<double>("postscale")                 \
      .Attr<int64_t>("root_rank")

XLA_FFI_DEFINE_HANDLER_SYMBOL(hvda_jax_collective_cpu, hvda_jax::CollectiveCpu,
                              xla::ffi::Ffi::Bind() HVDA_JAX_COLLECTIVE_ATTRS);
// The stream as void*: no CUDA header is needed (the plugin knows its type).
XLA_FFI_DEFINE_HANDLER_SYMBOL(hvda_jax_collective_cuda, hvda_jax::CollectiveCuda,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::PlatformStream<void*>>()
                                  .Ctx<xla::ffi::DeviceOrdinal>() HVDA_JAX_COLLECTIVE_ATTRS);
