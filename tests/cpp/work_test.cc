// Work (common/work.h): waiting with a timeout, completion callbacks.
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

}  // namespace
}  // namespace hvda
