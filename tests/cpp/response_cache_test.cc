// ResponseCache (common/response_cache.h): hits, misses, invalidation, LRU
// eviction and the responses it never caches.
#include <gtest/gtest.h>

#include "common/response_cache.h"
#include "message_test_util.h"

namespace hvda {
namespace {

using testing::MakeRequest;
using testing::MakeResponse;

TEST(ResponseCache, HitMissInvalid) {
  ResponseCache cache(4);
  uint32_t slot = 99;
  Request req = MakeRequest("a", {4});
  EXPECT_EQ(cache.Find(req, &slot), ResponseCache::Lookup::kMiss);
  cache.Put(MakeResponse("a", {4}), req);
  EXPECT_EQ(cache.Find(req, &slot), ResponseCache::Lookup::kHit);
  EXPECT_EQ(slot, 0u);
  EXPECT_EQ(cache.Find(MakeRequest("a", {5}), &slot), ResponseCache::Lookup::kInvalid);
  cache.Erase(slot);
  EXPECT_EQ(cache.Find(req, &slot), ResponseCache::Lookup::kMiss);
}

TEST(ResponseCache, EvictsLeastRecentlyUsedAndReusesLowestSlot) {
  ResponseCache cache(2);
  cache.Put(MakeResponse("a", {1}), MakeRequest("a", {1}));
  cache.Put(MakeResponse("b", {1}), MakeRequest("b", {1}));
  uint32_t slot;
  ASSERT_EQ(cache.Find(MakeRequest("a", {1}), &slot), ResponseCache::Lookup::kHit);
  cache.Touch(slot);  // "b" is now least recently used
  cache.Put(MakeResponse("c", {1}), MakeRequest("c", {1}));
  EXPECT_EQ(cache.Find(MakeRequest("b", {1}), &slot), ResponseCache::Lookup::kMiss);
  ASSERT_EQ(cache.Find(MakeRequest("c", {1}), &slot), ResponseCache::Lookup::kHit);
  EXPECT_EQ(slot, 1u);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(ResponseCache, IgnoresUncacheableResponses) {
  ResponseCache cache(4);
  Response barrier = MakeResponse("bar", {});
  barrier.type = ResponseType::kBarrier;
  cache.Put(barrier, MakeRequest("bar", {}, RequestType::kBarrier));
  EXPECT_EQ(cache.size(), 0u);
  ResponseCache off(0);
  off.Put(MakeResponse("a", {1}), MakeRequest("a", {1}));
  EXPECT_EQ(off.size(), 0u);
}

}  // namespace
}  // namespace hvda
