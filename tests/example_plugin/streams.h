// Streams and events of the example device, whose "device work" is host
// code. A stream is an ordered queue of tasks; an event is a recorded
// position in a stream.
//
// Two kinds of stream:
// - a worker stream (stream_create): a thread of its own runs the tasks in
//   FIFO order, asynchronously to the caller;
// - an immediate stream (stream_wrap(device, NULL)): this device's
//   "framework" has no streams and does its device work synchronously, so
//   work enqueued there runs at once on the calling thread (plugin.h allows
//   this for the default stream: "an event recorded there is complete at
//   once"). A stream_wait_event on it never blocks: the wait is remembered
//   and resolved (blocking) by the next task enqueued there, and events
//   recorded meanwhile include it.
//
// Errors are sticky, as a CUDA context's after a fault: once a task failed,
// later tasks of that stream are skipped (launch_host_func callbacks still
// run, so the core's completion callback fires), and every event recorded
// after the failure reports the failed task's status and message. A wait for
// another stream's failed work fails too, passing the error on.
//
// No wait here has a timeout of its own: every task is bounded (collectives
// by the op timeout), so waiting for a position is bounded by the tasks
// before it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "horovod_accel/plugin.h"

namespace example {

// A unit of stream work: returns HVDA_OK, or fails through Fail(); the
// stream keeps the running thread's message as the failure's message.
using Task = std::function<hvda_status()>;

// How far one stream has got. Shared by the stream, its worker and every
// event recorded on it, so an event stays valid after stream_destroy.
// Position p is reached when the stream's first p tasks have run.
class Progress {
 public:
  uint64_t Submit();  // one more task enqueued; returns its position
  void Complete(hvda_status status, const std::string& message);  // in order
  uint64_t submitted() const;
  bool failed() const;
  // HVDA_NOT_READY until `position` is reached; then HVDA_OK, or the first
  // failure's status if a task up to it failed (message: last_error).
  hvda_status Query(uint64_t position) const;
  hvda_status Wait(uint64_t position) const;  // blocks while NOT_READY

 private:
  hvda_status QueryLocked(uint64_t position) const;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  uint64_t submitted_ = 0, completed_ = 0;
  hvda_status error_ = HVDA_OK;
  uint64_t error_position_ = 0;  // position of the first failed task
  std::string error_message_;
};

// A point to wait for: `position` of one stream.
struct Mark {
  std::shared_ptr<const Progress> progress;
  uint64_t position;
};
hvda_status QueryMarks(const std::vector<Mark>& marks);  // never blocks
hvda_status WaitMarks(const std::vector<Mark>& marks);

class Stream {
 public:
  enum class Kind { kWorker, kImmediate };
  explicit Stream(Kind kind);
  // Worker: lets the queued tasks run, then joins the worker (bounded, see
  // above; after a failure the remaining tasks are skipped). Events
  // recorded on the stream stay valid.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `task` (immediate: runs it now). `even_after_error`: run it even
  // when an earlier task failed (host callbacks).
  void Enqueue(Task task, bool even_after_error = false);
  // Later tasks wait for `marks` (a snapshot: re-recording the event they
  // came from changes nothing). Never blocks.
  void WaitFor(std::vector<Mark> marks);
  // What an event recorded now must wait for.
  std::vector<Mark> Record() const;
  // Blocks until everything enqueued so far has run; its status as Query's.
  hvda_status Synchronize();

 private:
  void RunOne(const Task& task, bool even_after_error);
  void ResolvePendingWaits();  // immediate only
  void WorkerLoop();

  const Kind kind_;
  const std::shared_ptr<Progress> progress_ = std::make_shared<Progress>();
  std::vector<Mark> pending_waits_;  // immediate only; the caller's thread
  // Worker only: the queue and its thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Task, bool>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

// An event: the marks of its last event_record (empty: never recorded,
// which counts as complete).
struct Event {
  std::vector<Mark> marks;
};

inline Stream* ToStream(hvda_stream_t s) { return reinterpret_cast<Stream*>(s); }
inline hvda_stream_t ToHandle(Stream* s) { return reinterpret_cast<hvda_stream_t>(s); }
inline Event* ToEvent(hvda_event_t e) { return reinterpret_cast<Event*>(e); }
inline hvda_event_t ToHandle(Event* e) { return reinterpret_cast<hvda_event_t>(e); }

}  // namespace example
