// hvda_tf::ReadTString: the bytes of one element of a TF_STRING tensor.
// Needs no TensorFlow header (tf_c_api.h includes it; so does the ABI check,
// check/tf_c_api_check.cc, beside TensorFlow's own headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace hvda_tf {

// One element of a TF_STRING tensor (tensorflow::tstring, TF_TString in the
// C API): 24 bytes. We read it ourselves: the C API's exported accessors
// (TF_StringGetSize & co.) live in libtensorflow_cc.so.2 (with symbol
// version "tensorflow"), not in libtensorflow_framework.so.2, and TF's C
// header (tf_tstring.h) implements its TF_TString_* accessors inline, so
// every op library that reads strings through that header has this layout
// compiled in: a change would break them all. Layout (little-endian; the low
// two bits of byte 0 give the representation, the rest of the first size
// field is the size << 2):
//   small  (0): byte 0 = size << 2, the bytes at offset 1 (size <= 22);
//   large  (1): size_t at 0 = size << 2 | 1, size_t capacity at 8, char* at 16;
//   offset (2): uint32 at 0 = size << 2 | 2, uint32 at 4 = where the bytes
//               start, counted from the element's own address;
//   view   (3): size_t at 0 = size << 2 | 3, const char* at 8 (an owner
//               pointer at 16 in newer releases, not read here).
constexpr size_t kTStringBytes = 24;
static_assert(sizeof(size_t) == 8 && sizeof(void*) == 8, "64-bit targets only");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ReadTString assumes a little-endian target"
#endif

inline std::string ReadTString(const void* element) {
  const auto* p = static_cast<const unsigned char*>(element);
  auto word = [p](size_t at) {
    uint64_t v;
    std::memcpy(&v, p + at, sizeof(v));
    return v;
  };
  auto pointer = [p](size_t at) {
    const char* v;
    std::memcpy(&v, p + at, sizeof(v));
    return v;
  };
  switch (p[0] & 3u) {
    case 0:
      return std::string(reinterpret_cast<const char*>(p + 1), p[0] >> 2);
    case 1:
      return std::string(pointer(16), word(0) >> 2);
    case 2: {
      uint32_t size, offset;
      std::memcpy(&size, p, sizeof(size));
      std::memcpy(&offset, p + 4, sizeof(offset));
      return std::string(reinterpret_cast<const char*>(p) + offset, size >> 2);
    }
    default:
      return std::string(pointer(8), word(0) >> 2);
  }
}

}  // namespace hvda_tf
