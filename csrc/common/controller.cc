#include "common/controller.h"

#include <algorithm>

#include "common/fusion.h"

namespace hvda {
namespace {

constexpr uint64_t kNoShutdownBit = 1;
constexpr uint64_t kNoUncachedBit = 2;
constexpr uint64_t kIdleBit = 4;
constexpr uint64_t kStuckBit = 8;
// Cleared by the rank that has tuned parameters to send: forces the slow
// path, whose broadcast carries them (NOTE [Autotune sync]).
constexpr uint64_t kNoParamsBit = 16;

}  // namespace

Controller::Controller(ControllerTransport* transport, ControllerOptions options,
                       std::vector<int> global_ranks, const Logger* log, Timeline* timeline)
    : transport_(transport),
      options_(options),
      global_ranks_(std::move(global_ranks)),
      timeline_(transport->rank() == 0 ? timeline : nullptr),
      cache_(options.cache_capacity) {
  if (transport_->rank() == 0)
    coordinator_ = std::make_unique<Coordinator>(options.process_set_id, transport_->size(),
                                                 global_ranks_, options.stall,
                                                 log, timeline_);
}

void Controller::Answered(const std::string& name, Request* local) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->request.name == name) {
      if (local) *local = std::move(it->request);
      pending_.erase(it);
      return;
    }
  }
}

bool Controller::has_unsent() const {
  for (const auto& p : pending_)
    if (!p.sent) return true;
  return false;
}

Status Controller::ComputeResponseList(std::vector<Request> new_requests,
                                       bool shutdown_requested, ResponseList* out,
                                       bool locally_idle, bool stuck, bool deadlock_end) {
  all_idle_ = false;
  all_stuck_ = false;
  auto now = std::chrono::steady_clock::now();
  for (auto& r : new_requests) {
    if (timeline_ && r.type != RequestType::kJoin) timeline_->NegotiateStart(r.name, r.type);
    pending_.push_back(Pending{std::move(r), false, now});
  }
  out->responses.clear();
  out->shutdown = false;
  out->deadlock_declared = false;
  out->deadlock_end = false;

  const bool new_params = options_.drives_autotune && coordinator_ && options_.tunables &&
                          options_.tunables->HasUpdate();
  const bool use_cache = cache_.capacity() > 0 && joined_count_ == 0;
  std::vector<Request> to_send;
  if (!use_cache) {
    for (auto& p : pending_) {
      if (p.sent) continue;
      p.sent = true;
      to_send.push_back(p.request);
    }
    HVDA_RETURN_IF_ERROR(
        SlowPath(std::move(to_send), shutdown_requested, deadlock_end, stuck, new_params, out));
    const std::vector<Response> decided = std::move(out->responses);
    Finish({}, decided, out);
    return Status::OK();
  }

  const size_t words = (cache_.capacity() + 63) / 64;
  std::vector<uint64_t> bits(1 + 2 * words, 0);
  uint64_t* hit = bits.data() + 1;
  uint64_t* valid = hit + words;
  std::fill(valid, valid + words, ~0ULL);
  bool has_uncached = false;
  for (auto& p : pending_) {
    p.hit_slot = -1;
    if (p.sent) continue;
    uint32_t slot = 0;
    ResponseCache::Lookup l = cache_.Find(p.request, &slot);
    bool waited_too_long =
        std::chrono::duration<double>(now - p.since).count() > options_.hit_requeue_seconds;
    if (l == ResponseCache::Lookup::kHit && !waited_too_long) {
      hit[slot / 64] |= 1ULL << (slot % 64);
      p.hit_slot = slot;
      continue;
    }
    if (l != ResponseCache::Lookup::kMiss) valid[slot / 64] &= ~(1ULL << (slot % 64));
    p.sent = true;
    to_send.push_back(p.request);
    has_uncached = true;
  }
  // The coordinator re-examines waiting tensors (stalls) at least once a second.
  if (coordinator_ && coordinator_->HasWaiting() &&
      now - last_slow_path_ > std::chrono::seconds(1))
    has_uncached = true;
  bits[0] = (shutdown_requested || deadlock_end ? 0 : kNoShutdownBit) |
            (has_uncached ? 0 : kNoUncachedBit) |
            (locally_idle && pending_.empty() ? kIdleBit : 0) | (stuck ? kStuckBit : 0) |
            (new_params ? 0 : kNoParamsBit);
  HVDA_RETURN_IF_ERROR(transport_->BitAnd(&bits));
  all_idle_ = (bits[0] & kIdleBit) != 0;
  all_stuck_ = (bits[0] & kStuckBit) != 0;

  // Invalidated entries go on every rank, in slot order (NOTE [Identical caches]).
  // Set bits are visited lowest first (ctz), so slot order holds.
  for (size_t w = 0; w < words; ++w)
    for (uint64_t gone = ~valid[w]; gone != 0; gone &= gone - 1)
      cache_.Erase(static_cast<uint32_t>(w * 64 + __builtin_ctzll(gone)));
  // Borrowed from the cache: valid until the next Put (only the slow path
  // puts, and it copies them first).
  std::vector<const Response*> hits;
  size_t hit_count = 0;
  for (size_t w = 0; w < words; ++w) hit_count += __builtin_popcountll(hit[w] & valid[w]);
  hits.reserve(hit_count);
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t common = hit[w] & valid[w]; common != 0; common &= common - 1) {
      const Response& resp = cache_.Touch(static_cast<uint32_t>(w * 64 + __builtin_ctzll(common)));
      if (timeline_) timeline_->NegotiateEnd(resp.names[0]);
      hits.push_back(&resp);
    }
  }
  // The hits executed now leave the pending list in one pass (a slot holds
  // one name, and a name is pending at most once).
  if (!hits.empty()) {
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](const Pending& p) {
                                    if (p.hit_slot < 0) return false;
                                    const uint64_t s = static_cast<uint64_t>(p.hit_slot);
                                    return ((hit[s / 64] & valid[s / 64]) >> (s % 64) & 1) != 0;
                                  }),
                   pending_.end());
  }
  const bool any_shutdown = !(bits[0] & kNoShutdownBit);
  const bool any_uncached = !(bits[0] & kNoUncachedBit);
  const bool any_params = !(bits[0] & kNoParamsBit);
  if (!any_shutdown && !any_uncached && !all_stuck_ && !any_params) {
    out->joined_count = joined_count_;
    Finish(std::move(hits), {}, out);
    return Status::OK();
  }
  std::vector<Response> hit_copies;  // the slow path's Puts may move the cache's
  hit_copies.reserve(hits.size());
  for (const Response* h : hits) hit_copies.push_back(*h);
  hits.clear();
  for (const Response& h : hit_copies) hits.push_back(&h);
  HVDA_RETURN_IF_ERROR(
      SlowPath(std::move(to_send), shutdown_requested, deadlock_end, stuck, new_params, out));
  const std::vector<Response> decided = std::move(out->responses);
  Finish(std::move(hits), decided, out);
  return Status::OK();
}

void Controller::Finish(std::vector<const Response*> parts, const std::vector<Response>& decided,
                        ResponseList* out) {
  for (const Response& r : decided) parts.push_back(&r);
  FuseResponses(parts,
                options_.tunables ? options_.tunables->fusion_threshold_bytes()
                                  : options_.fusion_threshold_bytes,
                &out->responses);
  if (options_.drives_autotune && coordinator_ && options_.tunables && !out->responses.empty())
    options_.tunables->Record(out->responses, std::chrono::steady_clock::now());
}

Status Controller::SlowPath(std::vector<Request> to_send, bool shutdown_requested,
                            bool deadlock_end, bool stuck, bool new_params, ResponseList* out) {
  last_slow_path_ = std::chrono::steady_clock::now();
  RequestList mine;
  mine.requests = std::move(to_send);
  mine.shutdown = shutdown_requested;
  mine.stuck = stuck;
  mine.deadlock_end = deadlock_end;
  std::vector<std::string> gathered;
  HVDA_RETURN_IF_ERROR(transport_->Gather(Serialize(mine), &gathered));
  std::string answer;
  if (coordinator_) {
    std::vector<RequestList> lists(gathered.size());
    for (size_t r = 0; r < gathered.size(); ++r)
      HVDA_RETURN_IF_ERROR(Deserialize(gathered[r], &lists[r]));
    ResponseList result = coordinator_->Process(lists);
    if (new_params) {
      result.has_params = true;
      result.params = options_.tunables->TakeUpdate();
    }
    answer = Serialize(result);
  }
  HVDA_RETURN_IF_ERROR(transport_->Broadcast(&answer));
  ResponseList decided;
  HVDA_RETURN_IF_ERROR(Deserialize(answer, &decided));
  // Every rank, this cycle, before fusing (NOTE [Autotune sync]).
  if (decided.has_params && options_.tunables) options_.tunables->Apply(decided.params);

  const bool cacheable = joined_count_ == 0 && decided.joined_count == 0;
  for (const Response& resp : decided.responses) {
    for (const std::string& name : resp.names) {
      Request local;
      local.name.clear();
      Answered(name, &local);
      if (cacheable && resp.type != ResponseType::kError && !local.name.empty())
        cache_.Put(resp, local);
    }
  }
  joined_count_ = decided.joined_count;
  all_stuck_ = decided.all_stuck;
  out->responses = std::move(decided.responses);
  out->shutdown = decided.shutdown;
  out->shutdown_ranks = std::move(decided.shutdown_ranks);
  out->deadlock_declared = decided.deadlock_declared;
  out->deadlock_end = decided.deadlock_end;
  out->joined_count = joined_count_;
  return Status::OK();
}

}  // namespace hvda
