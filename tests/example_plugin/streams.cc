// Streams and events (streams.h).
#include "streams.h"

#include <utility>

#include "plugin_state.h"

namespace example {

// ---------------------------------------------------------------- Progress

uint64_t Progress::Submit() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++submitted_;
}

void Progress::Complete(hvda_status status, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++completed_;
    if (status != HVDA_OK && error_ == HVDA_OK) {  // the first failure sticks
      error_ = status;
      error_position_ = completed_;
      error_message_ = message;
    }
  }
  cv_.notify_all();
}

uint64_t Progress::submitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

bool Progress::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_ != HVDA_OK;
}

hvda_status Progress::QueryLocked(uint64_t position) const {
  // Not before everything up to `position` ran (or was skipped), even after
  // a failure: a host callback queued after it may still be due.
  if (completed_ < position) return HVDA_NOT_READY;
  if (error_ != HVDA_OK && error_position_ <= position)
    return Fail(error_, "example device: work before this point failed: " + error_message_);
  return HVDA_OK;
}

hvda_status Progress::Query(uint64_t position) const {
  std::lock_guard<std::mutex> lock(mu_);
  return QueryLocked(position);
}

hvda_status Progress::Wait(uint64_t position) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return QueryLocked(position) != HVDA_NOT_READY; });
  return QueryLocked(position);
}

hvda_status QueryMarks(const std::vector<Mark>& marks) {
  hvda_status result = HVDA_OK;
  for (const Mark& m : marks) {
    hvda_status s = m.progress->Query(m.position);
    if (s != HVDA_OK && s != HVDA_NOT_READY) return s;  // an error wins
    if (s == HVDA_NOT_READY) result = HVDA_NOT_READY;
  }
  return result;
}

hvda_status WaitMarks(const std::vector<Mark>& marks) {
  for (const Mark& m : marks) {
    if (hvda_status s = m.progress->Wait(m.position)) return s;
  }
  return HVDA_OK;
}

// ---------------------------------------------------------------- Stream

Stream::Stream(Kind kind) : kind_(kind) {
  if (kind_ == Kind::kWorker) worker_ = std::thread([this] { WorkerLoop(); });
}

Stream::~Stream() {
  if (kind_ != Kind::kWorker) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void Stream::RunOne(const Task& task, bool even_after_error) {
  // Skipping keeps positions moving after a failure: events recorded later
  // still complete (with the sticky error) instead of hanging.
  hvda_status s = HVDA_OK;
  if (even_after_error || !progress_->failed()) s = Guarded("example device task", task);
  progress_->Complete(s, s == HVDA_OK ? std::string() : std::string(LastError()));
}

void Stream::ResolvePendingWaits() {
  if (pending_waits_.empty()) return;
  std::vector<Mark> marks = std::move(pending_waits_);
  pending_waits_.clear();
  progress_->Submit();  // the wait counts as one task of this stream
  RunOne([marks] { return WaitMarks(marks); }, false);
}

void Stream::Enqueue(Task task, bool even_after_error) {
  if (kind_ == Kind::kImmediate) {
    ResolvePendingWaits();
    progress_->Submit();
    RunOne(task, even_after_error);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(std::move(task), even_after_error);  // may throw: then nothing is counted
    progress_->Submit();
  }
  cv_.notify_all();
}

void Stream::WaitFor(std::vector<Mark> marks) {
  std::vector<Mark> others;  // waiting for this stream's own past is a no-op (FIFO)
  for (Mark& m : marks)
    if (m.progress != progress_) others.push_back(std::move(m));
  if (others.empty()) return;
  if (kind_ == Kind::kImmediate) {
    pending_waits_.insert(pending_waits_.end(), others.begin(), others.end());
    return;
  }
  Enqueue([others] { return WaitMarks(others); });
}

std::vector<Mark> Stream::Record() const {
  std::vector<Mark> marks{Mark{progress_, progress_->submitted()}};
  marks.insert(marks.end(), pending_waits_.begin(), pending_waits_.end());
  return marks;
}

hvda_status Stream::Synchronize() {
  ResolvePendingWaits();  // (empty on a worker stream)
  return progress_->Wait(progress_->submitted());
}

void Stream::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything ran
    std::pair<Task, bool> next = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    RunOne(next.first, next.second);
    lock.lock();
  }
}

}  // namespace example
