// Message (common/message.h): the wire encoding of request and response
// lists: round trips and corruption.
#include <gtest/gtest.h>

#include "common/message.h"
#include "message_test_util.h"

namespace hvda {
namespace {

using testing::MakeRequest;
using testing::MakeResponse;

TEST(Message, RequestListRoundTrip) {
  RequestList l;
  l.shutdown = true;
  Request r = MakeRequest("allreduce.x", {3, 0, 5}, RequestType::kAlltoall);
  r.splits = {1, 2};
  r.prescale = 0.5;
  r.root_rank = 1;
  l.requests = {r, MakeRequest("b", {})};
  RequestList back;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  ASSERT_EQ(back.requests.size(), 2u);
  EXPECT_TRUE(back.shutdown);
  EXPECT_EQ(back.requests[0].name, "allreduce.x");
  EXPECT_EQ(back.requests[0].shape, (std::vector<int64_t>{3, 0, 5}));
  EXPECT_EQ(back.requests[0].splits, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(back.requests[0].prescale, 0.5);
  EXPECT_EQ(back.requests[0].type, RequestType::kAlltoall);
  EXPECT_TRUE(back.requests[1].shape.empty());
}

TEST(Message, ResponseListRoundTripAndCorruption) {
  ResponseList l;
  l.joined_count = 2;
  Response r = MakeResponse("a", {4});
  r.names.push_back("b");
  r.shapes.push_back({2, 2});
  r.error = "boom";
  r.rank_dim0 = {1, 2, 3};
  l.responses = {r};
  std::string bytes = Serialize(l);
  ResponseList back;
  ASSERT_TRUE(Deserialize(bytes, &back).ok());
  EXPECT_EQ(back.joined_count, 2);
  EXPECT_EQ(back.responses[0].names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(back.responses[0].rank_dim0, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(back.responses[0].error, "boom");
  EXPECT_FALSE(Deserialize(bytes.substr(0, bytes.size() - 3), &back).ok());
}

}  // namespace
}  // namespace hvda
