// TensorQueue (common/tensor_queue.h): atomic admission of groups, name
// reservation until release, and failing everything queued.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/tensor_queue.h"
#include "message_test_util.h"

namespace hvda {
namespace {

using testing::MakeRequest;

TEST(TensorQueue, DuplicateNamesRejectedAtomically) {
  TensorQueue q;
  TensorEntry a;
  a.request = MakeRequest("x", {1});
  a.work = std::make_shared<Work>();
  ASSERT_TRUE(q.Add({a}).ok());
  TensorEntry b = a, c = a;
  b.request.name = "y";
  Status st = q.Add({b, c});  // c duplicates in-flight "x"
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("'x'"), std::string::npos);
  EXPECT_EQ(q.InFlight(), 1u);
  std::vector<Request> reqs;
  q.PopNewRequests(&reqs);
  EXPECT_EQ(reqs.size(), 1u);
  EXPECT_FALSE(q.HasNewRequests());
  // The refused group reserved nothing: "y" is free, "x" still taken.
  TensorEntry y = b;
  y.work = std::make_shared<Work>();
  EXPECT_TRUE(q.Add({y}).ok());
  EXPECT_EQ(q.Add({c}).code(), StatusCode::kInvalidArgument);
  q.PopNewRequests(&reqs);
  q.FailAll(Status::Aborted("stop"));
  EXPECT_TRUE(a.work->IsCompleted());
  EXPECT_EQ(a.work->status().code(), StatusCode::kAborted);
  TensorEntry got;
  EXPECT_FALSE(q.Take("x", &got));
}

// NOTE [Name reservation]: completing an op does not free its name; only
// ReleaseName() (synchronize) or dropping the Work does.
TEST(TensorQueue, NamesStayReservedUntilReleased) {
  TensorQueue q;
  TensorEntry a;
  a.request = MakeRequest("x", {1});
  a.work = std::make_shared<Work>();
  std::shared_ptr<Work> work = a.work;
  ASSERT_TRUE(q.Add({a}).ok());
  TensorEntry taken;
  ASSERT_TRUE(q.Take("x", &taken));
  taken.work->Complete(Status::OK());
  taken = TensorEntry();
  TensorEntry again;
  again.request = MakeRequest("x", {1});
  again.work = std::make_shared<Work>();
  Status st = q.Add({again});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "completed but not released";
  EXPECT_NE(st.reason().find("synchronize"), std::string::npos) << st.reason();
  work->ReleaseName();
  work->ReleaseName();  // idempotent
  EXPECT_TRUE(q.Add({again}).ok());
  // Dropping the last reference releases too (after FailAll completed it).
  q.FailAll(Status::Aborted("stop"));
  again = TensorEntry();
  TensorEntry third;
  third.request = MakeRequest("x", {1});
  third.work = std::make_shared<Work>();
  EXPECT_TRUE(q.Add({third}).ok());
  // A group repeating a name is refused atomically.
  TensorEntry g1, g2;
  g1.request = MakeRequest("g", {1});
  g2.request = MakeRequest("g", {1});
  g1.work = std::make_shared<Work>();
  g2.work = std::make_shared<Work>();
  EXPECT_EQ(q.Add({g1, g2}).code(), StatusCode::kInvalidArgument);
  g2.request.name = "h";
  EXPECT_TRUE(q.Add({g1, g2}).ok());
}

}  // namespace
}  // namespace hvda
