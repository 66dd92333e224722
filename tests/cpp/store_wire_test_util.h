// Test-side oracle of the rendezvous store's wire format: frames built from
// the table (common/store/wire_protocol.def, through store_wire::kRequests)
// by an encoder written here, independently of wire_protocol.cc, so a test
// that compares an implementation's bytes with these fails when either the
// table's field order or the implementation's framing drifts.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/store/wire_protocol.h"

namespace hvda {
namespace store_wire_test {

inline void AppendBigEndian32(std::string* s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>((v >> shift) & 0xff));
}

// The field names of a table entry ("key value" -> {"key", "value"}).
inline std::vector<std::string> FieldNames(const char* fields) {
  std::istringstream in(fields);
  std::vector<std::string> names;
  for (std::string name; in >> name;) names.push_back(name);
  return names;
}

// The table's entry for request `name` ("Set"); fails the test if there is none.
inline const store_wire::MessageSpec* RequestSpec(const std::string& name) {
  for (const auto& spec : store_wire::kRequests)
    if (name == spec.name) return &spec;
  ADD_FAILURE() << "no request '" << name << "' in common/store/wire_protocol.def";
  return nullptr;
}

// The whole frame of request `name` with each field's value looked up by its
// table name in `values` (a missing name fails the test).
inline std::string TableFrame(const std::string& name,
                              const std::map<std::string, std::string>& values) {
  const store_wire::MessageSpec* spec = RequestSpec(name);
  if (spec == nullptr) return "";
  std::string payload(1, static_cast<char>(spec->code));
  for (const std::string& field : FieldNames(spec->fields)) {
    auto it = values.find(field);
    if (it == values.end()) {
      ADD_FAILURE() << "no test value for field '" << field << "' of " << name;
      continue;
    }
    AppendBigEndian32(&payload, static_cast<uint32_t>(it->second.size()));
    payload += it->second;
  }
  std::string frame;
  AppendBigEndian32(&frame, static_cast<uint32_t>(payload.size()));
  return frame + payload;
}

// Lowercase hex, two digits a byte (readable failure messages).
inline std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

}  // namespace store_wire_test
}  // namespace hvda
