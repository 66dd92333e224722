// The rendezvous store's wire protocol in C++: the constants, derived from
// the one table common/store/wire_protocol.def (NOTE [Rendezvous store wire
// protocol] there), and the framing every C++ speaker of the store uses.
// Pure functions over bytes; the sockets are tcp_store.cc's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvda {
namespace store_wire {

// kMagic, kMaxFrame, ..., kOpHello, ..., kStOk, ...: one constant per line
// of the table.
#define HVDA_STORE_TEXT(name, text) inline constexpr char k##name[] = text;
#define HVDA_STORE_SIZE(name, bytes) inline constexpr uint32_t k##name = bytes;
#define HVDA_STORE_REQUEST(name, code, fields, replies) inline constexpr uint8_t kOp##name = code;
#define HVDA_STORE_REPLY(name, code, fields) inline constexpr uint8_t kSt##name = code;
#include "common/store/wire_protocol.def"
#undef HVDA_STORE_TEXT
#undef HVDA_STORE_SIZE
#undef HVDA_STORE_REQUEST
#undef HVDA_STORE_REPLY

// One message of the table as data (for tests, and for naming codes in
// messages). Strings are the table's literals: static, never freed.
struct MessageSpec {
  const char* name;     // "Set"
  uint8_t code;         // kOpSet
  const char* fields;   // "key value": the field names in wire order
  const char* replies;  // requests: "Ok() Refused(msg)"; replies: ""
};

#define HVDA_STORE_TEXT(name, text)
#define HVDA_STORE_SIZE(name, bytes)
#define HVDA_STORE_REQUEST(name, code, fields, replies) MessageSpec{#name, code, fields, replies},
#define HVDA_STORE_REPLY(name, code, fields)
inline constexpr MessageSpec kRequests[] = {
#include "common/store/wire_protocol.def"
};
#undef HVDA_STORE_REQUEST
#undef HVDA_STORE_REPLY
#define HVDA_STORE_REQUEST(name, code, fields, replies)
#define HVDA_STORE_REPLY(name, code, fields) MessageSpec{#name, code, fields, ""},
inline constexpr MessageSpec kReplies[] = {
#include "common/store/wire_protocol.def"
};
#undef HVDA_STORE_TEXT
#undef HVDA_STORE_SIZE
#undef HVDA_STORE_REQUEST
#undef HVDA_STORE_REPLY

// A decoded payload: its code and its fields, in order.
struct Frame {
  uint8_t code = 0;
  std::vector<std::string> fields;
};

// The bytes of one whole frame (length prefix, code, fields). Does not check
// kMaxFrame: the peer refuses a larger frame.
std::string EncodeFrame(uint8_t code, const std::vector<std::string>& fields);

// The payload length a frame's kLengthBytes-byte header announces.
uint32_t DecodeLength(const char* header);

// Splits a payload (a frame without its length prefix) into *out. Returns
// false, with *err saying why and *out unspecified, if the payload is empty
// or a field runs past its end.
bool DecodePayload(const std::string& payload, Frame* out, std::string* err);

}  // namespace store_wire
}  // namespace hvda
