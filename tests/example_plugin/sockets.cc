// Socket helpers (sockets.h).
#include "sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include "plugin_state.h"

namespace example {

namespace {

hvda_status Errno(const char* what) {
  const int e = errno;
  const bool remote = e == ECONNRESET || e == EPIPE || e == ECONNABORTED || e == ENOTCONN;
  return Fail(remote ? HVDA_REMOTE_ERROR : HVDA_INTERNAL, std::string(what) + ": " + std::strerror(e));
}

// Waits until fd is ready for `events`: HVDA_OK, or HVDA_TIMEOUT.
hvda_status WaitReady(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, deadline.PollMillis());
    if (n > 0) return HVDA_OK;  // ready, or an error the next call reports
    if (n == 0) return Fail(HVDA_TIMEOUT, "timed out");
    if (errno != EINTR) return Errno("poll");
  }
}

void Tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small hellos go at once
}

sockaddr_in SocketAddress(uint32_t ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip);
  a.sin_port = htons(port);
  return a;
}

}  // namespace

Deadline Deadline::In(double seconds) {
  Deadline d;
  if (seconds > 0) {
    d.unlimited_ = false;
    d.at_ = std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double>(seconds));
  }
  return d;
}

bool Deadline::Passed() const { return !unlimited_ && std::chrono::steady_clock::now() >= at_; }

int Deadline::PollMillis() const {
  if (unlimited_) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(at_ - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > INT_MAX ? INT_MAX : static_cast<int>(left.count());
}

hvda_status Listen(int* fd, uint16_t* port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return Errno("socket");
  sockaddr_in a = SocketAddress(INADDR_ANY, 0);  // port 0: the kernel picks one
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, SOMAXCONN) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    hvda_status st = Errno("opening a listening TCP socket");
    ::close(s);
    return st;
  }
  *fd = s;
  *port = ntohs(a.sin_port);
  return HVDA_OK;
}

hvda_status AcceptOne(int listener, const Deadline& deadline, int* fd, uint32_t* peer_ip) {
  for (;;) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    int s = ::accept4(listener, reinterpret_cast<sockaddr*>(&a), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (s >= 0) {
      Tune(s);
      *fd = s;
      *peer_ip = ntohl(a.sin_addr.s_addr);
      return HVDA_OK;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
      return Errno("accept");
    if (hvda_status st = WaitReady(listener, POLLIN, deadline)) return st;
  }
}

hvda_status ConnectTo(uint32_t ip, uint16_t port, const Deadline& deadline, int* fd) {
  const sockaddr_in a = SocketAddress(ip, port);
  for (;;) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return Errno("socket");
    int err = 0;
    if (::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      err = errno;
      if (err == EINPROGRESS) {  // wait for the handshake, then read its outcome
        if (hvda_status st = WaitReady(s, POLLOUT, deadline)) {
          ::close(s);
          return Fail(st, "connecting to " + AddressText(ip, port) + ": " + LastError());
        }
        socklen_t len = sizeof err;
        ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err == 0) {
      Tune(s);
      *fd = s;
      return HVDA_OK;
    }
    ::close(s);
    if (deadline.Passed())
      return Fail(HVDA_TIMEOUT, "connecting to " + AddressText(ip, port) + ": " + std::strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // then try again
  }
}

hvda_status SendAll(int fd, const void* data, size_t bytes, const Deadline& deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);  // a closed peer: EPIPE, not SIGPIPE
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (hvda_status st = WaitReady(fd, POLLOUT, deadline)) return st;
    } else {
      return Errno("send");
    }
  }
  return HVDA_OK;
}

hvda_status RecvAll(int fd, void* data, size_t bytes, const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n == 0) {
      return Fail(HVDA_REMOTE_ERROR, "the peer closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (hvda_status st = WaitReady(fd, POLLIN, deadline)) return st;
    } else {
      return Errno("recv");
    }
  }
  return HVDA_OK;
}

void CloseFd(int fd) {
  if (fd >= 0) ::close(fd);
}

std::string AddressText(uint32_t ip, uint16_t port) {
  char text[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = htonl(ip);
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return std::string(text) + ":" + std::to_string(port);
}

}  // namespace example
