// The few socket helpers the TCP mesh needs. Every socket is IPv4 TCP,
// non-blocking and close-on-exec; every wait is a poll() bounded by a
// Deadline, so nothing here can block longer than its caller allows.
// Failures return a status and leave a short reason in last_error() (the
// caller prefixes what it was doing).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "horovod_accel/plugin.h"

namespace example {

// A point in time a wait must not pass. In(seconds <= 0) never passes:
// plugin.h's "0 = no limit".
class Deadline {
 public:
  static Deadline In(double seconds);
  bool Passed() const;
  // poll()'s timeout: the milliseconds left (rounded up), -1 when none.
  int PollMillis() const;

 private:
  bool unlimited_ = true;
  std::chrono::steady_clock::time_point at_{};
};

// Opens a listening socket on an ephemeral port of every interface
// (INADDR_ANY). The caller owns *fd.
hvda_status Listen(int* fd, uint16_t* port);
// Accepts one connection; *peer_ip: the peer's address (host order).
hvda_status AcceptOne(int listener, const Deadline& deadline, int* fd, uint32_t* peer_ip);
// Connects to ip:port, retrying a refused or failed attempt until the
// deadline (the peer may not listen yet, or be restarting).
hvda_status ConnectTo(uint32_t ip, uint16_t port, const Deadline& deadline, int* fd);
// Sends / receives exactly `bytes`. A closed or reset connection is
// HVDA_REMOTE_ERROR, the deadline HVDA_TIMEOUT.
hvda_status SendAll(int fd, const void* data, size_t bytes, const Deadline& deadline);
hvda_status RecvAll(int fd, void* data, size_t bytes, const Deadline& deadline);
void CloseFd(int fd);  // ignores -1

std::string AddressText(uint32_t ip, uint16_t port);  // "10.0.0.5:41234"

// Fixed-width big-endian integers: the wire format of ids and hellos, the
// same on every host.
template <typename T>
void PutBigEndian(unsigned char* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out[i] = static_cast<unsigned char>(value >> (8 * (sizeof(T) - 1 - i)));
}
template <typename T>
T GetBigEndian(const unsigned char* in) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value = static_cast<T>((value << 8) | in[i]);
  return value;
}

}  // namespace example
