// Work (common/work.h): waiting with a timeout, completion callbacks, and
// telling its generation of the end (NOTE [Told of the end]).
#include <gtest/gtest.h>

#include "common/work.h"

namespace hvda {
namespace {

TEST(Work, WaitTimesOutThenCompletes) {
  Work w;
  EXPECT_FALSE(w.Wait(0.01));
  int called = 0;
  w.OnComplete([&](const Status& s) { called += s.ok(); });
  w.Complete(Status::OK());
  EXPECT_TRUE(w.Wait(-1));
  EXPECT_EQ(called, 1);
  w.OnComplete([&](const Status& s) { called += s.ok(); });
  EXPECT_EQ(called, 2);
}

// Only a failure completed after the generation began to end is news of the
// end, and only once delivered: read by status() or handed to a callback.
TEST(Work, FailureAfterTheEndTellsTheGenerationWhenDelivered) {
  auto end = std::make_shared<GenerationEnd>();
  Work before(nullptr, end);
  before.Complete(Status::Aborted("mismatch, before the end"));
  Work ok_after(nullptr, end);
  end->Begin();
  ok_after.Complete(Status::OK());
  Work after(nullptr, end);
  after.Complete(Status::Aborted("the end"));
  EXPECT_FALSE(before.status().ok());
  EXPECT_TRUE(ok_after.status().ok());
  EXPECT_FALSE(end->told()) << "completed, not delivered; or no news of the end";
  EXPECT_FALSE(after.status().ok());
  EXPECT_TRUE(end->told());

  // Through a completion callback: registered before, or after completion.
  for (bool register_first : {true, false}) {
    auto gen = std::make_shared<GenerationEnd>();
    gen->Begin();
    Work w(nullptr, gen);
    int calls = 0;
    auto cb = [&](const Status& s) { calls += !s.ok(); };
    if (register_first) w.OnComplete(cb);
    w.Complete(Status::Aborted("the end"));
    EXPECT_EQ(gen->told(), register_first);
    if (!register_first) w.OnComplete(cb);
    EXPECT_TRUE(gen->told());
    EXPECT_EQ(calls, 1);
  }
}

}  // namespace
}  // namespace hvda
