// TcpStore: see tcp_store.h for the contract and the wire protocol.
#include "common/store/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "common/store/wire_protocol.h"
#include "common/util/settings.h"

namespace hvda {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The protocol's constants and framing: the one table (wire_protocol.def).
using store_wire::EncodeFrame;
using store_wire::Frame;
using store_wire::kMagic;
using store_wire::kMaxFrame;
using store_wire::kOpGet;
using store_wire::kOpHello;
using store_wire::kOpSet;
using store_wire::kStOk;
using store_wire::kStRefused;
using store_wire::kStTimeout;
// Beyond this a Get waits without limit (avoids overflowing time arithmetic).
constexpr milliseconds kNoLimit = std::chrono::hours(24 * 365);
// Extra time a Get waits for the server's own TIMEOUT reply before giving up.
constexpr milliseconds kGetReplySlack(10000);

std::string Errno(int e) { return std::strerror(e); }

// Now + t, or "never" for t >= kNoLimit.
Clock::time_point DeadlineAfter(milliseconds t) {
  return t >= kNoLimit ? Clock::time_point::max() : Clock::now() + t;
}

// Milliseconds left until `deadline`, for poll(): -1 = no deadline.
int PollMs(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

// Waits until fd is ready for `events`; false with *err set on timeout/error.
bool WaitFd(int fd, short events, Clock::time_point deadline, std::string* err) {
  while (true) {
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, PollMs(deadline));
    if (n > 0) return true;
    if (n == 0) {
      *err = "timed out waiting for the store";
      return false;
    }
    if (errno != EINTR) {
      *err = Errno(errno);
      return false;
    }
  }
}

bool SendAll(int fd, const std::string& data, Clock::time_point deadline, std::string* err) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFd(fd, POLLOUT, deadline, err)) return false;
    } else if (n < 0 && errno != EINTR) {
      *err = Errno(errno);
      return false;
    }
  }
  return true;
}

bool RecvAll(int fd, char* buf, size_t len, Clock::time_point deadline, std::string* err) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = recv(fd, buf + got, len - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      *err = "the store closed the connection";
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitFd(fd, POLLIN, deadline, err)) return false;
    } else if (errno != EINTR) {
      *err = Errno(errno);
      return false;
    }
  }
  return true;
}

bool ReadFrame(int fd, Clock::time_point deadline, Frame* out, std::string* err) {
  char hdr[store_wire::kLengthBytes];
  if (!RecvAll(fd, hdr, sizeof(hdr), deadline, err)) return false;
  const uint32_t n = store_wire::DecodeLength(hdr);
  if (n == 0 || n > kMaxFrame) {
    *err = "malformed reply (frame of " + std::to_string(n) + " bytes)";
    return false;
  }
  std::string payload(n, '\0');
  if (!RecvAll(fd, &payload[0], n, deadline, err)) return false;
  std::string why;
  if (!store_wire::DecodePayload(payload, out, &why)) {
    *err = "malformed reply (" + why + ")";
    return false;
  }
  return true;
}

// One non-blocking connection attempt to any address of host:port.
int ConnectOnce(const std::string& host, int port, Clock::time_point deadline, std::string* err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    *err = std::string("cannot resolve the host name: ") + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      *err = Errno(errno);
      continue;
    }
    bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok && errno == EINPROGRESS && WaitFd(fd, POLLOUT, deadline, err)) {
      int so = 0;
      socklen_t len = sizeof(so);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
      ok = so == 0;
      if (!ok) *err = Errno(so);
    } else if (!ok && errno != EINPROGRESS) {
      *err = Errno(errno);
    }
    if (!ok) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

class TcpStore : public Store {
 public:
  TcpStore(std::string host, int port, std::string secret, milliseconds timeout)
      : host_(std::move(host)), port_(port), secret_(std::move(secret)), timeout_(timeout) {}

  ~TcpStore() override {
    for (int fd : idle_) close(fd);
  }

  // Opens and authenticates one connection, retrying until `deadline`.
  Status Dial(Clock::time_point deadline, int* out) {
    std::string err;
    auto delay = milliseconds(20);
    int fd = -1;
    while ((fd = ConnectOnce(host_, port_, deadline, &err)) < 0) {
      if (Clock::now() + delay >= deadline)
        return Status::Timeout("could not reach the horovodrun rendezvous store at " + Where() +
                               ": " + err + "; was this process started by horovodrun?");
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, milliseconds(500));
    }
    Frame reply;
    if (!SendAll(fd, EncodeFrame(kOpHello, {kMagic, secret_}), deadline, &err) ||
        !ReadFrame(fd, deadline, &reply, &err)) {
      close(fd);
      return Status::Aborted("the horovodrun rendezvous store at " + Where() +
                             " did not complete the handshake: " + err);
    }
    if (reply.code != kStOk) {
      close(fd);
      std::string why = reply.fields.empty() ? "no reason given" : reply.fields[0];
      if (reply.code == kStRefused)
        return Status::Aborted("rendezvous store at " + Where() + " refused this process: " + why);
      return Status::Aborted("rendezvous store at " + Where() + " answered the handshake with "
                             "unexpected code " + std::to_string(reply.code));
    }
    *out = fd;
    return Status::OK();
  }

  Status Set(const std::string& key, const std::string& value) override {
    Frame reply;
    HVDA_RETURN_IF_ERROR(Call(EncodeFrame(kOpSet, {key, value}), DeadlineAfter(timeout_), &reply));
    return Expect(reply, "SET '" + key + "'");
  }

  Status Get(const std::string& key, std::string* value, milliseconds timeout) override {
    const bool unlimited = timeout >= kNoLimit;
    const int64_t ms = unlimited ? -1 : std::max<int64_t>(0, timeout.count());
    const auto deadline = DeadlineAfter(unlimited ? kNoLimit : milliseconds(ms) + kGetReplySlack);
    Frame reply;
    HVDA_RETURN_IF_ERROR(Call(EncodeFrame(kOpGet, {key, std::to_string(ms)}), deadline, &reply));
    if (reply.code == kStTimeout)
      return Status::Timeout("rendezvous store key '" + key + "' was not set within " +
                             std::to_string(ms) + " ms");
    HVDA_RETURN_IF_ERROR(Expect(reply, "GET '" + key + "'"));
    if (reply.fields.size() != 1) return Status::Unknown("malformed GET reply from the store");
    *value = std::move(reply.fields[0]);
    return Status::OK();
  }

  void AddIdle(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(fd);
  }

 private:
  std::string Where() const { return host_ + ":" + std::to_string(port_); }

  Status Expect(const Frame& reply, const std::string& what) {
    if (reply.code == kStOk) return Status::OK();
    std::string msg = reply.fields.empty() ? "" : ": " + reply.fields[0];
    return Status::Unknown("rendezvous store rejected " + what + msg);
  }

  // Sends one request on an idle (or new) connection and reads its reply.
  // A connection that fails mid-call is closed, never reused.
  Status Call(const std::string& request, Clock::time_point deadline, Frame* reply) {
    int fd = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        fd = idle_.back();
        idle_.pop_back();
      }
    }
    if (fd < 0) HVDA_RETURN_IF_ERROR(Dial(DeadlineAfter(timeout_), &fd));
    std::string err;
    if (!SendAll(fd, request, deadline, &err) || !ReadFrame(fd, deadline, reply, &err)) {
      close(fd);
      return Status::Aborted("lost the connection to the horovodrun rendezvous store at " +
                             Where() + ": " + err + " (did horovodrun exit?)");
    }
    AddIdle(fd);
    return Status::OK();
  }

  const std::string host_;
  const int port_;
  const std::string secret_;
  const milliseconds timeout_;
  std::mutex mu_;          // guards idle_
  std::vector<int> idle_;  // authenticated connections with no call in flight
};

}  // namespace

Status ConnectTcpStore(const std::string& host, int port, const std::string& secret,
                       std::chrono::milliseconds timeout, std::unique_ptr<Store>* out) {
  if (host.empty() || port <= 0 || port > 65535)
    return Status::InvalidArgument("invalid rendezvous store address '" + host + ":" +
                                   std::to_string(port) + "' (" + setting_env::store_addr +
                                   "/PORT)");
  auto store = std::make_unique<TcpStore>(host, port, secret, timeout);
  int fd = -1;
  HVDA_RETURN_IF_ERROR(store->Dial(DeadlineAfter(timeout), &fd));
  store->AddIdle(fd);
  *out = std::move(store);
  return Status::OK();
}

}  // namespace hvda
