// HAL: what the core needs from a device, split as in UCC into memory and
// execution. The core reaches device memory and kernels only through these.
//
// Threading: a Device is used by the runtime's background thread only; an
// implementation need not be thread-safe unless it says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/util/status.h"

namespace hvda {

// kCPU: the host device (one registration, injected into the Runtime).
// kPlugin: every accelerator, whatever its vendor, through a device plugin
// (csrc/common/plugin, docs/design/plugins.md).
enum class DeviceKind : int32_t { kCPU = 0, kPlugin = 1 };

// Streams and events (NOTE [Streams on the HAL]). Opaque: each device
// defines its own and accepts only its own. Owned by whoever created them
// (std::unique_ptr); a Stream or Event must not outlive its Device.
class Stream {
 public:
  virtual ~Stream() = default;
};

class Event {
 public:
  virtual ~Event() = default;
};

// NOTE [Streams on the HAL]: work enqueued on one stream runs in order,
// asynchronously to the host, as on the accelerator runtimes. The core orders streams
// only through events (RecordEvent + StreamWaitEvent) and learns that work
// finished by querying an event, never by synchronizing a stream after each
// operation. A device without asynchrony (the CPU) runs every call at once:
// its streams are always drained and its events always complete, so the
// same executor code serves both.

// Memory management and data movement on one device. Pointers returned by
// Allocate are owned by the caller and must be released with Free on the
// same object; device memory need not be host-dereferenceable.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual Status Allocate(size_t bytes, void** ptr) = 0;
  virtual void Free(void* ptr) = 0;
  // Page-locked host memory (a valid copy source/target for any stream).
  virtual Status AllocateHost(size_t bytes, void** ptr) = 0;
  virtual void FreeHost(void* ptr) = 0;
  // Enqueued on `stream`; the regions must not overlap. Device to device
  // unless named otherwise.
  virtual Status CopyAsync(void* dst, const void* src, size_t bytes, Stream* stream) = 0;
  virtual Status CopyToHostAsync(void* host_dst, const void* src, size_t bytes, Stream* stream) = 0;
  virtual Status CopyFromHostAsync(void* dst, const void* host_src, size_t bytes,
                                   Stream* stream) = 0;
  virtual Status MemsetAsync(void* dst, int value, size_t bytes, Stream* stream) = 0;
};

// One contiguous copy of a batched copy (fusion-buffer pack/unpack).
struct CopyDesc {
  void* dst;
  const void* src;
  size_t bytes;
};

// Streams, events and the kernels the core runs on device data. Kernels are
// enqueued on a stream (NOTE [Streams on the HAL]).
class DeviceExecution {
 public:
  virtual ~DeviceExecution() = default;

  virtual Status CreateStream(std::unique_ptr<Stream>* stream) = 0;
  // Wraps a framework's native stream handle (not owned; null = the device's
  // default stream) so the core can order its work after the framework's.
  virtual Status WrapStream(void* native, std::unique_ptr<Stream>* stream) = 0;
  // Blocks the host until everything enqueued on `stream` has run.
  virtual Status SynchronizeStream(Stream* stream) = 0;

  virtual Status CreateEvent(std::unique_ptr<Event>* event) = 0;
  // Captures the work enqueued on `stream` so far.
  virtual Status RecordEvent(Event* event, Stream* stream) = 0;
  // *done: the captured work has run. Never blocks. A non-OK Status means
  // the device failed running it.
  virtual Status QueryEvent(Event* event, bool* done) = 0;
  virtual Status SynchronizeEvent(Event* event) = 0;
  // Work enqueued on `stream` from now on waits for `event`; the host does not.
  virtual Status StreamWaitEvent(Stream* stream, Event* event) = 0;

  // buf[i] *= factor. Integers are scaled in double and truncated toward zero,
  // float16/bfloat16 in float32 (upstream's ScaleBuffer semantics).
  virtual Status Scale(void* buf, int64_t count, DataType dtype, double factor,
                       Stream* stream) = 0;
  // dst[i] = op(dst[i], src[i]); op is Sum, Min, Max or Product.
  virtual Status ReduceInto(void* dst, const void* src, int64_t count, DataType dtype,
                            ReduceOp op, Stream* stream) = 0;
  virtual Status BatchedCopy(const std::vector<CopyDesc>& copies, Stream* stream) = 0;

  // Optional: runs fn(arg) on a device-runtime thread once the work enqueued
  // on `stream` before it has run (fn must not block or call the device).
  // The executor uses it to learn of completions without polling.
  virtual bool SupportsHostFunc() const { return false; }
  virtual Status LaunchHostFunc(Stream* stream, void (*fn)(void*), void* arg) {
    return Status::Unavailable("this device has no host callbacks");
  }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // e.g. "cpu"
  virtual DeviceMemory& memory() = 0;
  virtual DeviceExecution& execution() = 0;
};

}  // namespace hvda
