// Fusion planning (common/fusion.h): which allreduce responses merge under
// a threshold, and which never do.
#include <gtest/gtest.h>

#include <vector>

#include "common/fusion.h"
#include "message_test_util.h"

namespace hvda {
namespace {

using testing::MakeResponse;

// FuseResponses over the responses of `rs` (borrowed, left unchanged).
std::vector<Response> Fused(const std::vector<Response>& rs, int64_t threshold) {
  std::vector<const Response*> in;
  for (const Response& r : rs) in.push_back(&r);
  std::vector<Response> out = {MakeResponse("stale", {1})};  // replaced, not appended to
  FuseResponses(in, threshold, &out);
  return out;
}

TEST(Fusion, MergesCompatibleUpToThreshold) {
  const std::vector<Response> rs = {MakeResponse("a", {10}), MakeResponse("b", {10}),
                                    MakeResponse("c", {10}, DataType::kFloat64),
                                    MakeResponse("d", {10}), MakeResponse("e", {100})};
  const std::vector<Response> fused = Fused(rs, 120);  // a+b+d = 120 bytes of float32; e does not fit
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_EQ(fused[0].names, (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(fused[1].names, (std::vector<std::string>{"c"}));
  EXPECT_EQ(fused[2].names, (std::vector<std::string>{"e"}));
  EXPECT_EQ(fused[0].shapes, (std::vector<std::vector<int64_t>>{{10}, {10}, {10}}));
  EXPECT_EQ(fused[1].dtype, DataType::kFloat64);
  // The inputs are copied, not consumed.
  EXPECT_EQ(rs[1].names, (std::vector<std::string>{"b"}));
  EXPECT_EQ(rs[3].shapes, (std::vector<std::vector<int64_t>>{{10}}));
  EXPECT_TRUE(Fused({}, 120).empty());
}

TEST(Fusion, DisabledAndNonAllreduceUntouched) {
  std::vector<Response> rs = {MakeResponse("a", {1}), MakeResponse("b", {1})};
  EXPECT_EQ(Fused(rs, 0).size(), 2u);
  rs[1].type = ResponseType::kAllgather;
  rs.push_back(MakeResponse("c", {1}));
  rs[2].type = ResponseType::kAllgather;
  EXPECT_EQ(Fused(rs, 1 << 20).size(), 3u);
  rs[0].postscale = 2.0;
  rs.push_back(MakeResponse("d", {1}));
  const std::vector<Response> fused = Fused(rs, 1 << 20);
  ASSERT_EQ(fused.size(), 4u);  // different postscale: not fused
  EXPECT_EQ(fused[3].names, (std::vector<std::string>{"d"}));
}

}  // namespace
}  // namespace hvda
