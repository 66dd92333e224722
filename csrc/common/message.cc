#include "common/message.h"

#include <cstring>

namespace hvda {

const char* RequestTypeName(RequestType t) {
  switch (t) {
    case RequestType::kAllreduce: return "ALLREDUCE";
    case RequestType::kAllgather: return "ALLGATHER";
    case RequestType::kBroadcast: return "BROADCAST";
    case RequestType::kJoin: return "JOIN";
    case RequestType::kAdasum: return "ADASUM";
    case RequestType::kAlltoall: return "ALLTOALL";
    case RequestType::kBarrier: return "BARRIER";
    case RequestType::kReducescatter: return "REDUCESCATTER";
    case RequestType::kAddProcessSet: return "ADD_PROCESS_SET";
    case RequestType::kRemoveProcessSet: return "REMOVE_PROCESS_SET";
  }
  return "UNKNOWN";
}

const char* RequestTypeOpName(RequestType t) {
  switch (t) {
    case RequestType::kAllreduce: return "allreduce";
    case RequestType::kAllgather: return "allgather";
    case RequestType::kBroadcast: return "broadcast";
    case RequestType::kJoin: return "join";
    case RequestType::kAdasum: return "adasum";
    case RequestType::kAlltoall: return "alltoall";
    case RequestType::kBarrier: return "barrier";
    case RequestType::kReducescatter: return "reducescatter";
    case RequestType::kAddProcessSet: return "add_process_set";
    case RequestType::kRemoveProcessSet: return "remove_process_set";
  }
  return "unknown";
}

const char* ResponseTypeName(ResponseType t) {
  if (t == ResponseType::kError) return "ERROR";
  return RequestTypeName(static_cast<RequestType>(t));
}

int64_t Response::TensorElements(size_t i) const {
  int64_t n = 1;
  for (int64_t d : shapes[i]) n *= d;
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

// Little-endian, native-layout encoding: every rank of a job runs the same
// build on the same architecture, so PODs are copied as bytes.
class Writer {
 public:
  template <typename T>
  void Pod(T v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void Str(const std::string& s) {
    Pod<uint64_t>(s.size());
    buf_.append(s);
  }
  void Vec(const std::vector<int64_t>& v) {
    Pod<uint64_t>(v.size());
    if (!v.empty()) buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
  }
  std::string Take() { return std::move(buf_); }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <typename T>
  bool Pod(T* v) {
    if (pos_ + sizeof(T) > b_.size()) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Str(std::string* s) {
    uint64_t n;
    if (!Pod(&n) || pos_ + n > b_.size()) return false;
    s->assign(b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Vec(std::vector<int64_t>* v) {
    uint64_t n;
    if (!Pod(&n) || pos_ + n * sizeof(int64_t) > b_.size()) return false;
    v->resize(n);
    if (n) std::memcpy(v->data(), b_.data() + pos_, n * sizeof(int64_t));
    pos_ += n * sizeof(int64_t);
    return true;
  }
  bool Done() const { return pos_ == b_.size(); }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

Status Corrupt(const char* what) {
  return Status::Unknown(std::string("corrupt ") + what + " received from a peer rank");
}

}  // namespace

std::string Serialize(const RequestList& l) {
  Writer w;
  w.Pod<uint8_t>((l.shutdown ? 1 : 0) | (l.stuck ? 2 : 0));
  w.Pod<uint64_t>(l.requests.size());
  for (const auto& r : l.requests) {
    w.Pod(r.rank);
    w.Pod(r.type);
    w.Pod(r.dtype);
    w.Pod(r.device);
    w.Pod(r.root_rank);
    w.Pod(r.reduce_op);
    w.Pod(r.prescale);
    w.Pod(r.postscale);
    w.Str(r.name);
    w.Vec(r.shape);
    w.Vec(r.splits);
  }
  return w.Take();
}

Status Deserialize(const std::string& bytes, RequestList* out) {
  Reader rd(bytes);
  uint8_t shutdown;
  uint64_t n;
  if (!rd.Pod(&shutdown) || !rd.Pod(&n)) return Corrupt("request list");
  out->shutdown = (shutdown & 1) != 0;
  out->stuck = (shutdown & 2) != 0;
  out->requests.resize(n);
  for (auto& r : out->requests) {
    if (!rd.Pod(&r.rank) || !rd.Pod(&r.type) || !rd.Pod(&r.dtype) || !rd.Pod(&r.device) ||
        !rd.Pod(&r.root_rank) || !rd.Pod(&r.reduce_op) || !rd.Pod(&r.prescale) ||
        !rd.Pod(&r.postscale) || !rd.Str(&r.name) || !rd.Vec(&r.shape) || !rd.Vec(&r.splits))
      return Corrupt("request");
  }
  return rd.Done() ? Status::OK() : Corrupt("request list");
}

std::string Serialize(const ResponseList& l) {
  Writer w;
  w.Pod<uint8_t>((l.shutdown ? 1 : 0) | (l.all_stuck ? 2 : 0) | (l.has_params ? 4 : 0));
  w.Pod(l.joined_count);
  w.Vec(l.shutdown_ranks);
  if (l.has_params) {
    w.Pod(l.params.fusion_threshold_bytes);
    w.Pod(l.params.cycle_time_ms);
  }
  w.Pod<uint64_t>(l.responses.size());
  for (const auto& r : l.responses) {
    w.Pod(r.type);
    w.Pod<uint64_t>(r.names.size());
    for (const auto& n : r.names) w.Str(n);
    w.Str(r.error);
    w.Pod(r.dtype);
    w.Pod(r.device);
    w.Pod(r.root_rank);
    w.Pod(r.reduce_op);
    w.Pod(r.prescale);
    w.Pod(r.postscale);
    w.Pod<uint64_t>(r.shapes.size());
    for (const auto& s : r.shapes) w.Vec(s);
    w.Vec(r.rank_dim0);
    w.Vec(r.splits_matrix);
    w.Pod(r.last_joined_rank);
    w.Vec(r.payload);
  }
  return w.Take();
}

Status Deserialize(const std::string& bytes, ResponseList* out) {
  Reader rd(bytes);
  uint8_t shutdown;
  uint64_t n;
  if (!rd.Pod(&shutdown) || !rd.Pod(&out->joined_count) || !rd.Vec(&out->shutdown_ranks))
    return Corrupt("response list");
  out->shutdown = (shutdown & 1) != 0;
  out->all_stuck = (shutdown & 2) != 0;
  out->has_params = (shutdown & 4) != 0;
  if (out->has_params &&
      (!rd.Pod(&out->params.fusion_threshold_bytes) || !rd.Pod(&out->params.cycle_time_ms)))
    return Corrupt("response list");
  if (!rd.Pod(&n)) return Corrupt("response list");
  out->responses.resize(n);
  for (auto& r : out->responses) {
    uint64_t names, shapes;
    if (!rd.Pod(&r.type) || !rd.Pod(&names)) return Corrupt("response");
    r.names.resize(names);
    for (auto& s : r.names)
      if (!rd.Str(&s)) return Corrupt("response");
    if (!rd.Str(&r.error) || !rd.Pod(&r.dtype) || !rd.Pod(&r.device) || !rd.Pod(&r.root_rank) ||
        !rd.Pod(&r.reduce_op) || !rd.Pod(&r.prescale) || !rd.Pod(&r.postscale) || !rd.Pod(&shapes))
      return Corrupt("response");
    r.shapes.resize(shapes);
    for (auto& s : r.shapes)
      if (!rd.Vec(&s)) return Corrupt("response");
    if (!rd.Vec(&r.rank_dim0) || !rd.Vec(&r.splits_matrix) || !rd.Pod(&r.last_joined_rank) ||
        !rd.Vec(&r.payload))
      return Corrupt("response");
  }
  return rd.Done() ? Status::OK() : Corrupt("response list");
}

}  // namespace hvda
