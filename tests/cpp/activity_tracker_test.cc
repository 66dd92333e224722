// ActivityTracker (common/activity_tracker.h): "stuck" only while a thread
// waits and nothing happened for a while.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "common/activity_tracker.h"
#include "common/work.h"

namespace hvda {
namespace {

TEST(ActivityTracker, StuckOnlyWhileWaitingWithoutActivity) {
  auto tracker = std::make_shared<ActivityTracker>();
  // sleep_for waits at least this long: the construction is >= 20 ms old.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(tracker->Stuck(0.0)) << "nobody waits: computing is never stuck";
  Work w(tracker);
  std::thread waiter([&] { w.Wait(-1); });
  // Stuck(0) is true exactly while a thread is inside Wait.
  while (!tracker->Stuck(0.0)) std::this_thread::yield();
  EXPECT_TRUE(tracker->Stuck(0.01));
  EXPECT_FALSE(tracker->Stuck(600));
  tracker->NoteActivity();  // e.g. an enqueue
  EXPECT_FALSE(tracker->Stuck(600));
  w.Complete(Status::OK());
  waiter.join();
  EXPECT_FALSE(tracker->Stuck(0.0)) << "the waiter left";
}

}  // namespace
}  // namespace hvda
