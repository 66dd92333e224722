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
//
// Writer and Reader have one interface, so that each message's layout is
// spelled once (the Code* templates below) and serves both directions: every
// method returns false only when a Reader runs out of (or finds impossible)
// bytes; a Writer always succeeds.
class Writer {
 public:
  template <typename T>
  bool Pod(const T& v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return true;
  }
  bool Str(const std::string& s) {
    Pod<uint64_t>(s.size());
    buf_.append(s);
    return true;
  }
  bool Vec(const std::vector<int64_t>& v) {
    Pod<uint64_t>(v.size());
    if (!v.empty()) buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
    return true;
  }
  // u64 count, then each element through `each(element)`.
  template <typename T, typename Each>
  bool List(const std::vector<T>& v, Each each) {
    Pod<uint64_t>(v.size());
    for (const T& x : v) each(x);
    return true;
  }
  // One byte: bit i is the i-th flag (at most 8).
  template <typename... B>
  bool Flags(const B&... flags) {
    static_assert(sizeof...(B) <= 8, "one byte of flags");
    const bool values[] = {flags...};
    uint8_t byte = 0;
    for (size_t i = 0; i < sizeof...(B); ++i) byte |= static_cast<uint8_t>(values[i] ? 1u << i : 0);
    return Pod(byte);
  }
  std::string Take() { return std::move(buf_); }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <typename T>
  bool Pod(T& v) {
    if (pos_ + sizeof(T) > b_.size()) return false;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Str(std::string& s) {
    uint64_t n;
    if (!Pod(n) || n > b_.size() - pos_) return false;
    s.assign(b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Vec(std::vector<int64_t>& v) {
    uint64_t n;
    if (!Pod(n) || n > (b_.size() - pos_) / sizeof(int64_t)) return false;
    v.resize(n);
    if (n) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(int64_t));
    pos_ += n * sizeof(int64_t);
    return true;
  }
  // Every element takes at least one byte, so a count beyond the bytes left
  // is corrupt (and is refused before anything is allocated for it).
  template <typename T, typename Each>
  bool List(std::vector<T>& v, Each each) {
    uint64_t n;
    if (!Pod(n) || n > b_.size() - pos_) return false;
    v.resize(n);
    for (T& x : v)
      if (!each(x)) return false;
    return true;
  }
  template <typename... B>
  bool Flags(B&... flags) {
    uint8_t byte;
    if (!Pod(byte)) return false;
    bool* targets[] = {&flags...};
    for (size_t i = 0; i < sizeof...(B); ++i) *targets[i] = (byte >> i) & 1;
    return true;
  }
  bool Done() const { return pos_ == b_.size(); }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

// The layouts, each spelled once. C is Writer (with const messages) or
// Reader. The *List functions return nullptr, or the part that a Reader found
// truncated ("request list", "request", ...).
template <typename C, typename R>
bool CodeRequest(C& c, R& r) {
  return c.Pod(r.rank) && c.Pod(r.type) && c.Pod(r.dtype) && c.Pod(r.device) &&
         c.Pod(r.root_rank) && c.Pod(r.reduce_op) && c.Pod(r.prescale) && c.Pod(r.postscale) &&
         c.Str(r.name) && c.Vec(r.shape) && c.Vec(r.splits);
}

template <typename C, typename L>
const char* CodeRequestList(C& c, L& l) {
  const char* failed = "request list";
  const bool ok = c.Flags(l.shutdown, l.stuck) && c.List(l.requests, [&](auto& r) {
    failed = "request";
    return CodeRequest(c, r);
  });
  return ok ? nullptr : failed;
}

template <typename C, typename R>
bool CodeResponse(C& c, R& r) {
  return c.Pod(r.type) && c.List(r.names, [&](auto& n) { return c.Str(n); }) && c.Str(r.error) &&
         c.Pod(r.dtype) && c.Pod(r.device) && c.Pod(r.root_rank) && c.Pod(r.reduce_op) &&
         c.Pod(r.prescale) && c.Pod(r.postscale) &&
         c.List(r.shapes, [&](auto& s) { return c.Vec(s); }) && c.Vec(r.rank_dim0) &&
         c.Vec(r.splits_matrix) && c.Pod(r.last_joined_rank) && c.Vec(r.payload);
}

template <typename C, typename L>
const char* CodeResponseList(C& c, L& l) {
  const char* failed = "response list";
  // The tuned parameters are present only when the has_params flag says so.
  const bool ok = c.Flags(l.shutdown, l.all_stuck, l.has_params) && c.Pod(l.joined_count) &&
                  c.Vec(l.shutdown_ranks) &&
                  (!l.has_params ||
                   (c.Pod(l.params.fusion_threshold_bytes) && c.Pod(l.params.cycle_time_ms))) &&
                  c.List(l.responses, [&](auto& r) {
                    failed = "response";
                    return CodeResponse(c, r);
                  });
  return ok ? nullptr : failed;
}

// The status of a decode: `failed` from a Code* function, else whether every
// byte was used.
Status Finish(const Reader& rd, const char* failed, const char* list) {
  const char* what = failed != nullptr ? failed : rd.Done() ? nullptr : list;
  if (what == nullptr) return Status::OK();
  return Status::Unknown(std::string("corrupt ") + what + " received from a peer rank");
}

}  // namespace

std::string Serialize(const RequestList& l) {
  Writer w;
  CodeRequestList(w, l);
  return w.Take();
}

Status Deserialize(const std::string& bytes, RequestList* out) {
  Reader rd(bytes);
  return Finish(rd, CodeRequestList(rd, *out), "request list");
}

std::string Serialize(const ResponseList& l) {
  Writer w;
  CodeResponseList(w, l);
  return w.Take();
}

Status Deserialize(const std::string& bytes, ResponseList* out) {
  Reader rd(bytes);
  return Finish(rd, CodeResponseList(rd, *out), "response list");
}

}  // namespace hvda
