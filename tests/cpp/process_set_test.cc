// Process sets (common/process_set.h): the checks of static process sets
// made before any peer is contacted.
#include <gtest/gtest.h>

#include <vector>

#include "common/process_set.h"

namespace hvda {
namespace {

TEST(ProcessSets, StaticSetsAreCheckedBeforeAnyPeerIsContacted) {
  std::vector<std::vector<int>> sorted;
  ASSERT_TRUE(CheckStaticProcessSets({{1, 0}, {2, 1}}, 3, &sorted).ok());
  EXPECT_EQ(sorted, (std::vector<std::vector<int>>{{0, 1}, {1, 2}}));
  ASSERT_TRUE(CheckStaticProcessSets({}, 1, &sorted).ok());
  EXPECT_TRUE(sorted.empty());
  struct Bad {
    std::vector<std::vector<int>> sets;
    const char* says;
  };
  for (const Bad& bad : {Bad{{{0, 1}, {1, 0}}, "given twice"},
                         Bad{{{2, 0, 1}}, "holds every rank"},
                         Bad{{{0, 5}}, "distinct ranks in [0, 3)"},
                         Bad{{{0, 0}}, "distinct ranks"},
                         Bad{{{-1, 1}}, "distinct ranks"},
                         Bad{{{}}, "distinct ranks"}}) {
    Status st = CheckStaticProcessSets(bad.sets, 3, &sorted);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad.says;
    EXPECT_NE(st.reason().find(bad.says), std::string::npos) << st.reason();
  }
}

}  // namespace
}  // namespace hvda
