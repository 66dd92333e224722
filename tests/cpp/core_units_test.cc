// Unit tests of the core's single-rank pieces: wire encoding, response cache,
// fusion planning and the tensor queue.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/activity_tracker.h"
#include "common/fusion.h"
#include "common/message.h"
#include "common/process_set.h"
#include "common/response_cache.h"
#include "common/tensor_queue.h"
#include "common/timeline.h"
#include "common/util/thread_affinity.h"

namespace hvda {
namespace {

Request MakeRequest(const std::string& name, std::vector<int64_t> shape,
                    RequestType type = RequestType::kAllreduce) {
  Request r;
  r.name = name;
  r.type = type;
  r.shape = std::move(shape);
  return r;
}

Response MakeResponse(const std::string& name, std::vector<int64_t> shape,
                      DataType dtype = DataType::kFloat32) {
  Response r;
  r.type = ResponseType::kAllreduce;
  r.names = {name};
  r.shapes = {std::move(shape)};
  r.dtype = dtype;
  return r;
}

TEST(Message, RequestListRoundTrip) {
  RequestList l;
  l.shutdown = true;
  Request r = MakeRequest("allreduce.x", {3, 0, 5}, RequestType::kAlltoall);
  r.splits = {1, 2};
  r.prescale = 0.5;
  r.root_rank = 1;
  l.requests = {r, MakeRequest("b", {})};
  RequestList back;
  ASSERT_TRUE(Deserialize(Serialize(l), &back).ok());
  ASSERT_EQ(back.requests.size(), 2u);
  EXPECT_TRUE(back.shutdown);
  EXPECT_EQ(back.requests[0].name, "allreduce.x");
  EXPECT_EQ(back.requests[0].shape, (std::vector<int64_t>{3, 0, 5}));
  EXPECT_EQ(back.requests[0].splits, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(back.requests[0].prescale, 0.5);
  EXPECT_EQ(back.requests[0].type, RequestType::kAlltoall);
  EXPECT_TRUE(back.requests[1].shape.empty());
}

TEST(Message, ResponseListRoundTripAndCorruption) {
  ResponseList l;
  l.joined_count = 2;
  Response r = MakeResponse("a", {4});
  r.names.push_back("b");
  r.shapes.push_back({2, 2});
  r.error = "boom";
  r.rank_dim0 = {1, 2, 3};
  l.responses = {r};
  std::string bytes = Serialize(l);
  ResponseList back;
  ASSERT_TRUE(Deserialize(bytes, &back).ok());
  EXPECT_EQ(back.joined_count, 2);
  EXPECT_EQ(back.responses[0].names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(back.responses[0].rank_dim0, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(back.responses[0].error, "boom");
  EXPECT_FALSE(Deserialize(bytes.substr(0, bytes.size() - 3), &back).ok());
}

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

// FuseResponses over the responses of `rs` (borrowed, left unchanged).
std::vector<Response> Fused(const std::vector<Response>& rs, int64_t threshold) {
  std::vector<const Response*> in;
  for (const Response& r : rs) in.push_back(&r);
  std::vector<Response> out = {MakeResponse("stale", {1})};  // replaced, not appended to
  FuseResponses(in, threshold, &out);
  return out;
}

TEST(Fusion, MergesCompatibleUpToThreshold) {
  const std::vector<Response> rs = {MakeResponse("a", {10}), MakeResponse("b", {10}),
                                    MakeResponse("c", {10}, DataType::kFloat64),
                                    MakeResponse("d", {10}), MakeResponse("e", {100})};
  const std::vector<Response> fused = Fused(rs, 120);  // a+b+d = 120 bytes of float32; e does not fit
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_EQ(fused[0].names, (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(fused[1].names, (std::vector<std::string>{"c"}));
  EXPECT_EQ(fused[2].names, (std::vector<std::string>{"e"}));
  EXPECT_EQ(fused[0].shapes, (std::vector<std::vector<int64_t>>{{10}, {10}, {10}}));
  EXPECT_EQ(fused[1].dtype, DataType::kFloat64);
  // The inputs are copied, not consumed.
  EXPECT_EQ(rs[1].names, (std::vector<std::string>{"b"}));
  EXPECT_EQ(rs[3].shapes, (std::vector<std::vector<int64_t>>{{10}}));
  EXPECT_TRUE(Fused({}, 120).empty());
}

TEST(Fusion, DisabledAndNonAllreduceUntouched) {
  std::vector<Response> rs = {MakeResponse("a", {1}), MakeResponse("b", {1})};
  EXPECT_EQ(Fused(rs, 0).size(), 2u);
  rs[1].type = ResponseType::kAllgather;
  rs.push_back(MakeResponse("c", {1}));
  rs[2].type = ResponseType::kAllgather;
  EXPECT_EQ(Fused(rs, 1 << 20).size(), 3u);
  rs[0].postscale = 2.0;
  rs.push_back(MakeResponse("d", {1}));
  const std::vector<Response> fused = Fused(rs, 1 << 20);
  ASSERT_EQ(fused.size(), 4u);  // different postscale: not fused
  EXPECT_EQ(fused[3].names, (std::vector<std::string>{"d"}));
}

TEST(TensorQueue, DuplicateNamesRejectedAtomically) {
  TensorQueue q;
  TensorEntry a;
  a.request = MakeRequest("x", {1});
  a.work = std::make_shared<Work>();
  ASSERT_TRUE(q.Add({a}).ok());
  TensorEntry b = a, c = a;
  b.request.name = "y";
  Status st = q.Add({b, c});  // c duplicates in-flight "x"
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.reason().find("'x'"), std::string::npos);
  EXPECT_EQ(q.InFlight(), 1u);
  std::vector<Request> reqs;
  q.PopNewRequests(&reqs);
  EXPECT_EQ(reqs.size(), 1u);
  EXPECT_FALSE(q.HasNewRequests());
  // The refused group reserved nothing: "y" is free, "x" still taken.
  TensorEntry y = b;
  y.work = std::make_shared<Work>();
  EXPECT_TRUE(q.Add({y}).ok());
  EXPECT_EQ(q.Add({c}).code(), StatusCode::kInvalidArgument);
  q.PopNewRequests(&reqs);
  q.FailAll(Status::Aborted("stop"));
  EXPECT_TRUE(a.work->IsCompleted());
  EXPECT_EQ(a.work->status().code(), StatusCode::kAborted);
  TensorEntry got;
  EXPECT_FALSE(q.Take("x", &got));
}

// NOTE [Name reservation]: completing an op does not free its name; only
// ReleaseName() (synchronize) or dropping the Work does.
TEST(TensorQueue, NamesStayReservedUntilReleased) {
  TensorQueue q;
  TensorEntry a;
  a.request = MakeRequest("x", {1});
  a.work = std::make_shared<Work>();
  std::shared_ptr<Work> work = a.work;
  ASSERT_TRUE(q.Add({a}).ok());
  TensorEntry taken;
  ASSERT_TRUE(q.Take("x", &taken));
  taken.work->Complete(Status::OK());
  taken = TensorEntry();
  TensorEntry again;
  again.request = MakeRequest("x", {1});
  again.work = std::make_shared<Work>();
  Status st = q.Add({again});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "completed but not released";
  EXPECT_NE(st.reason().find("synchronize"), std::string::npos) << st.reason();
  work->ReleaseName();
  work->ReleaseName();  // idempotent
  EXPECT_TRUE(q.Add({again}).ok());
  // Dropping the last reference releases too (after FailAll completed it).
  q.FailAll(Status::Aborted("stop"));
  again = TensorEntry();
  TensorEntry third;
  third.request = MakeRequest("x", {1});
  third.work = std::make_shared<Work>();
  EXPECT_TRUE(q.Add({third}).ok());
  // A group repeating a name is refused atomically.
  TensorEntry g1, g2;
  g1.request = MakeRequest("g", {1});
  g2.request = MakeRequest("g", {1});
  g1.work = std::make_shared<Work>();
  g2.work = std::make_shared<Work>();
  EXPECT_EQ(q.Add({g1, g2}).code(), StatusCode::kInvalidArgument);
  g2.request.name = "h";
  EXPECT_TRUE(q.Add({g1, g2}).ok());
}

TEST(ActivityTracker, StuckOnlyWhileWaitingWithoutActivity) {
  auto tracker = std::make_shared<ActivityTracker>();
  // sleep_for waits at least this long: the construction is >= 20 ms old.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(tracker->Stuck(0.0)) << "nobody waits: computing is never stuck";
  Work w(tracker);
  std::thread waiter([&] { w.Wait(-1); });
  // Stuck(0) is true exactly while a thread is inside Wait.
  while (!tracker->Stuck(0.0)) std::this_thread::yield();
  EXPECT_TRUE(tracker->Stuck(0.01));
  EXPECT_FALSE(tracker->Stuck(600));
  tracker->NoteActivity();  // e.g. an enqueue
  EXPECT_FALSE(tracker->Stuck(600));
  w.Complete(Status::OK());
  waiter.join();
  EXPECT_FALSE(tracker->Stuck(0.0)) << "the waiter left";
}

TEST(Work, WaitTimesOutThenCompletes) {
  Work w;
  EXPECT_FALSE(w.Wait(0.01));
  int called = 0;
  w.OnComplete([&](const Status& s) { called += s.ok(); });
  w.Complete(Status::OK());
  EXPECT_TRUE(w.Wait(-1));
  EXPECT_EQ(called, 1);
  w.OnComplete([&](const Status& s) { called += s.ok(); });
  EXPECT_EQ(called, 2);
}

}  // namespace
}  // namespace hvda

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
