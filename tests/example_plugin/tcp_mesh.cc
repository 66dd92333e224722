// The mesh's id format, Exchange and abort (tcp_mesh.h). Set-up is in
// mesh_setup.cc.
#include "tcp_mesh.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "plugin_state.h"
#include "sockets.h"

namespace example {

namespace {

constexpr char kIdMagic[8] = {'H', 'V', 'D', 'A', 'E', 'X', 'v', '1'};

// Per peer: the messages to move, in order, and how far each side got.
struct PeerQueue {
  std::vector<SendSpan> sends;
  std::vector<RecvSpan> recvs;
  size_t send_index = 0, send_offset = 0;
  size_t recv_index = 0, recv_offset = 0;
  bool sending() const { return send_index < sends.size(); }
  bool receiving() const { return recv_index < recvs.size(); }
};

bool WouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

}  // namespace

void EncodeMeshId(const MeshId& id, void* bytes) {
  unsigned char* b = static_cast<unsigned char*>(bytes);
  std::memset(b, 0, kMeshIdBytes);
  std::memcpy(b, kIdMagic, sizeof kIdMagic);
  PutBigEndian<uint32_t>(b + 8, id.ip);
  PutBigEndian<uint16_t>(b + 12, id.port);
  PutBigEndian<uint32_t>(b + 16, id.pid);
  PutBigEndian<uint64_t>(b + 24, id.nonce);
}

hvda_status DecodeMeshId(const void* bytes, size_t size, MeshId* id) {
  const unsigned char* b = static_cast<const unsigned char*>(bytes);
  if (b == nullptr || size != kMeshIdBytes)
    return Fail(HVDA_INVALID_ARGUMENT, "unique id of " + std::to_string(size) +
                                           " bytes: the example plugin's ids have " +
                                           std::to_string(kMeshIdBytes) + " (unique_id_size)");
  if (std::memcmp(b, kIdMagic, sizeof kIdMagic) != 0)
    return Fail(HVDA_INVALID_ARGUMENT,
                "not a unique id of the example plugin (made by another plugin, or changed on "
                "its way to this rank): pass the bytes get_unique_id wrote, unchanged");
  id->ip = GetBigEndian<uint32_t>(b + 8);
  id->port = GetBigEndian<uint16_t>(b + 12);
  id->pid = GetBigEndian<uint32_t>(b + 16);
  id->nonce = GetBigEndian<uint64_t>(b + 24);
  return HVDA_OK;
}

Mesh::Mesh(int rank, int nranks, double op_timeout_seconds)
    : rank_(rank), op_timeout_seconds_(op_timeout_seconds), fds_(nranks, -1) {}

Mesh::~Mesh() {
  for (int fd : fds_) CloseFd(fd);
}

void Mesh::Abort() {
  aborted_ = true;
  // shutdown, not close: the fds stay valid for an Exchange still polling
  // them (it wakes up and sees the connection end); ~Mesh closes them.
  for (int fd : fds_)
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

hvda_status Mesh::AsyncError() {
  std::lock_guard<std::mutex> lock(error_mu_);
  return error_ == HVDA_OK ? HVDA_OK : Fail(error_, error_message_);
}

hvda_status Mesh::Break(hvda_status status, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (error_ == HVDA_OK) {
      error_ = status;
      error_message_ = message;
    }
  }
  return Fail(status, message);
}

hvda_status Mesh::Exchange(const char* what, const std::vector<SendSpan>& sends,
                           const std::vector<RecvSpan>& recvs) {
  // Two streams using one communicator must not interleave their bytes on
  // a socket. (Their order must still be the same on every rank.)
  std::lock_guard<std::mutex> serialized(exchange_mu_);
  const std::string op = std::string(what) + " on rank " + std::to_string(rank_);
  if (aborted_)
    return Fail(HVDA_REMOTE_ERROR, op + ": the communicator was aborted: destroy it");
  if (hvda_status broken = AsyncError())
    return Fail(broken, op + ": the communicator is broken by an earlier error (" +
                            std::string(LastError()) + "): destroy it and make a new one");
  std::vector<PeerQueue> queues(fds_.size());
  for (const SendSpan& s : sends) {
    if (s.peer < 0 || s.peer >= size() || s.peer == rank_)
      return Fail(HVDA_INTERNAL, op + ": bad peer " + std::to_string(s.peer));
    if (s.bytes > 0) queues[s.peer].sends.push_back(s);
  }
  for (const RecvSpan& r : recvs) {
    if (r.peer < 0 || r.peer >= size() || r.peer == rank_)
      return Fail(HVDA_INTERNAL, op + ": bad peer " + std::to_string(r.peer));
    if (r.bytes > 0) queues[r.peer].recvs.push_back(r);
  }

  const Deadline deadline = Deadline::In(op_timeout_seconds_);
  std::vector<pollfd> polls;
  std::vector<int> peers;  // peers[i]: the rank polls[i] is connected to
  for (;;) {
    polls.clear();
    peers.clear();
    for (int p = 0; p < size(); ++p) {
      short events = (queues[p].sending() ? POLLOUT : 0) | (queues[p].receiving() ? POLLIN : 0);
      if (events == 0) continue;
      polls.push_back(pollfd{fds_[p], events, 0});
      peers.push_back(p);
    }
    if (polls.empty()) return HVDA_OK;  // everything moved

    const int ready = ::poll(polls.data(), polls.size(), deadline.PollMillis());
    if (aborted_) return Break(HVDA_REMOTE_ERROR, op + ": the communicator was aborted");
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Break(HVDA_INTERNAL, op + ": poll: " + std::strerror(errno));
    if (ready == 0) {
      std::string waiting;
      for (int p : peers) waiting += (waiting.empty() ? "" : ", ") + std::to_string(p);
      return Break(HVDA_TIMEOUT,
                   op + ": no progress with rank(s) " + waiting + " within the op timeout (" +
                       std::to_string(op_timeout_seconds_) +
                       " s, HOROVOD_ACCEL_TIMEOUT_SECONDS): a peer is stuck, gone, or issued "
                       "a different collective; check its log, or raise the timeout if the "
                       "operation is merely slow");
    }

    for (size_t i = 0; i < polls.size(); ++i) {
      const short revents = polls[i].revents;
      if (revents == 0) continue;
      const int p = peers[i];
      PeerQueue& q = queues[p];
      if (revents & POLLNVAL) return Break(HVDA_INTERNAL, op + ": invalid socket");
      auto lost = [&](const std::string& why) {  // a send or receive failed
        if (aborted_) return Break(HVDA_REMOTE_ERROR, op + ": the communicator was aborted");
        return Break(HVDA_REMOTE_ERROR, op + ": lost rank " + std::to_string(p) + " (" + why +
                                            "): its process exited or aborted the communicator");
      };
      // Move as much as the socket takes now; stop at EAGAIN.
      while ((revents & (POLLOUT | POLLERR | POLLHUP)) && q.sending()) {
        const SendSpan& s = q.sends[q.send_index];
        ssize_t n = ::send(fds_[p], static_cast<const char*>(s.data) + q.send_offset,
                           s.bytes - q.send_offset, MSG_NOSIGNAL);
        if (n < 0 && WouldBlock()) break;
        if (n < 0) return lost(std::strerror(errno));
        q.send_offset += static_cast<size_t>(n);
        if (q.send_offset == s.bytes) ++q.send_index, q.send_offset = 0;
      }
      while ((revents & (POLLIN | POLLERR | POLLHUP)) && q.receiving()) {
        const RecvSpan& r = q.recvs[q.recv_index];
        ssize_t n = ::recv(fds_[p], static_cast<char*>(r.data) + q.recv_offset,
                           r.bytes - q.recv_offset, 0);
        if (n < 0 && WouldBlock()) break;
        if (n <= 0) return lost(n == 0 ? "it closed the connection" : std::strerror(errno));
        q.recv_offset += static_cast<size_t>(n);
        if (q.recv_offset == r.bytes) ++q.recv_index, q.recv_offset = 0;
      }
    }
  }
}

}  // namespace example
