// The rendezvous store's wire protocol in C++ (common/store/wire_protocol.h,
// derived from the one table common/store/wire_protocol.def): the table is
// consistent, the framing follows it byte by byte for every request, and
// payloads decode back or are rejected with a reason. What TcpStore itself
// sends is checked in tcp_store_test.cc; the Python side (protocol.py,
// client.py, server.py) is checked against the same table by
// tests/python/test_rendezvous_wire.py.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/store/wire_protocol.h"
#include "store_wire_test_util.h"

namespace hvda {
namespace {

using store_wire::DecodePayload;
using store_wire::EncodeFrame;
using store_wire::Frame;
using store_wire_test::FieldNames;
using store_wire_test::Hex;
using store_wire_test::TableFrame;

// A value for every field name the table uses.
const std::map<std::string, std::string> kValues = {
    {"magic", store_wire::kMagic}, {"secret", "s3"},    {"key", "k"},
    {"value", "v"},                {"timeout_ms", "-1"}, {"delta", "12"}};

TEST(StoreWire, TableIsConsistent) {
  std::set<int> codes;
  std::set<std::string> replies;
  for (const auto& reply : store_wire::kReplies) {
    EXPECT_GE(reply.code, 0x80) << reply.name << ": reply codes have the top bit set";
    EXPECT_TRUE(codes.insert(reply.code).second) << "code of " << reply.name << " reused";
    replies.insert(reply.name);
  }
  for (const auto& request : store_wire::kRequests) {
    EXPECT_LT(request.code, 0x80) << request.name << ": request codes have the top bit clear";
    EXPECT_TRUE(codes.insert(request.code).second) << "code of " << request.name << " reused";
    for (const std::string& item : FieldNames(request.replies)) {
      const std::string reply = item.substr(0, item.find('('));
      EXPECT_EQ(replies.count(reply), 1u) << request.name << " names unknown reply " << reply;
    }
  }
  EXPECT_EQ(std::string(store_wire::kRequests[0].name), "Hello") << "Hello opens a connection";
  EXPECT_LE(store_wire::kMaxHelloFrame, store_wire::kMaxFrame);
}

// One frame byte by byte, with the same literal as the Python test: a change
// of the layout must show up here, not only as a round trip that still works.
TEST(StoreWire, SetFrameBytesArePinned) {
  const std::string expected = std::string("0000000b")  // payload of 11 bytes
                               + "02"                   // Set
                               + "00000001" + "6b"      // key "k"
                               + "00000001" + "76";     // value "v"
  EXPECT_EQ(Hex(EncodeFrame(store_wire::kOpSet, {"k", "v"})), expected);
  EXPECT_EQ(Hex(TableFrame("Set", kValues)), expected);
}

TEST(StoreWire, EveryRequestIsFramedInTheTablesFieldOrder) {
  for (const auto& request : store_wire::kRequests) {
    std::vector<std::string> fields;
    for (const std::string& name : FieldNames(request.fields)) fields.push_back(kValues.at(name));
    EXPECT_EQ(Hex(EncodeFrame(request.code, fields)), Hex(TableFrame(request.name, kValues)))
        << request.name;
  }
}

TEST(StoreWire, PayloadsDecodeBackOrAreRejected) {
  const std::string binary("a\0b\xff", 4);
  const std::string frame = EncodeFrame(store_wire::kStOk, {"", binary, "x"});
  ASSERT_EQ(store_wire::DecodeLength(frame.data()), frame.size() - store_wire::kLengthBytes);
  const std::string payload = frame.substr(store_wire::kLengthBytes);
  Frame out;
  std::string err;
  ASSERT_TRUE(DecodePayload(payload, &out, &err)) << err;
  EXPECT_EQ(out.code, store_wire::kStOk);
  EXPECT_EQ(out.fields, (std::vector<std::string>{"", binary, "x"}));
  ASSERT_TRUE(DecodePayload(std::string(1, '\x80'), &out, &err));
  EXPECT_TRUE(out.fields.empty());

  EXPECT_FALSE(DecodePayload("", &out, &err));
  EXPECT_EQ(err, "empty frame");
  EXPECT_FALSE(DecodePayload(payload.substr(0, 3), &out, &err));
  EXPECT_EQ(err, "truncated field length");
  EXPECT_FALSE(DecodePayload(payload.substr(0, payload.size() - 1), &out, &err));
  EXPECT_EQ(err, "truncated field");
  std::string huge = payload;
  huge[1] = '\x7f';  // the first field's length: ~2 GiB in a 20-byte payload
  EXPECT_FALSE(DecodePayload(huge, &out, &err));
  EXPECT_EQ(err, "truncated field");
}

}  // namespace
}  // namespace hvda
