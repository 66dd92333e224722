// The store's framing (see wire_protocol.h; the layout is the table's,
// common/store/wire_protocol.def).
#include "common/store/wire_protocol.h"

namespace hvda {
namespace store_wire {
namespace {

static_assert(kLengthBytes == 4, "lengths are u32 big-endian");
static_assert(kCodeBytes == 1, "codes are one byte");

void PutU32(std::string* s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t(u[0]) << 24) | (uint32_t(u[1]) << 16) | (uint32_t(u[2]) << 8) | uint32_t(u[3]);
}

}  // namespace

std::string EncodeFrame(uint8_t code, const std::vector<std::string>& fields) {
  size_t payload_size = kCodeBytes;
  for (const auto& f : fields) payload_size += kLengthBytes + f.size();
  std::string frame;
  frame.reserve(kLengthBytes + payload_size);
  PutU32(&frame, static_cast<uint32_t>(payload_size));
  frame.push_back(static_cast<char>(code));
  for (const auto& f : fields) {
    PutU32(&frame, static_cast<uint32_t>(f.size()));
    frame += f;
  }
  return frame;
}

uint32_t DecodeLength(const char* header) { return GetU32(header); }

bool DecodePayload(const std::string& payload, Frame* out, std::string* err) {
  if (payload.empty()) {
    *err = "empty frame";
    return false;
  }
  out->code = static_cast<uint8_t>(payload[0]);
  out->fields.clear();
  size_t pos = kCodeBytes;
  while (pos < payload.size()) {
    if (pos + kLengthBytes > payload.size()) {
      *err = "truncated field length";
      return false;
    }
    const uint32_t len = GetU32(&payload[pos]);
    pos += kLengthBytes;
    if (len > payload.size() - pos) {
      *err = "truncated field";
      return false;
    }
    out->fields.emplace_back(payload, pos, len);
    pos += len;
  }
  return true;
}

}  // namespace store_wire
}  // namespace hvda
