// Timeline (common/timeline.h): the trace file's begin/end pairs across
// Stop() and restarts.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "common/timeline.h"

namespace hvda {
namespace {

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Stop() while a negotiation and an op are still open (other threads would
// end them later) closes both in the file; their later ends, and ends of
// activities begun before a restart, write nothing into the next file.
TEST(Timeline, StopClosesOpenActivitiesAndLateEndsWriteNothing) {
  const std::string first = ::testing::TempDir() + "hvda_timeline_1.json";
  const std::string second = ::testing::TempDir() + "hvda_timeline_2.json";
  Timeline tl;
  std::string error;
  ASSERT_TRUE(tl.Start(first, false, &error)) << error;
  tl.NegotiateStart("allreduce.a", RequestType::kAllreduce);
  tl.NegotiateStart("__barrier__", RequestType::kBarrier);
  tl.NegotiateEnd("allreduce.a");
  tl.OpStart("allreduce.a", ResponseType::kAllreduce);
  tl.ActivityStart("allreduce.a", "ALLREDUCE");
  tl.Stop();
  tl.ActivityEnd("allreduce.a");  // after the stop: dropped
  std::string text = ReadAll(first);
  EXPECT_EQ(CountOf(text, "\"ph\": \"B\""), 4) << text;
  EXPECT_EQ(CountOf(text, "\"ph\": \"E\""), 4) << text;
  EXPECT_EQ(text.substr(text.size() - 3), "\n]\n");

  ASSERT_TRUE(tl.Start(second, false, &error)) << error;
  tl.NegotiateEnd("__barrier__");            // begun in the first file
  tl.OpEnd("allreduce.a", DataType::kFloat32, {4});
  tl.NegotiateStart("allreduce.b", RequestType::kAllreduce);
  tl.NegotiateEnd("allreduce.b");
  tl.Stop();
  text = ReadAll(second);
  EXPECT_EQ(CountOf(text, "\"ph\": \"B\""), 1) << text;
  EXPECT_EQ(CountOf(text, "\"ph\": \"E\""), 1) << text;
  EXPECT_EQ(text.find("allreduce.a"), std::string::npos) << text;
  std::remove(first.c_str());
  std::remove(second.c_str());
}

}  // namespace
}  // namespace hvda
