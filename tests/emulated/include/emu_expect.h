// Expectations for the emulation's own test programs (emu_selftest,
// emu_kernel_check): a failed EXPECT prints where and which test, and
// counts; a program's main returns nonzero when emu_test::failures > 0.
// Single-threaded use (the checks run on the main thread).
#pragma once

#include <cstdio>

namespace emu_test {
inline int failures = 0;
inline const char* current_test = "";  // set by each test before its checks
}  // namespace emu_test

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "  %s:%d: %s: expected %s\n", __FILE__, __LINE__,           \
                   emu_test::current_test, #cond);                                     \
      ++emu_test::failures;                                                            \
    }                                                                                  \
  } while (0)
#define EXPECT_EQ(a, b) EXPECT((a) == (b))
#define OK(call) EXPECT_EQ((call), 0)
