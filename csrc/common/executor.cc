#include "common/executor.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <thread>

#include "common/adasum.h"
#include "common/util/settings.h"

namespace hvda {
namespace {

const char* KindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllreduce: return "allreduce";
    case CollectiveKind::kAllgather: return "allgather";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAlltoall: return "alltoall";
    case CollectiveKind::kReducescatter: return "reducescatter";
    case CollectiveKind::kBarrier: return "barrier";
  }
  return "?";
}

// Average is Sum followed by a 1/size scale.
ReduceOp WireOp(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

int64_t RowElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

}  // namespace

Executor::Executor(Device* device, std::vector<std::unique_ptr<CollectiveBackend>> backends,
                   Timeline* timeline)
    : device_(device), backends_(std::move(backends)), timeline_(timeline) {
  init_status_ = device_->execution().CreateStream(&stream_);
}

Executor::~Executor() {
  // The fusion buffer may still be in use by enqueued work. A stream that
  // does not drain in time (kTimeout: NOTE [Bounded teardown] in
  // plugin/plugin_device.h, a stuck communicator) keeps its work: the
  // stream, the fusion buffer and the backends (their communicators and
  // scratch memory) are leaked rather than waited for or freed in use.
  const Status drained =
      stream_ ? device_->execution().SynchronizeStream(stream_.get()) : Status::OK();
  const Status gone = Status::Aborted("Horovod has been shut down.");
  for (auto& f : inflight_)
    for (auto& e : f.entries) e.work->Complete(gone);
  if (drained.code() == StatusCode::kTimeout) {
    (void)stream_.release();
    for (auto& b : backends_) (void)b.release();
    fusion_ = nullptr;
    return;
  }
  if (fusion_) device_->memory().Free(fusion_);
}

Status Executor::Finish(std::vector<TensorEntry> entries, std::vector<bool> have, Status st) {
  std::vector<TensorEntry> mine;
  for (size_t i = 0; i < entries.size(); ++i)
    if (have[i]) mine.push_back(std::move(entries[i]));
  bool done = !st.ok();  // a failed enqueue completes at once
  std::unique_ptr<Event> ev;
  if (!done) {
    if (!spare_events_.empty()) {
      ev = std::move(spare_events_.back());
      spare_events_.pop_back();
    } else {
      st = device_->execution().CreateEvent(&ev);
    }
    if (st.ok()) st = device_->execution().RecordEvent(ev.get(), stream_.get());
    if (st.ok() && inflight_.empty()) st = device_->execution().QueryEvent(ev.get(), &done);
    done |= !st.ok();
  }
  if (done) {
    if (ev) spare_events_.push_back(std::move(ev));
    for (auto& e : mine) e.work->Complete(st);
    return st;
  }
  // The destructor synchronizes the stream, so the callback never outlives us.
  if (NotifiesCompletion()) st = device_->execution().LaunchHostFunc(stream_.get(), &NotifyThunk, this);
  inflight_.push_back(Inflight{std::move(ev), std::move(mine), std::chrono::steady_clock::now()});
  return st;  // a failed callback launch: the device is broken
}

Status Executor::PollCompletions() {
  while (!inflight_.empty()) {
    bool done = false;
    Status st = device_->execution().QueryEvent(inflight_.front().done.get(), &done);
    if (st.ok() && !done) return Status::OK();
    Inflight f = std::move(inflight_.front());
    inflight_.pop_front();
    spare_events_.push_back(std::move(f.done));
    for (auto& e : f.entries) e.work->Complete(st);
    if (!st.ok()) {
      for (auto& later : inflight_)
        for (auto& e : later.entries) e.work->Complete(st);
      inflight_.clear();
      return st;
    }
  }
  return Status::OK();
}

CollectiveBackend* Executor::Pick(CollectiveKind kind, DataType dtype, ReduceOp op) const {
  for (const auto& b : backends_)
    if (b->Supports(kind, dtype, WireOp(op))) return b.get();
  return nullptr;
}

Status Executor::NoBackend(CollectiveKind kind, const Response& r) const {
  std::string names;
  for (const auto& b : backends_) names += std::string(names.empty() ? "" : ", ") + b->name();
  return Status::InvalidArgument(std::string(KindName(kind)) + " of " + DataTypeName(r.dtype) +
                                 " with " + ReduceOpName(r.reduce_op) + " is not supported by the "
                                 "collective backends here (" + names + ") for tensor '" +
                                 r.names[0] + "'; convert the tensor to a supported type (e.g. "
                                 "int32 or float32).");
}

Status Executor::EnsureFusionBuffer(size_t bytes) {
  if (bytes <= fusion_bytes_) return Status::OK();
  if (fusion_) {
    // Work already enqueued may still use it (a no-op wait on the CPU);
    // growth is rare, the size only rises.
    HVDA_RETURN_IF_ERROR(device_->execution().SynchronizeStream(stream_.get()));
    device_->memory().Free(fusion_);
  }
  fusion_ = nullptr;
  fusion_bytes_ = 0;
  HVDA_RETURN_IF_ERROR(device_->memory().Allocate(bytes, &fusion_));
  fusion_bytes_ = bytes;
  return Status::OK();
}

void Executor::Begin(const Response& r, const char* activity) {
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  for (const auto& n : r.names) timeline_->ActivityStart(n, activity);
}

void Executor::Begin(const Response& r, const CollectiveBackend& backend, const char* what) {
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  std::string activity = backend.name();  // e.g. SHM_ALLREDUCE, GLOO_BCAST, GCU_ALLGATHER
  for (char& c : activity) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Begin(r, (activity + "_" + what).c_str());
}

void Executor::End(const Response& r) {
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  for (const auto& n : r.names) timeline_->ActivityEnd(n);
}

Status Executor::Execute(const Response& r, TensorQueue* queue) {
  std::vector<TensorEntry> entries(r.names.size());
  std::vector<bool> have(r.names.size(), false);
  bool any = false;
  for (size_t i = 0; i < r.names.size(); ++i) {
    have[i] = queue->Take(r.names[i], &entries[i]);
    any |= have[i];
  }
  if (r.type == ResponseType::kError) {
    for (size_t i = 0; i < entries.size(); ++i)
      if (have[i]) entries[i].work->Complete(Status::Precondition(r.error));
    return Status::OK();
  }
  if (r.type == ResponseType::kJoin) {
    if (have[0]) {
      entries[0].work->join_result = r.last_joined_rank;
      entries[0].work->Complete(Status::OK());
    }
    return Status::OK();
  }
  const bool tl = timeline_ != nullptr && timeline_->enabled();
  if (tl)
    for (const auto& n : r.names) timeline_->OpStart(n, r.type);

  Status st = WaitReady(entries, have);
  if (st.ok()) switch (r.type) {
    case ResponseType::kAllreduce:
    case ResponseType::kAdasum:
      st = r.reduce_op == ReduceOp::kAdasum || r.type == ResponseType::kAdasum
               ? Adasum(r, entries, have)
               : Allreduce(r, entries, have);
      break;
    case ResponseType::kBarrier:
      // Negotiation already proved every rank arrived.
      break;
    default:
      if (!any) {
        st = Status::Unknown(std::string("this rank has no tensor '") + r.names[0] + "' for " +
                             ResponseTypeName(r.type));
      } else if (r.type == ResponseType::kAllgather) {
        st = Allgather(r, entries[0]);
      } else if (r.type == ResponseType::kBroadcast) {
        st = Broadcast(r, entries[0]);
      } else if (r.type == ResponseType::kAlltoall) {
        st = Alltoall(r, entries[0]);
      } else if (r.type == ResponseType::kReducescatter) {
        st = Reducescatter(r, entries[0]);
      }
  }
  if (tl)
    for (size_t i = 0; i < r.names.size(); ++i)
      timeline_->OpEnd(r.names[i], r.dtype, r.shapes.empty() ? std::vector<int64_t>() : r.shapes[i]);
  st = Finish(std::move(entries), std::move(have), st);
  // A backend failure means the communicator is unusable; a missing backend
  // (InvalidArgument) only fails these tensors.
  return st.code() == StatusCode::kInvalidArgument ? Status::OK() : st;
}

Status Executor::WaitReady(const std::vector<TensorEntry>& entries,
                           const std::vector<bool>& have) {
  for (size_t i = 0; i < entries.size(); ++i)
    if (have[i] && entries[i].ready)
      HVDA_RETURN_IF_ERROR(device_->execution().StreamWaitEvent(stream_.get(), entries[i].ready.get()));
  return Status::OK();
}

Status Executor::AllocateOutput(size_t bytes, TensorEntry& e, void** data) {
  if (e.work->allocate_output) {
    *data = nullptr;
    HVDA_RETURN_IF_ERROR(e.work->allocate_output(e.work->output_shape, bytes, data));
    if (*data == nullptr && bytes > 0)
      return Status::Unknown("tensor '" + e.request.name + "': the framework lent no output buffer");
    return Status::OK();
  }
  if (output_device_) {
    HVDA_RETURN_IF_ERROR(DeviceBuffer::Allocate(output_device_, bytes, &e.work->device_output));
    *data = e.work->device_output->data();
    return Status::OK();
  }
  e.work->output = std::make_shared<HostBuffer>(bytes);
  *data = e.work->output->data();
  return Status::OK();
}

// NOTE [Accelerator watchdog]: a device collective that never finishes
// (a lost peer, a broken link) blocks the communication stream, not the
// host; the background thread checks, each cycle, the backends' async
// errors and how long the oldest response has been running
// (HOROVOD_ACCEL_TIMEOUT_SECONDS). Either turns into an error for every
// pending op, after the communicators are aborted so that the streams
// drain (DrainOrAbort) and shutdown never waits on a dead peer. A library
// without a true abort bounds its own waits by the same timeout (passed at
// communicator creation, plugin.h "timeouts"); should its stream still not
// drain, teardown gives up after that timeout plus a grace period
// (~Executor, NOTE [Bounded teardown] in plugin/plugin_device.h).
Status Executor::CheckHealth(double timeout_seconds) const {
  for (const auto& b : backends_) HVDA_RETURN_IF_ERROR(b->AsyncError());
  if (!inflight_.empty() && timeout_seconds > 0) {
    const double age = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                     inflight_.front().started).count();
    if (age > timeout_seconds)
      return Status::Aborted("an accelerator collective (tensor '" +
                             (inflight_.front().entries.empty()
                                  ? std::string("?")
                                  : inflight_.front().entries[0].request.name) +
                             "') has not finished after " + std::to_string(static_cast<int>(age)) +
                             " s (" + setting_env::accel_timeout_seconds +
                             "): a peer is lost or the device is stuck; its communicator was "
                             "aborted.");
  }
  return Status::OK();
}

void Executor::DrainOrAbort(double grace_seconds, const Status& st) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(grace_seconds));
  while (HasInflight() && std::chrono::steady_clock::now() < deadline) {
    if (!PollCompletions().ok()) break;
    if (HasInflight()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!HasInflight()) return;
  for (auto& b : backends_) b->Abort();
  for (auto& f : inflight_)
    for (auto& e : f.entries) e.work->Complete(st);
  inflight_.clear();
}

Status Executor::Pack(const Response& r, std::vector<TensorEntry>& entries,
                      const std::vector<bool>& have, void** buf, bool* direct) {
  const size_t esize = DataTypeSize(r.dtype);
  int64_t count = 0;
  for (size_t i = 0; i < r.shapes.size(); ++i) count += r.TensorElements(i);
  *direct = entries.size() == 1 && have[0];
  if (*direct) {
    *buf = entries[0].output;
    if (entries[0].input != entries[0].output && count > 0)
      HVDA_RETURN_IF_ERROR(
          device_->memory().CopyAsync(*buf, entries[0].input, count * esize, stream_.get()));
    return Status::OK();
  }
  HVDA_RETURN_IF_ERROR(EnsureFusionBuffer(count * esize));
  *buf = fusion_;
  Begin(r, "MEMCPY_IN_FUSION_BUFFER");
  std::vector<CopyDesc> copies;
  size_t off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t bytes = r.TensorElements(i) * esize;
    char* dst = static_cast<char*>(fusion_) + off;
    if (have[i]) {
      copies.push_back(CopyDesc{dst, entries[i].input, bytes});
    } else {
      HVDA_RETURN_IF_ERROR(device_->memory().MemsetAsync(dst, 0, bytes, stream_.get()));  // joined: zeros
    }
    off += bytes;
  }
  HVDA_RETURN_IF_ERROR(device_->execution().BatchedCopy(copies, stream_.get()));
  End(r);
  return Status::OK();
}

Status Executor::Unpack(const Response& r, std::vector<TensorEntry>& entries,
                        const std::vector<bool>& have) {
  const size_t esize = DataTypeSize(r.dtype);
  Begin(r, "MEMCPY_OUT_FUSION_BUFFER");
  std::vector<CopyDesc> copies;
  size_t off = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t bytes = r.TensorElements(i) * esize;
    if (have[i]) copies.push_back(CopyDesc{entries[i].output, static_cast<char*>(fusion_) + off, bytes});
    off += bytes;
  }
  Status st = device_->execution().BatchedCopy(copies, stream_.get());
  End(r);
  return st;
}

// NOTE [Reducing in place of the caller]: a backend that ReducesSpans()
// (shm) reduces a response's tensors where they are, as if concatenated,
// instead of the executor packing them into the fusion buffer and unpacking
// the result: two whole memory passes less (measurements:
// docs/design/negotiation.md, "Measurements"). Used when every
// tensor is this rank's own (a joined rank contributes zeros: packed) and
// their memory is disjoint as the backend requires: an input either is its
// output or overlaps nothing, and no two tensors share bytes (a tensor
// passed twice in one group is packed, as before). *spans: in order.
bool Executor::SpansFor(const Response& r, const std::vector<TensorEntry>& entries,
                        const std::vector<bool>& have, std::vector<CollectiveBackend::Span>* spans) {
  const size_t esize = DataTypeSize(r.dtype);
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;  // [begin, end) of every buffer
  ranges.reserve(2 * entries.size());
  spans->reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!have[i]) return false;
    const int64_t n = r.TensorElements(i);
    spans->push_back(CollectiveBackend::Span{entries[i].input, entries[i].output, n});
    if (n == 0) continue;
    const auto in = reinterpret_cast<uintptr_t>(entries[i].input);
    const auto out = reinterpret_cast<uintptr_t>(entries[i].output);
    ranges.emplace_back(in, in + n * esize);
    if (out != in) ranges.emplace_back(out, out + n * esize);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) return false;
  return true;
}

Status Executor::Allreduce(const Response& r, std::vector<TensorEntry>& entries,
                           std::vector<bool>& have) {
  CollectiveBackend* backend = Pick(CollectiveKind::kAllreduce, r.dtype, r.reduce_op);
  if (backend == nullptr) return NoBackend(CollectiveKind::kAllreduce, r);
  const double post =
      PostScaleFactor(r.dtype, r.postscale, r.reduce_op == ReduceOp::kAverage, backend->size());

  // The backend reads every input and writes every output where they are:
  // no fusion-buffer packing (NOTE [Reducing in place of the caller]).
  std::vector<CollectiveBackend::Span> spans;
  if (r.prescale == 1.0 && backend->ReducesSpans() && SpansFor(r, entries, have, &spans)) {
    Begin(r, *backend, "ALLREDUCE");
    Status st =
        backend->AllreduceSpans(spans, r.dtype, WireOp(r.reduce_op), post, stream_.get());
    End(r);
    return st;
  }
  int64_t count = 0;
  for (size_t i = 0; i < r.shapes.size(); ++i) count += r.TensorElements(i);
  void* buf;
  bool direct;
  HVDA_RETURN_IF_ERROR(Pack(r, entries, have, &buf, &direct));
  if (r.prescale != 1.0)
    HVDA_RETURN_IF_ERROR(device_->execution().Scale(buf, count, r.dtype,
                                                    RoundScaleFactor(r.dtype, r.prescale),
                                                    stream_.get()));
  // NOTE [Postscale inside a spans backend]: a backend that ReducesSpans()
  // may hand a rank a slice another rank reduced (and scaled), so every
  // rank must pass it the same postscale: whether this rank packed (a
  // joined rank, a prescale, overlapping tensors: local decisions) must not
  // change what its peers receive.
  const bool scale_inside = backend->ReducesSpans();
  Begin(r, *backend, "ALLREDUCE");
  Status st = scale_inside
                  ? backend->AllreduceSpans({CollectiveBackend::Span{buf, buf, count}}, r.dtype,
                                            WireOp(r.reduce_op), post, stream_.get())
                  : backend->Allreduce(buf, count, r.dtype, WireOp(r.reduce_op), stream_.get());
  End(r);
  HVDA_RETURN_IF_ERROR(st);
  if (post != 1.0 && !scale_inside)
    HVDA_RETURN_IF_ERROR(device_->execution().Scale(buf, count, r.dtype, post, stream_.get()));
  if (!direct) HVDA_RETURN_IF_ERROR(Unpack(r, entries, have));
  return Status::OK();
}

// NOTE [Adasum on CPU]: every rank allgathers the (fused, prescaled) buffers
// of all ranks and runs the same deterministic tree (adasum.h) on them, so
// the results are bit-identical everywhere without a second collective. It
// moves n times the data of a ring allreduce; fine for host memory and the
// modest rank counts of one or a few hosts.
Status Executor::Adasum(const Response& r, std::vector<TensorEntry>& entries,
                        std::vector<bool>& have) {
  // Enqueue validated dtype, device and process set (ValidateAdasum); the
  // dtype is re-checked because the tree below is only defined for floats.
  if (!AdasumSupportsDtype(r.dtype))
    return Status::InvalidArgument(std::string("Adasum of tensor '") + r.names[0] +
                                   "' needs a float16, bfloat16, float32 or float64 tensor, got " +
                                   DataTypeName(r.dtype) + ".");
  CollectiveBackend* backend = Pick(CollectiveKind::kAllgather, r.dtype, ReduceOp::kSum);
  if (backend == nullptr) return NoBackend(CollectiveKind::kAllgather, r);
  std::vector<int64_t> counts(r.shapes.size());
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = r.TensorElements(i);
  const int64_t count = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  const int64_t bytes = count * static_cast<int64_t>(DataTypeSize(r.dtype));
  const int n = backend->size();

  void* buf;
  bool direct;
  HVDA_RETURN_IF_ERROR(Pack(r, entries, have, &buf, &direct));
  if (r.prescale != 1.0)
    HVDA_RETURN_IF_ERROR(device_->execution().Scale(
        buf, count, r.dtype, RoundScaleFactor(r.dtype, r.prescale), stream_.get()));
  HostBuffer gathered(static_cast<size_t>(bytes) * n);
  Begin(r, *backend, "ADASUM_ALLGATHER");
  Status st = backend->Allgatherv(buf, gathered.data(), std::vector<int64_t>(n, bytes), stream_.get());
  // The tree runs on the host: wait for the gathered data.
  if (st.ok()) st = device_->execution().SynchronizeStream(stream_.get());
  End(r);
  HVDA_RETURN_IF_ERROR(st);
  Begin(r, "ADASUM_COMBINE");
  st = AdasumReduce(gathered.data(), n, counts, r.dtype, buf);
  End(r);
  HVDA_RETURN_IF_ERROR(st);
  if (r.postscale != 1.0)
    HVDA_RETURN_IF_ERROR(device_->execution().Scale(
        buf, count, r.dtype, RoundScaleFactor(r.dtype, r.postscale), stream_.get()));
  if (!direct) HVDA_RETURN_IF_ERROR(Unpack(r, entries, have));
  return Status::OK();
}

Status Executor::Allgather(const Response& r, TensorEntry& e) {
  CollectiveBackend* backend = Pick(CollectiveKind::kAllgather, r.dtype, ReduceOp::kSum);
  if (backend == nullptr) return NoBackend(CollectiveKind::kAllgather, r);
  const int64_t row_bytes = RowElements(r.shapes[0]) * DataTypeSize(r.dtype);
  std::vector<int64_t> bytes(r.rank_dim0.size());
  int64_t rows = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = r.rank_dim0[i] * row_bytes;
    rows += r.rank_dim0[i];
  }
  e.work->output_dtype = r.dtype;
  e.work->output_shape = e.request.shape;
  e.work->output_shape[0] = rows;
  void* out = nullptr;
  HVDA_RETURN_IF_ERROR(AllocateOutput(rows * row_bytes, e, &out));
  Begin(r, *backend, "ALLGATHER");
  Status st = backend->Allgatherv(e.input, out, bytes, stream_.get());
  End(r);
  return st;
}

Status Executor::Broadcast(const Response& r, TensorEntry& e) {
  CollectiveBackend* backend = Pick(CollectiveKind::kBroadcast, r.dtype, ReduceOp::kSum);
  if (backend == nullptr) return NoBackend(CollectiveKind::kBroadcast, r);
  const size_t bytes = r.TensorElements(0) * DataTypeSize(r.dtype);
  if (backend->rank() == r.root_rank && e.input != e.output && bytes > 0)
    HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(e.output, e.input, bytes, stream_.get()));
  Begin(r, *backend, "BCAST");
  Status st = backend->Broadcast(e.output, bytes, r.root_rank, stream_.get());
  End(r);
  return st;
}

Status Executor::Alltoall(const Response& r, TensorEntry& e) {
  CollectiveBackend* backend = Pick(CollectiveKind::kAlltoall, r.dtype, ReduceOp::kSum);
  if (backend == nullptr) return NoBackend(CollectiveKind::kAlltoall, r);
  const int n = backend->size(), me = backend->rank();
  const int64_t row_bytes = RowElements(e.request.shape) * DataTypeSize(r.dtype);
  std::vector<int64_t> send(n), recv(n), recv_rows(n);
  int64_t rows = 0;
  for (int j = 0; j < n; ++j) {
    send[j] = r.splits_matrix[me * n + j] * row_bytes;
    recv_rows[j] = r.splits_matrix[j * n + me];
    recv[j] = recv_rows[j] * row_bytes;
    rows += recv_rows[j];
  }
  e.work->output_dtype = r.dtype;
  e.work->output_shape = e.request.shape;
  e.work->output_shape[0] = rows;
  e.work->received_splits = recv_rows;
  void* out = nullptr;
  HVDA_RETURN_IF_ERROR(AllocateOutput(rows * row_bytes, e, &out));
  Begin(r, *backend, "ALLTOALL");
  Status st = backend->Alltoallv(e.input, send, out, recv, stream_.get());
  End(r);
  return st;
}

Status Executor::Reducescatter(const Response& r, TensorEntry& e) {
  CollectiveBackend* backend = Pick(CollectiveKind::kReducescatter, r.dtype, r.reduce_op);
  if (backend == nullptr) return NoBackend(CollectiveKind::kReducescatter, r);
  const int n = backend->size();
  const int64_t d0 = r.shapes[0][0], row = RowElements(r.shapes[0]);
  std::vector<int64_t> counts(n);
  for (int j = 0; j < n; ++j) counts[j] = (d0 / n + (j < d0 % n ? 1 : 0)) * row;
  const int64_t total = d0 * row;
  const void* in = e.input;
  if (r.prescale != 1.0) {
    HVDA_RETURN_IF_ERROR(EnsureFusionBuffer(total * DataTypeSize(r.dtype)));
    HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(fusion_, e.input,
                                                     total * DataTypeSize(r.dtype), stream_.get()));
    HVDA_RETURN_IF_ERROR(device_->execution().Scale(
        fusion_, total, r.dtype, RoundScaleFactor(r.dtype, r.prescale), stream_.get()));
    in = fusion_;
  }
  Begin(r, *backend, "REDUCESCATTER");
  Status st =
      backend->Reducescatter(in, e.output, counts, r.dtype, WireOp(r.reduce_op), stream_.get());
  End(r);
  HVDA_RETURN_IF_ERROR(st);
  const double post =
      PostScaleFactor(r.dtype, r.postscale, r.reduce_op == ReduceOp::kAverage, n);
  if (post != 1.0)
    HVDA_RETURN_IF_ERROR(device_->execution().Scale(e.output, counts[backend->rank()], r.dtype,
                                                    post, stream_.get()));
  return Status::OK();
}

}  // namespace hvda
