#include "stream.h"

#include <chrono>

namespace hvda_emu {

Stream::Stream(int device, unsigned delay_us)
    : device_(device), delay_us_(delay_us), worker_([this] { Run(); }) {}

Stream::~Stream() { Shutdown(); }

uint64_t Stream::Enqueue(std::function<void()> op) {
  uint64_t position;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
    position = ++enqueued_;
  }
  work_cv_.notify_one();
  return position;
}

uint64_t Stream::Position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

bool Stream::Reached(uint64_t position) const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ >= position;
}

void Stream::WaitFor(uint64_t position) const {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return completed_ >= position; });
}

void Stream::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and drained
    std::function<void()> op = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    op();
    op = nullptr;  // release what it held (device memory, communicators) before reporting
    lock.lock();
    ++completed_;
    done_cv_.notify_all();
  }
}

void Event::Record(std::shared_ptr<Stream> stream) {
  const uint64_t position = stream->Position();
  std::lock_guard<std::mutex> lock(mu_);
  stream_ = std::move(stream);
  position_ = position;
}

void Event::Captured(std::shared_ptr<Stream>* stream, uint64_t* position) const {
  std::lock_guard<std::mutex> lock(mu_);
  *stream = stream_;
  *position = position_;
}

bool Event::Complete() const {
  std::shared_ptr<Stream> s;
  uint64_t p;
  Captured(&s, &p);
  return s == nullptr || s->Reached(p);
}

void Event::Synchronize() const {
  std::shared_ptr<Stream> s;
  uint64_t p;
  Captured(&s, &p);
  if (s != nullptr) s->WaitFor(p);
}

}  // namespace hvda_emu
