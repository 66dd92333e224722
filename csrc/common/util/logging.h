// Minimal leveled logging to stderr, prefixed with the rank. The level comes
// from the log_level setting (HOROVOD_LOG_LEVEL); a Logger is owned by the Runtime.
#pragma once

#include <string>

namespace hvda {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

LogLevel ParseLogLevel(const std::string& s);

class Logger {
 public:
  Logger() = default;
  Logger(LogLevel level, bool hide_time, int rank) : level_(level), hide_time_(hide_time), rank_(rank) {}
  bool Enabled(LogLevel l) const { return l >= level_; }
  // Thread-safe (one write per line).
  void Log(LogLevel l, const std::string& msg) const;

 private:
  LogLevel level_ = LogLevel::kWarning;
  bool hide_time_ = false;
  int rank_ = 0;
};

}  // namespace hvda
