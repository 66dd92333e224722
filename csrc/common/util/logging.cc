#include "common/util/logging.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace hvda {

LogLevel ParseLogLevel(const std::string& s) {
  std::string u;
  for (char c : s) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (u == "TRACE") return LogLevel::kTrace;
  if (u == "DEBUG") return LogLevel::kDebug;
  if (u == "INFO") return LogLevel::kInfo;
  if (u == "ERROR") return LogLevel::kError;
  if (u == "FATAL") return LogLevel::kFatal;
  return LogLevel::kWarning;
}

void Logger::Log(LogLevel l, const std::string& msg) const {
  if (!Enabled(l)) return;
  static const char* kNames[] = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
  std::string line;
  if (!hide_time_) {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
    line += "[";
    line += buf;
    line += "] ";
  }
  line += "[horovod_accel " + std::string(kNames[static_cast<int>(l)]) + " rank " +
          std::to_string(rank_) + "] " + msg + "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace hvda
