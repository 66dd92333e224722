#include "common/message.h"

#include <cstring>
#include <iterator>
#include <type_traits>

namespace hvda {

namespace {

// The names of each RequestType, indexed by its value: {for timelines and
// logs, for messages to users}.
constexpr const char* kRequestTypeNames[][2] = {
    {"ALLREDUCE", "allreduce"},         {"ALLGATHER", "allgather"},
    {"BROADCAST", "broadcast"},         {"JOIN", "join"},
    {"ADASUM", "adasum"},               {"ALLTOALL", "alltoall"},
    {"BARRIER", "barrier"},             {"REDUCESCATTER", "reducescatter"},
    {"ADD_PROCESS_SET", "add_process_set"}, {"REMOVE_PROCESS_SET", "remove_process_set"},
};
static_assert(std::size(kRequestTypeNames) ==
                  static_cast<size_t>(RequestType::kRemoveProcessSet) + 1,
              "one entry per RequestType, in value order");

// kRequestTypeNames[t][form], or the unknown-type name of that form.
const char* TypeName(RequestType t, int form) {
  const auto i = static_cast<size_t>(t);
  if (i >= std::size(kRequestTypeNames)) return form == 0 ? "UNKNOWN" : "unknown";
  return kRequestTypeNames[i][form];
}

}  // namespace

const char* RequestTypeName(RequestType t) { return TypeName(t, 0); }

const char* RequestTypeOpName(RequestType t) { return TypeName(t, 1); }

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
// Reader. The CodeList overloads return nullptr, or the part that a Reader
// found truncated ("request list", "request", ...).

// T for a Reader (it fills the message), const T for a Writer.
template <typename C, typename T>
using Msg = std::conditional_t<std::is_same_v<C, Writer>, const T, T>;

template <typename C, typename R>
bool CodeRequest(C& c, R& r) {
  return c.Pod(r.rank) && c.Pod(r.type) && c.Pod(r.dtype) && c.Pod(r.device) &&
         c.Pod(r.root_rank) && c.Pod(r.reduce_op) && c.Pod(r.prescale) && c.Pod(r.postscale) &&
         c.Str(r.name) && c.Vec(r.shape) && c.Vec(r.splits);
}

template <typename C>
const char* CodeList(C& c, Msg<C, RequestList>& l) {
  const char* failed = "request list";
  const bool ok =
      c.Flags(l.shutdown, l.stuck, l.deadlock_end) && c.List(l.requests, [&](auto& r) {
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

template <typename C>
const char* CodeList(C& c, Msg<C, ResponseList>& l) {
  const char* failed = "response list";
  // The tuned parameters are present only when the has_params flag says so.
  const bool ok = c.Flags(l.shutdown, l.all_stuck, l.has_params, l.deadlock_declared,
                          l.deadlock_end) &&
                  c.Pod(l.joined_count) && c.Vec(l.shutdown_ranks) &&
                  (!l.has_params ||
                   (c.Pod(l.params.fusion_threshold_bytes) && c.Pod(l.params.cycle_time_ms))) &&
                  c.List(l.responses, [&](auto& r) {
                    failed = "response";
                    return CodeResponse(c, r);
                  });
  return ok ? nullptr : failed;
}

template <typename L>
std::string Encode(const L& l) {
  Writer w;
  CodeList(w, l);
  return w.Take();
}

// Decodes all of `bytes` into *out; `list` names the message in errors.
template <typename L>
Status Decode(const std::string& bytes, L* out, const char* list) {
  Reader rd(bytes);
  const char* failed = CodeList(rd, *out);
  if (failed == nullptr && !rd.Done()) failed = list;
  if (failed == nullptr) return Status::OK();
  return Status::Unknown(std::string("corrupt ") + failed + " received from a peer rank");
}

}  // namespace

std::string Serialize(const RequestList& l) { return Encode(l); }

Status Deserialize(const std::string& bytes, RequestList* out) {
  return Decode(bytes, out, "request list");
}

std::string Serialize(const ResponseList& l) { return Encode(l); }

Status Deserialize(const std::string& bytes, ResponseList* out) {
  return Decode(bytes, out, "response list");
}

}  // namespace hvda
