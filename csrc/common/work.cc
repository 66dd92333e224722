#include "common/work.h"

#include <chrono>
#include <cstdlib>
#include <new>

namespace hvda {

HostBuffer::HostBuffer(size_t bytes) : bytes_(bytes) {
  // 64-byte alignment for vector kernels; never a null pointer, even for 0 bytes.
  size_t rounded = ((bytes + 63) / 64) * 64;
  data_ = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (data_ == nullptr) throw std::bad_alloc();
}

HostBuffer::~HostBuffer() { std::free(data_); }

bool Work::IsCompleted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

bool Work::Wait(double timeout_seconds) const {
  if (IsCompleted()) return true;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline =
      timeout_seconds < 0
          ? std::chrono::steady_clock::time_point::max()
          : start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(timeout_seconds));
  if (tracker_) tracker_->BeginWait();
  if (auto driver = driver_.lock()) driver->Drive(*this, deadline);
  bool done;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (timeout_seconds < 0) {
      cv_.wait(lock, [&] { return done_; });
      done = true;
    } else {
      done = cv_.wait_until(lock, deadline, [&] { return done_; });
    }
  }
  if (tracker_) tracker_->EndWait();
  return done;
}

Status Work::status() const {
  std::unique_lock<std::mutex> lock(mu_);
  Status st = status_;
  const bool news = done_ && news_of_end_;
  lock.unlock();
  Delivered(news);
  return st;
}

void Work::Delivered(bool news_of_end) const {
  if (news_of_end) end_->NoteTold();  // news_of_end_ implies end_
}

void Work::OnComplete(std::function<void(const Status&)> cb) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!done_) {
    callbacks_.push_back(std::move(cb));
    return;
  }
  Status st = status_;
  const bool news = news_of_end_;
  lock.unlock();
  Delivered(news);
  cb(st);
}

void Work::Complete(Status st) {
  std::vector<std::function<void(const Status&)>> cbs;
  bool news;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    status_ = st;
    news_of_end_ = news = !st.ok() && end_ && end_->began();
    cbs.swap(callbacks_);
  }
  // Before waking the waiters, so they are never seen blocked after it.
  if (tracker_) tracker_->NoteActivity();
  cv_.notify_all();
  if (!cbs.empty()) Delivered(news);
  for (auto& cb : cbs) cb(st);
}

}  // namespace hvda
