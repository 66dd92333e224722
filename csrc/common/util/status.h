// Status: the error type of the C++ core. No exception crosses the
// background thread or the plugin boundary; functions return a Status.
#pragma once

#include <string>
#include <utility>

namespace hvda {

enum class StatusCode : int {
  kOk = 0,
  kUnknown = 1,
  kPrecondition = 2,     // cross-rank mismatch found during negotiation
  kAborted = 3,          // runtime shut down or a peer failed
  kInvalidArgument = 4,  // caller's fault, detectable locally
  kTimeout = 5,
  kUnavailable = 6,      // a library, device or plugin is missing here
  kUnimplemented = 7,    // a valid request this build does not offer (reducescatter with
                         // Adasum, ...): NotImplementedError in Python, a RuntimeError
                         // as upstream's callers expect
};

class Status {
 public:
  Status() = default;
  static Status OK() { return Status(); }
  static Status Unknown(std::string m) { return Status(StatusCode::kUnknown, std::move(m)); }
  static Status Precondition(std::string m) { return Status(StatusCode::kPrecondition, std::move(m)); }
  static Status Aborted(std::string m) { return Status(StatusCode::kAborted, std::move(m)); }
  static Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
  static Status Timeout(std::string m) { return Status(StatusCode::kTimeout, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
  static Status Unimplemented(std::string m) {
    return Status(StatusCode::kUnimplemented, std::move(m));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& reason() const { return reason_; }
  // The same status with `prefix` put before the reason (OK stays OK).
  Status WithPrefix(const std::string& prefix) const {
    return ok() ? *this : Status(code_, prefix + reason_);
  }
  // The same status with `suffix` put after the reason (OK stays OK).
  Status WithSuffix(const std::string& suffix) const {
    return ok() ? *this : Status(code_, reason_ + suffix);
  }

 private:
  Status(StatusCode c, std::string m) : code_(c), reason_(std::move(m)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string reason_;
};

}  // namespace hvda

// Propagates a non-OK Status to the caller.
#define HVDA_RETURN_IF_ERROR(expr)        \
  do {                                    \
    ::hvda::Status _hvda_st = (expr);     \
    if (!_hvda_st.ok()) return _hvda_st;  \
  } while (0)
