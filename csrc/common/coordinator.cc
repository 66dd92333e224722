#include "common/coordinator.h"

#include <algorithm>
#include <sstream>

#include "common/util/settings.h"

namespace hvda {

Coordinator::Coordinator(int set_id, int size, std::vector<int> global_ranks, StallOptions stall,
                         const Logger* log, Timeline* timeline)
    : set_id_(set_id),
      size_(size),
      global_ranks_(std::move(global_ranks)),
      stall_(stall),
      log_(log),
      timeline_(timeline),
      last_stall_check_(std::chrono::steady_clock::now()) {}

std::string Coordinator::RankList(const std::vector<int>& set_ranks) const {
  std::string s = "[";
  for (size_t i = 0; i < set_ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(global_ranks_[set_ranks[i]]);
  }
  return s + "]";
}

void Coordinator::Add(const Request& r) {
  auto it = table_.find(r.name);
  if (it == table_.end()) {
    it = table_.emplace(r.name, Entry()).first;
    it->second.first_seen = std::chrono::steady_clock::now();
    order_.push_back(r.name);
    if (timeline_) timeline_->NegotiateStart(r.name, r.type);
  }
  it->second.requests.push_back(r);
  it->second.ranks.insert(r.rank);
  if (timeline_) timeline_->NegotiateRankReady(r.name, global_ranks_[r.rank]);
}

bool Coordinator::Ready(const Entry& e) const {
  for (int r = 0; r < size_; ++r)
    if (!e.ranks.count(r) && !joined_.count(r)) return false;
  return true;
}

ResponseList Coordinator::Process(const std::vector<RequestList>& lists) {
  ResponseList out;
  out.all_stuck = static_cast<int>(lists.size()) == size_;
  for (size_t r = 0; r < lists.size(); ++r) {
    const RequestList& l = lists[r];
    out.all_stuck &= l.stuck;
    if (l.shutdown) out.shutdown_ranks.push_back(global_ranks_[r]);
    out.shutdown |= l.shutdown || l.deadlock_end;
    out.deadlock_end |= l.deadlock_end;
    for (const auto& r : l.requests) {
      if (r.type == RequestType::kJoin) {
        joined_.insert(r.rank);
        last_joined_ = r.rank;
      } else {
        Add(r);
      }
    }
  }
  // Readiness in first-seen order; a new join may release older tensors.
  std::vector<std::string> still;
  for (const auto& name : order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    if (!Ready(it->second)) {
      still.push_back(name);
      continue;
    }
    out.responses.push_back(Construct(name, it->second));
    if (timeline_) timeline_->NegotiateEnd(name);
    table_.erase(it);
  }
  order_.swap(still);
  if (out.all_stuck && stall_.deadlock_seconds > 0 && !table_.empty()) FailDeadlocked(&out);
  if (!joined_.empty() && static_cast<int>(joined_.size()) == size_) {
    Response j;
    j.type = ResponseType::kJoin;
    j.names = {"__join__"};
    j.last_joined_rank = global_ranks_[last_joined_];
    out.responses.push_back(j);
    joined_.clear();
  }
  out.joined_count = static_cast<int32_t>(joined_.size());
  if (InspectStalls(&out)) out.shutdown = true;
  return out;
}

std::string Coordinator::Validate(const std::string& name,
                                  const std::vector<Request>& by_rank) const {
  const Request& a = by_rank.front();
  const std::string g0 = std::to_string(global_ranks_[a.rank]);
  std::ostringstream m;
  for (const Request& b : by_rank) {
    const std::string g = std::to_string(global_ranks_[b.rank]);
    if (b.type != a.type) {
      m << "Mismatched collective operations for tensor '" << name << "': rank " << g0
        << " called " << RequestTypeOpName(a.type) << " but rank " << g << " called "
        << RequestTypeOpName(b.type) << ". Every rank must run the same operation for a name.";
      return m.str();
    }
    if (b.dtype != a.dtype) {
      m << "Mismatched data types for tensor '" << name << "': rank " << g0 << " has "
        << DataTypeName(a.dtype) << ", rank " << g << " has " << DataTypeName(b.dtype) << ".";
      return m.str();
    }
    if ((b.device < 0) != (a.device < 0)) {  // indices may differ (one device per rank)
      auto dev = [](int d) { return d < 0 ? std::string("CPU") : "device " + std::to_string(d); };
      m << "Mismatched devices for tensor '" << name << "': rank " << g0 << " is on "
        << dev(a.device) << ", rank " << g << " is on " << dev(b.device)
        << ". Every rank must pass a tensor of the same kind of device.";
      return m.str();
    }
    bool same_shape_required = a.type == RequestType::kAllreduce ||
                               a.type == RequestType::kAdasum ||
                               a.type == RequestType::kBroadcast ||
                               a.type == RequestType::kReducescatter ||
                               a.type == RequestType::kBarrier ||
                               a.type == RequestType::kAddProcessSet ||
                               a.type == RequestType::kRemoveProcessSet;
    if (same_shape_required && b.shape != a.shape) {
      const char* what = a.type == RequestType::kAddProcessSet ||
                                 a.type == RequestType::kRemoveProcessSet
                             ? "process set arguments"
                             : "tensor shapes";
      m << "Mismatched " << RequestTypeOpName(a.type) << " " << what << " for tensor '" << name
        << "': rank " << g0 << " has " << ShapeString(a.shape) << ", rank " << g << " has "
        << ShapeString(b.shape) << ".";
      return m.str();
    }
    if (!same_shape_required && (a.type == RequestType::kAllgather ||
                                 a.type == RequestType::kAlltoall)) {
      bool ok = a.shape.size() == b.shape.size() &&
                std::equal(a.shape.begin() + std::min<size_t>(1, a.shape.size()), a.shape.end(),
                           b.shape.begin() + std::min<size_t>(1, b.shape.size()));
      if (!ok) {
        m << "Mismatched " << RequestTypeOpName(a.type) << " tensor shapes for tensor '" << name
          << "': rank " << g0 << " has " << ShapeString(a.shape) << ", rank " << g << " has "
          << ShapeString(b.shape) << "; all dimensions except the first must match.";
        return m.str();
      }
    }
    if (b.root_rank != a.root_rank) {
      m << "Mismatched broadcast root ranks for tensor '" << name << "': rank " << g0
        << " uses root " << global_ranks_[a.root_rank] << ", rank " << g << " uses root "
        << global_ranks_[b.root_rank] << ".";
      return m.str();
    }
    if (b.reduce_op != a.reduce_op) {
      m << "Mismatched reduction operations for tensor '" << name << "': rank " << g0 << " uses "
        << ReduceOpName(a.reduce_op) << ", rank " << g << " uses " << ReduceOpName(b.reduce_op)
        << ".";
      return m.str();
    }
    if (b.prescale != a.prescale || b.postscale != a.postscale) {
      m << "Mismatched prescale/postscale factors for tensor '" << name << "': rank " << g0
        << " uses " << a.prescale << "/" << a.postscale << ", rank " << g << " uses "
        << b.prescale << "/" << b.postscale << ".";
      return m.str();
    }
  }
  return "";
}

Response Coordinator::Construct(const std::string& name, Entry& e) const {
  std::vector<Request> by_rank = e.requests;
  std::sort(by_rank.begin(), by_rank.end(),
            [](const Request& x, const Request& y) { return x.rank < y.rank; });
  const Request& a = by_rank.front();
  Response r;
  r.names = {name};
  r.dtype = a.dtype;
  r.device = a.device;
  r.root_rank = a.root_rank;
  r.reduce_op = a.reduce_op;
  r.prescale = a.prescale;
  r.postscale = a.postscale;
  r.shapes = {a.shape};
  std::string error = Validate(name, by_rank);
  bool needs_all = a.type != RequestType::kAllreduce && a.type != RequestType::kAdasum;
  if (error.empty() && needs_all && !joined_.empty()) {
    std::vector<int> joined(joined_.begin(), joined_.end());
    error = std::string(RequestTypeOpName(a.type)) + " of tensor '" + name +
            "' cannot run while ranks " + RankList(joined) +
            " have called join(); only allreduce accepts joined ranks (they contribute zeros).";
  }
  if (!error.empty()) {
    r.type = ResponseType::kError;
    r.error = error;
    return r;
  }
  r.type = static_cast<ResponseType>(a.type);
  if (a.type == RequestType::kAllgather) {
    for (const auto& q : by_rank) r.rank_dim0.push_back(q.shape.empty() ? 0 : q.shape[0]);
  } else if (a.type == RequestType::kAlltoall) {
    for (const auto& q : by_rank) r.splits_matrix.insert(r.splits_matrix.end(), q.splits.begin(), q.splits.end());
  } else if (a.type == RequestType::kAddProcessSet || a.type == RequestType::kRemoveProcessSet) {
    r.payload = a.shape;
  }
  return r;
}

void Coordinator::FailDeadlocked(ResponseList* out) {
  std::vector<std::vector<std::string>> by_rank(size_);
  for (const auto& name : order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    for (int r : it->second.ranks) by_rank[r].push_back(name);
  }
  std::ostringstream pending;
  for (int r = 0; r < size_; ++r) {
    pending << (r ? "; " : "") << "rank " << global_ranks_[r] << ": ";
    if (joined_.count(r)) pending << "(joined) ";
    if (by_rank[r].empty()) pending << "nothing in this process set (it may wait in another)";
    for (size_t i = 0; i < by_rank[r].size(); ++i)
      pending << (i ? ", " : "") << "'" << by_rank[r][i] << "'";
  }
  std::ostringstream timeout;
  timeout << stall_.deadlock_seconds;
  const std::string message =
      "Deadlock detected: every rank has been blocked waiting for Horovod operations for more "
      "than " + timeout.str() + " s, and no pending collective of process set " +
      std::to_string(set_id_) + " was submitted by all of its ranks, so none can ever complete. Pending, per rank: " +
      pending.str() + ". Every rank must submit the same collectives (matched by name); look "
      "for rank-dependent control flow or names. (" + setting_env::deadlock_seconds +
      " sets the timeout; 0 disables this check.)";
  for (const auto& name : order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    Response err;
    err.type = ResponseType::kError;
    err.names = {name};
    err.error = "Tensor '" + name + "': " + message;
    out->responses.push_back(err);
    if (timeline_) timeline_->NegotiateEnd(name);
  }
  table_.clear();
  order_.clear();
  out->deadlock_declared = true;
  if (set_id_ == 0) {  // the global set ends the generation in this very cycle
    out->deadlock_end = true;
    out->shutdown = true;
  }
  if (log_) log_->Log(LogLevel::kError, message);
}

bool Coordinator::InspectStalls(ResponseList* out) {
  if (!stall_.enabled || table_.empty()) return false;
  auto now = std::chrono::steady_clock::now();
  if (now - last_stall_check_ < std::chrono::seconds(1)) return false;
  last_stall_check_ = now;
  bool shutdown = false;
  std::ostringstream report;
  for (auto& kv : table_) {
    Entry& e = kv.second;
    double waited = std::chrono::duration<double>(now - e.first_seen).count();
    if (waited < stall_.warning_seconds) continue;
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r)
      if (!e.ranks.count(r) && !joined_.count(r)) missing.push_back(r);
    if (!e.warned) {
      report << "\n  '" << kv.first << "' waiting " << static_cast<int>(waited)
             << " s; missing ranks: " << RankList(missing);
      e.warned = true;
    }
    if (stall_.shutdown_seconds > 0 && waited >= stall_.shutdown_seconds) {
      Response err;
      err.type = ResponseType::kError;
      err.names = {kv.first};
      err.error = "Tensor '" + kv.first + "' stalled for " + std::to_string(static_cast<int>(waited)) +
                  " s waiting for ranks " + RankList(missing) +
                  " (" + setting_env::stall_shutdown_seconds + " exceeded); shutting down.";
      out->responses.push_back(err);
      shutdown = true;
    }
  }
  std::string r = report.str();
  if (!r.empty() && log_)
    log_->Log(LogLevel::kWarning,
              "One or more tensors were submitted by a subset of ranks and are waiting for the "
              "others for more than " + std::to_string(static_cast<int>(stall_.warning_seconds)) +
              " s. Different ranks may be submitting different tensors, or only some ranks are "
              "submitting, which will deadlock:" + r);
  return shutdown;
}

}  // namespace hvda
