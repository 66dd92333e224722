// The bits of a float and back (test code only), for tests that compare
// floats bit for bit or build them from random bit patterns.
#pragma once

#include <cstdint>
#include <cstring>

namespace hvda {
namespace testing {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace testing
}  // namespace hvda
