// Thread affinity (common/util/thread_affinity.h): the core a local rank
// pins to, and the errors for bad HOROVOD_THREAD_AFFINITY lists.
#include <gtest/gtest.h>

#include "common/util/thread_affinity.h"

namespace hvda {
namespace {

TEST(ThreadAffinity, PicksTheLocalRanksEntryAndRejectsBadLists) {
  int core = 0;
  ASSERT_TRUE(AffinityCoreFor("", 3, &core).ok());
  EXPECT_EQ(core, -1);
  ASSERT_TRUE(AffinityCoreFor("4,6,8", 1, &core).ok());
  EXPECT_EQ(core, 6);
  Status short_list = AffinityCoreFor("4", 1, &core);
  EXPECT_FALSE(short_list.ok());
  EXPECT_NE(short_list.reason().find("local rank 1"), std::string::npos) << short_list.reason();
  for (const char* bad : {"x", "1,,2", "-1", "2a"}) {
    Status st = AffinityCoreFor(bad, 0, &core);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.reason().find("HOROVOD_THREAD_AFFINITY"), std::string::npos) << st.reason();
  }
}

}  // namespace
}  // namespace hvda
