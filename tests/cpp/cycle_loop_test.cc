// CycleLoop (csrc/common/cycle_loop.h) over a fake CycleHost: who runs the
// cycles (a framework thread waiting on a Work, or the background thread),
// and that Stop ends the loop through a shutdown cycle.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "common/cycle_loop.h"

namespace hvda {
namespace {

// A "job" with one op: Negotiating() while `pending` is set; a cycle completes
// it. A cycle after Stop() was called ends the loop, as the Runtime's
// shutdown cycle does.
class FakeHost : public CycleHost {
 public:
  bool RunCycle(bool* waiting, bool* progressed, bool* all_idle) override {
    std::lock_guard<std::mutex> lock(mu);
    ++cycles;
    threads.insert(std::this_thread::get_id());
    if (loop != nullptr && loop->shutdown_requested()) {
      saw_shutdown = true;
      return false;
    }
    if (pending) {
      pending->Complete(Status::OK());
      pending.reset();
      *progressed = true;
    }
    *all_idle = true;
    return true;
  }
  bool CycleWanted(bool* device_busy) override {
    std::lock_guard<std::mutex> lock(mu);
    return pending != nullptr;
  }
  bool Negotiating() override {
    std::lock_guard<std::mutex> lock(mu);
    return pending != nullptr;
  }
  bool PollDevices() override { return true; }
  double CycleTimeMs() override { return cycle_ms; }

  std::mutex mu;
  CycleLoop* loop = nullptr;
  std::shared_ptr<Work> pending;
  int cycles = 0;
  bool saw_shutdown = false;
  std::set<std::thread::id> threads;
  double cycle_ms = 1;
};

std::shared_ptr<Work> Enqueue(FakeHost* host, CycleLoop* loop,
                              OpWaiter waiter = OpWaiter::kFramework) {
  auto w = std::make_shared<Work>();
  w->SetDriver(loop->work_driver());
  {
    std::lock_guard<std::mutex> lock(host->mu);
    host->pending = w;
  }
  loop->NoteEnqueued(waiter);
  return w;
}

TEST(CycleLoop, AWaitingThreadRunsTheCyclesItself) {
  FakeHost host;
  host.cycle_ms = 60000;  // the background thread's timer never fires
  CycleLoop loop(&host);
  host.loop = &loop;
  CycleLoopOptions options;
  options.inline_cycles = true;
  ASSERT_TRUE(loop.Start(options).ok());
  std::shared_ptr<Work> w = Enqueue(&host, &loop);
  ASSERT_TRUE(w->Wait(10));
  EXPECT_TRUE(w->status().ok());
  {
    std::lock_guard<std::mutex> lock(host.mu);
    EXPECT_EQ(host.threads, std::set<std::thread::id>{std::this_thread::get_id()});
  }
  loop.Stop();
  EXPECT_TRUE(host.saw_shutdown);
}

TEST(CycleLoop, WithoutInlineCyclesTheBackgroundThreadRunsThem) {
  FakeHost host;
  host.cycle_ms = 60000;  // only a wake-up starts a cycle
  CycleLoop loop(&host);
  host.loop = &loop;
  CycleLoopOptions options;
  options.inline_cycles = false;
  ASSERT_TRUE(loop.Start(options).ok());
  std::shared_ptr<Work> w = Enqueue(&host, &loop);  // wakes the background thread
  ASSERT_TRUE(w->Wait(10));
  {
    std::lock_guard<std::mutex> lock(host.mu);
    ASSERT_EQ(host.threads.size(), 1u);
    EXPECT_NE(*host.threads.begin(), std::this_thread::get_id());
  }
  loop.Stop();
  EXPECT_TRUE(host.saw_shutdown);
}

// An op nobody Waits on (the core C API's enqueue) gets a background cycle at
// once, although the timer never fires and no thread drives.
TEST(CycleLoop, AnOpNobodyWaitsOnGetsABackgroundCycleAtOnce) {
  FakeHost host;
  host.cycle_ms = 60000;
  CycleLoop loop(&host);
  host.loop = &loop;
  CycleLoopOptions options;
  options.inline_cycles = true;
  ASSERT_TRUE(loop.Start(options).ok());
  std::shared_ptr<Work> w = Enqueue(&host, &loop, OpWaiter::kNobody);
  // Polled, not Waited on: a Wait would drive the cycle from this thread.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!w->IsCompleted() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(w->IsCompleted());
  {
    std::lock_guard<std::mutex> lock(host.mu);
    ASSERT_EQ(host.threads.size(), 1u);
    EXPECT_NE(*host.threads.begin(), std::this_thread::get_id());
  }
  loop.Stop();
  EXPECT_TRUE(host.saw_shutdown);
}

TEST(CycleLoop, StopEndsTheLoopThroughAShutdownCycleAndCanRestart) {
  FakeHost host;
  CycleLoop loop(&host);
  host.loop = &loop;
  EXPECT_EQ(loop.work_driver(), nullptr);
  loop.Stop();  // never started: nothing to do
  ASSERT_TRUE(loop.Start(CycleLoopOptions()).ok());
  std::weak_ptr<WorkDriver> first = loop.work_driver();
  loop.Stop();
  EXPECT_TRUE(host.saw_shutdown);
  EXPECT_TRUE(loop.shutdown_requested());
  // A Work kept from the ended generation drives nothing.
  auto stale = std::make_shared<Work>();
  stale->SetDriver(first);
  EXPECT_FALSE(stale->Wait(0.05));

  host.saw_shutdown = false;
  ASSERT_TRUE(loop.Start(CycleLoopOptions()).ok());
  EXPECT_FALSE(loop.shutdown_requested());
  std::shared_ptr<Work> w = Enqueue(&host, &loop);
  ASSERT_TRUE(w->Wait(10));
  loop.Stop();
  EXPECT_TRUE(host.saw_shutdown);
}

}  // namespace
}  // namespace hvda
