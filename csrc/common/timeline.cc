#include "common/timeline.h"

#include <cerrno>
#include <cstring>

namespace hvda {
namespace {

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace

Timeline::~Timeline() {
  std::lock_guard<std::mutex> lock(mu_);
  CloseLocked();
}

bool Timeline::Start(const std::string& path, bool mark_cycles, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  CloseLocked();
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    *error = "cannot open timeline file '" + path + "': " + std::strerror(errno);
    return false;
  }
  mark_cycles_ = mark_cycles;
  first_record_ = true;
  pids_.clear();
  negotiating_.clear();
  open_.clear();
  start_ = std::chrono::steady_clock::now();
  auto since_epoch = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  std::fputs("[\n", file_);
  WriteLocked(std::string(R"({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": )"
                          R"("horovod_accel", "start_time_since_epoch_in_micros": )") +
              std::to_string(since_epoch) + "}}");
  enabled_ = true;
  return true;
}

void Timeline::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  CloseLocked();
}

void Timeline::CloseLocked() {
  enabled_ = false;
  if (file_ == nullptr) return;
  const std::string now = std::to_string(NowMicros());
  for (const auto& kv : open_)
    for (int i = 0; i < kv.second; ++i)
      WriteLocked(R"({"ph": "E", "ts": )" + now + ", \"pid\": " + std::to_string(kv.first) +
                  ", \"tid\": 0}");
  open_.clear();
  negotiating_.clear();
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

int64_t Timeline::NowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start_)
      .count();
}

void Timeline::WriteLocked(const std::string& record) {
  if (!first_record_) std::fputs(",\n", file_);
  first_record_ = false;
  std::fputs(record.c_str(), file_);
}

void Timeline::BeginLocked(int pid, const std::string& record) {
  WriteLocked(record);
  ++open_[pid];
}

void Timeline::EndLocked(const std::string& tensor, const std::string& args) {
  auto known = pids_.find(tensor);
  if (known == pids_.end()) return;
  const int pid = known->second;
  auto it = open_.find(pid);
  if (it == open_.end()) return;
  if (--it->second == 0) open_.erase(it);
  WriteLocked(R"({"ph": "E", "ts": )" + std::to_string(NowMicros()) + ", \"pid\": " +
              std::to_string(pid) + ", \"tid\": 0" + args + "}");
}

int Timeline::PidLocked(const std::string& tensor) {
  auto it = pids_.find(tensor);
  if (it != pids_.end()) return it->second;
  int pid = static_cast<int>(pids_.size()) + 1;
  pids_[tensor] = pid;
  WriteLocked(R"({"name": "process_name", "ph": "M", "pid": )" + std::to_string(pid) +
              R"(, "args": {"name": ")" + JsonEscape(tensor) + "\"}}");
  WriteLocked(R"({"name": "process_sort_index", "ph": "M", "pid": )" + std::to_string(pid) +
              R"(, "args": {"sort_index": )" + std::to_string(pid) + "}}");
  return pid;
}

#define HVDA_TIMELINE_GUARD                \
  std::lock_guard<std::mutex> lock(mu_);   \
  if (file_ == nullptr) return

void Timeline::NegotiateStart(const std::string& tensor, RequestType type) {
  HVDA_TIMELINE_GUARD;
  if (!negotiating_.insert(tensor).second) return;
  int pid = PidLocked(tensor);
  BeginLocked(pid, R"({"name": "NEGOTIATE_)" + std::string(RequestTypeName(type)) +
                       R"(", "ph": "B", "ts": )" + std::to_string(NowMicros()) +
                       ", \"pid\": " + std::to_string(pid) + ", \"tid\": 0}");
}

void Timeline::NegotiateRankReady(const std::string& tensor, int rank) {
  HVDA_TIMELINE_GUARD;
  if (!negotiating_.count(tensor)) return;
  WriteLocked(R"({"name": ")" + std::to_string(rank) + R"(", "ph": "X", "ts": )" +
              std::to_string(NowMicros()) + ", \"dur\": 0, \"pid\": " +
              std::to_string(PidLocked(tensor)) + ", \"tid\": 0}");
}

void Timeline::NegotiateEnd(const std::string& tensor) {
  HVDA_TIMELINE_GUARD;
  if (!negotiating_.erase(tensor)) return;
  EndLocked(tensor, "");
}

void Timeline::OpStart(const std::string& tensor, ResponseType type) {
  HVDA_TIMELINE_GUARD;
  const int pid = PidLocked(tensor);
  BeginLocked(pid, R"({"name": ")" + std::string(ResponseTypeName(type)) + R"(", "ph": "B", "ts": )" +
                       std::to_string(NowMicros()) + ", \"pid\": " + std::to_string(pid) +
                       ", \"tid\": 0}");
}

void Timeline::ActivityStart(const std::string& tensor, const char* activity) {
  HVDA_TIMELINE_GUARD;
  const int pid = PidLocked(tensor);
  BeginLocked(pid, R"({"name": ")" + std::string(activity) + R"(", "ph": "B", "ts": )" +
                       std::to_string(NowMicros()) + ", \"pid\": " + std::to_string(pid) +
                       ", \"tid\": 0}");
}

void Timeline::ActivityEnd(const std::string& tensor) {
  HVDA_TIMELINE_GUARD;
  EndLocked(tensor, "");
}

void Timeline::OpEnd(const std::string& tensor, DataType dtype, const std::vector<int64_t>& shape) {
  HVDA_TIMELINE_GUARD;
  EndLocked(tensor, R"(, "args": {"dtype": ")" + std::string(DataTypeName(dtype)) +
                                  R"(", "shape": ")" + ShapeString(shape) + "\"}");
}

void Timeline::MarkCycleStart() {
  HVDA_TIMELINE_GUARD;
  if (!mark_cycles_) return;
  WriteLocked(R"({"name": "CYCLE_START", "ph": "i", "ts": )" + std::to_string(NowMicros()) +
              R"(, "pid": 0, "tid": 0, "s": "g"})");
  std::fflush(file_);
}

#undef HVDA_TIMELINE_GUARD

}  // namespace hvda
