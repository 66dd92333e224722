// The CPU device's HAL (devices/cpu/host_device.h): aligned memory, memset,
// batched copies and reductions.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "devices/cpu/host_device.h"

namespace hvda {
namespace cpu {
namespace {

TEST(CpuHostDevice, AlignedMemoryAndBatchedCopy) {
  HostDevice dev;
  EXPECT_EQ(dev.name(), "cpu");
  void* p = nullptr;
  ASSERT_TRUE(dev.memory().Allocate(100, &p).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  void* z = nullptr;
  ASSERT_TRUE(dev.memory().Allocate(0, &z).ok());
  EXPECT_NE(z, nullptr);
  ASSERT_TRUE(dev.memory().MemsetAsync(p, 7, 100, nullptr).ok());
  char src[10] = "abcdefghi";
  ASSERT_TRUE(dev.execution().BatchedCopy({{p, src, 4}, {static_cast<char*>(p) + 50, src + 4, 5}}, nullptr).ok());
  EXPECT_EQ(std::memcmp(p, "abcd", 4), 0);
  EXPECT_EQ(static_cast<char*>(p)[4], 7);
  EXPECT_EQ(std::memcmp(static_cast<char*>(p) + 50, "efghi", 5), 0);
  float f[2] = {1, 2}, g[2] = {3, 4};
  ASSERT_TRUE(dev.execution().ReduceInto(f, g, 2, DataType::kFloat32, ReduceOp::kSum, nullptr).ok());
  EXPECT_EQ(f[1], 6.0f);
  EXPECT_FALSE(dev.execution().ReduceInto(f, g, 2, DataType::kBool, ReduceOp::kSum, nullptr).ok());
  dev.memory().Free(p);
  dev.memory().Free(z);
}

}  // namespace
}  // namespace cpu
}  // namespace hvda
