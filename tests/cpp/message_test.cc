// Message (common/message.h): the wire encoding of request and response
// lists (round trips, tuned parameters, corruption, the exact bytes of small
// lists) and the request type names.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

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

TEST(Message, TypeNames) {
  for (int t = 0; t <= static_cast<int>(RequestType::kRemoveProcessSet); ++t) {
    std::string upper = RequestTypeOpName(static_cast<RequestType>(t));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(upper, RequestTypeName(static_cast<RequestType>(t))) << t;
    EXPECT_STREQ(ResponseTypeName(static_cast<ResponseType>(t)),
                 RequestTypeName(static_cast<RequestType>(t)));
  }
  EXPECT_STREQ(RequestTypeName(RequestType::kReducescatter), "REDUCESCATTER");
  EXPECT_STREQ(RequestTypeOpName(RequestType::kAddProcessSet), "add_process_set");
  EXPECT_STREQ(ResponseTypeName(ResponseType::kError), "ERROR");
  EXPECT_STREQ(RequestTypeName(static_cast<RequestType>(42)), "UNKNOWN");
  EXPECT_STREQ(RequestTypeOpName(static_cast<RequestType>(-1)), "unknown");
  EXPECT_STREQ(ResponseTypeName(static_cast<ResponseType>(11)), "UNKNOWN");
}

TEST(AutotuneMessage, ResponseListCarriesParameters) {
  ResponseList l;
  l.responses.push_back(MakeResponse("a", {3}));
  l.has_params = true;
  l.params = {5 << 20, 12.25};
  ResponseList back;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  EXPECT_TRUE(back.has_params);
  EXPECT_EQ(back.params.fusion_threshold_bytes, 5 << 20);
  EXPECT_EQ(back.params.cycle_time_ms, 12.25);
  ASSERT_EQ(back.responses.size(), 1u);
  EXPECT_EQ(back.responses[0].names[0], "a");
  l.has_params = false;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  EXPECT_FALSE(back.has_params);
}

// Truncations name the part that was cut; a count larger than the bytes
// left is corrupt, not an allocation of that many elements.
TEST(Message, CorruptionNamesThePartAndHugeCountsAreRefused) {
  RequestList l;
  l.requests = {MakeRequest("a", {2})};
  const std::string bytes = Serialize(l);
  RequestList back;
  EXPECT_EQ(Deserialize(bytes.substr(0, 5), &back).reason(),
            "corrupt request list received from a peer rank");
  EXPECT_EQ(Deserialize(bytes.substr(0, bytes.size() - 1), &back).reason(),
            "corrupt request received from a peer rank");
  EXPECT_EQ(Deserialize(bytes + "x", &back).reason(),
            "corrupt request list received from a peer rank");
  std::string huge = bytes;
  huge[8] = 0x40;  // the request count's top byte: 2^62 requests
  EXPECT_EQ(Deserialize(huge, &back).reason(), "corrupt request list received from a peer rank");

  ResponseList rl;
  rl.responses = {MakeResponse("a", {2})};
  std::string rbytes = Serialize(rl);
  ResponseList rback;
  EXPECT_EQ(Deserialize(rbytes.substr(0, rbytes.size() - 1), &rback).reason(),
            "corrupt response received from a peer rank");
  rbytes[1 + 4 + 8 + 8 + 4 + 7] = 0x40;  // the first response's name count: 2^62 names
  EXPECT_EQ(Deserialize(rbytes, &rback).reason(), "corrupt response received from a peer rank");
  EXPECT_EQ(Deserialize("", &rback).reason(), "corrupt response list received from a peer rank");
}

// Lowercase hex of `bytes`, two digits a byte.
std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// The wire format, byte by byte (little-endian PODs, u64 lengths): a change
// of the encoding must show up here, not only as a round trip that still works.
TEST(Message, RequestListBytesArePinned) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  GTEST_SKIP() << "the pinned bytes are those of a little-endian build";
#endif
  RequestList l;
  l.stuck = true;
  l.deadlock_end = true;
  Request r = MakeRequest("ab", {3}, RequestType::kBroadcast);
  r.rank = 1;
  r.root_rank = 0;
  r.postscale = 2.0;
  l.requests = {r};
  const std::string expected = std::string("06")   // flags: stuck, deadlock_end
                               + "0100000000000000"  // one request
                               + "01000000"          // rank 1
                               + "02000000"          // BROADCAST
                               + "07000000"          // float32
                               + "ffffffff"          // device -1 (CPU)
                               + "00000000"          // root rank 0
                               + "01000000"          // sum
                               + "000000000000f03f"  // prescale 1.0
                               + "0000000000000040"  // postscale 2.0
                               + "0200000000000000" + "6162"              // name "ab"
                               + "0100000000000000" + "0300000000000000"  // shape {3}
                               + "0000000000000000";                      // splits {}
  EXPECT_EQ(Hex(Serialize(l)), expected);
}

TEST(Message, ResponseListBytesArePinned) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  GTEST_SKIP() << "the pinned bytes are those of a little-endian build";
#endif
  ResponseList l;
  l.shutdown = true;
  l.has_params = true;
  l.deadlock_end = true;
  l.params.fusion_threshold_bytes = 64;
  l.params.cycle_time_ms = 0.5;
  l.joined_count = 1;
  l.shutdown_ranks = {2};
  Response r = MakeResponse("x", {});
  r.type = ResponseType::kError;
  r.error = "e";
  l.responses = {r};
  const std::string expected = std::string("15")                        // flags: shutdown, params, deadlock_end
                               + "01000000"                             // joined_count 1
                               + "0100000000000000" + "0200000000000000"  // shutdown_ranks {2}
                               + "4000000000000000"                     // fusion threshold 64
                               + "000000000000e03f"                     // cycle time 0.5 ms
                               + "0100000000000000"                     // one response
                               + "0a000000"                             // ERROR
                               + "0100000000000000" + "0100000000000000" + "78"  // names {"x"}
                               + "0100000000000000" + "65"              // error "e"
                               + "07000000"                             // float32
                               + "ffffffff" + "ffffffff"                // device, root rank -1
                               + "01000000"                             // sum
                               + "000000000000f03f" + "000000000000f03f"  // pre/postscale 1.0
                               + "0100000000000000" + "0000000000000000"  // shapes {{}}
                               + "0000000000000000"                     // rank_dim0 {}
                               + "0000000000000000"                     // splits_matrix {}
                               + "ffffffff"                             // last joined rank -1
                               + "0000000000000000";                    // payload {}
  EXPECT_EQ(Hex(Serialize(l)), expected);
  ResponseList back;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  EXPECT_TRUE(back.shutdown && back.has_params && !back.all_stuck);
  EXPECT_TRUE(back.deadlock_end && !back.deadlock_declared);
  EXPECT_EQ(back.params.fusion_threshold_bytes, 64);
  EXPECT_EQ(back.params.cycle_time_ms, 0.5);
  EXPECT_EQ(back.shutdown_ranks, (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace hvda
