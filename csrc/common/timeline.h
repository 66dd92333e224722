// Timeline: a Chrome-trace JSON file of what the background thread did, with
// upstream Horovod's activity names (NEGOTIATE_ALLREDUCE, ALLREDUCE,
// MEMCPY_IN_FUSION_BUFFER, ...). Written by global rank 0 only.
//
// Thread-safety: Start/Stop come from framework threads, events from the
// background thread; one mutex serialises them. The file is valid JSON after
// Stop (and at shutdown).
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/message.h"

namespace hvda {

class Timeline {
 public:
  ~Timeline();
  // Opens (truncates) path and starts recording. Replaces a running file.
  bool Start(const std::string& path, bool mark_cycles, std::string* error);
  // Closes the file as valid JSON with every begun activity ended: a
  // negotiation or op that other threads are still running when the
  // timeline stops gets its end event now, and its later end is dropped
  // (the file never depends on how the stop raced with the cycles).
  void Stop();
  bool enabled() const { return enabled_; }  // racy read is fine: a hint

  void NegotiateStart(const std::string& tensor, RequestType type);
  void NegotiateRankReady(const std::string& tensor, int rank);
  void NegotiateEnd(const std::string& tensor);
  void OpStart(const std::string& tensor, ResponseType type);
  void ActivityStart(const std::string& tensor, const char* activity);
  void ActivityEnd(const std::string& tensor);
  void OpEnd(const std::string& tensor, DataType dtype, const std::vector<int64_t>& shape);
  void MarkCycleStart();

 private:
  int64_t NowMicros() const;
  int PidLocked(const std::string& tensor);
  void WriteLocked(const std::string& record);
  // A "B" event for pid / the "E" event closing the latest open one of
  // tensor's pid (`args`: extra JSON fields); an end without an open begin in
  // this file (begun before Start) writes nothing.
  void BeginLocked(int pid, const std::string& record);
  void EndLocked(const std::string& tensor, const std::string& args);
  void CloseLocked();

  std::mutex mu_;
  volatile bool enabled_ = false;
  bool mark_cycles_ = false;
  std::FILE* file_ = nullptr;
  bool first_record_ = true;
  std::chrono::steady_clock::time_point start_;
  std::unordered_map<std::string, int> pids_;
  std::unordered_set<std::string> negotiating_;
  std::unordered_map<int, int> open_;  // pid -> begun, not yet ended activities
};

}  // namespace hvda
