// Mesh::Connect: how nranks processes become a full TCP mesh.
//
// 1. Rank 0 owns the listener get_unique_id opened (its address is in the
//    id). Every other rank j opens a listener of its own, connects to rank
//    0 and says hello: {magic, the id's nonce, j, nranks, j's port}.
// 2. Rank 0, once all nranks-1 hellos arrived, sends each rank the address
//    table (every rank's IP as rank 0 saw the connection, and port).
// 3. Rank j connects to every rank i with 0 < i < j (hello again) and
//    accepts the ranks k > j. Now every pair has exactly one connection.
// 4. Barrier: each rank j sends rank 0 "ready"; rank 0 answers "go" once all
//    did. So comm_init_rank returns HVDA_OK only when every rank is up (and
//    no one still needs the id's listener), as plugin.h asks.
// Every step is bounded by the init deadline. A connection whose hello has
// a wrong magic or nonce (a stray, e.g. from an earlier failed job) is
// dropped; one with the right nonce but a wrong rank or nranks is an error.
#include <unistd.h>

#include <utility>

#include "plugin_state.h"
#include "sockets.h"
#include "tcp_mesh.h"

namespace example {

namespace {

constexpr uint32_t kHelloMagic = 0x48454c4fu;  // "HELO"
constexpr size_t kHelloBytes = 24;              // magic 4, nonce 8, rank 4, nranks 4, port 2, pad 2
constexpr size_t kEntryBytes = 8;               // address table entry: ip 4, port 2, pad 2
constexpr unsigned char kReady = 'R', kGo = 'G';

struct Hello {
  uint64_t nonce;
  uint32_t rank, nranks;
  uint16_t port;
};

hvda_status SayHello(int fd, const Hello& h, const Deadline& deadline) {
  unsigned char b[kHelloBytes] = {};
  PutBigEndian<uint32_t>(b, kHelloMagic);
  PutBigEndian<uint64_t>(b + 4, h.nonce);
  PutBigEndian<uint32_t>(b + 12, h.rank);
  PutBigEndian<uint32_t>(b + 16, h.nranks);
  PutBigEndian<uint16_t>(b + 20, h.port);
  return SendAll(fd, b, sizeof b, deadline);
}

// Accepts connections until the `count` ranks first..first+count-1 of this
// id said hello; puts them in fds[rank] (and, when given, their address in
// ips/ports). *joined counts them, for the caller's timeout message.
hvda_status AcceptPeers(int listener, const MeshId& id, int nranks, int first, int count,
                        const Deadline& deadline, std::vector<int>& fds, int* joined,
                        std::vector<uint32_t>* ips = nullptr, std::vector<uint16_t>* ports = nullptr) {
  for (*joined = 0; *joined < count;) {
    int fd = -1;
    uint32_t ip = 0;
    if (hvda_status s = AcceptOne(listener, deadline, &fd, &ip)) return s;
    unsigned char b[kHelloBytes];
    if (hvda_status s = RecvAll(fd, b, sizeof b, deadline)) {
      CloseFd(fd);
      if (s == HVDA_TIMEOUT) return s;
      continue;  // a stray that hung up
    }
    const Hello h{GetBigEndian<uint64_t>(b + 4), GetBigEndian<uint32_t>(b + 12),
                  GetBigEndian<uint32_t>(b + 16), GetBigEndian<uint16_t>(b + 20)};
    if (GetBigEndian<uint32_t>(b) != kHelloMagic || h.nonce != id.nonce) {
      CloseFd(fd);  // not one of ours
      continue;
    }
    const int r = static_cast<int>(h.rank);
    if (h.nranks != static_cast<uint32_t>(nranks) || r < first || r >= first + count ||
        fds[r] != -1) {
      CloseFd(fd);
      return Fail(HVDA_INVALID_ARGUMENT,
                  "a peer joined as rank " + std::to_string(h.rank) + " of " +
                      std::to_string(h.nranks) +
                      ": every rank must pass the same nranks and a distinct rank");
    }
    fds[r] = fd;
    if (ips != nullptr) (*ips)[r] = ip, (*ports)[r] = h.port;
    ++*joined;
  }
  return HVDA_OK;
}

hvda_status SetUpRank0(const MeshId& id, int listener, int nranks, const Deadline& deadline,
                       std::vector<int>& fds, const std::string& who) {
  std::vector<uint32_t> ips(nranks, 0);
  std::vector<uint16_t> ports(nranks, 0);
  int joined = 0;
  if (hvda_status s = AcceptPeers(listener, id, nranks, 1, nranks - 1, deadline, fds, &joined,
                                  &ips, &ports))
    return Fail(s, who + ": " + std::to_string(joined) + " of " + std::to_string(nranks - 1) +
                       " peers connected to " + AddressText(id.ip, id.port) + " (" + LastError() +
                       "): every rank must call comm_init_rank with this id; on a multi-host "
                       "job set HOROVOD_EXAMPLE_ADDR on this host to an address the others reach");
  std::vector<unsigned char> table(kEntryBytes * nranks, 0);
  for (int r = 1; r < nranks; ++r) {
    PutBigEndian<uint32_t>(&table[kEntryBytes * r], ips[r]);
    PutBigEndian<uint16_t>(&table[kEntryBytes * r + 4], ports[r]);
  }
  for (int r = 1; r < nranks; ++r) {
    if (hvda_status s = SendAll(fds[r], table.data(), table.size(), deadline))
      return Fail(s, who + ": sending the address table to rank " + std::to_string(r) + ": " +
                         LastError());
  }
  for (int r = 1; r < nranks; ++r) {  // the barrier: every rank is connected ...
    unsigned char ready = 0;
    hvda_status s = RecvAll(fds[r], &ready, 1, deadline);
    if (s == HVDA_OK && ready != kReady) s = Fail(HVDA_INTERNAL, "protocol error");
    if (s != HVDA_OK)
      return Fail(s, who + ": waiting for rank " + std::to_string(r) +
                         " to connect to its peers: " + LastError());
  }
  for (int r = 1; r < nranks; ++r) {  // ... so all may go
    if (hvda_status s = SendAll(fds[r], &kGo, 1, deadline))
      return Fail(s, who + ": releasing rank " + std::to_string(r) + ": " + LastError());
  }
  return HVDA_OK;
}

hvda_status SetUpRankJ(const MeshId& id, int nranks, int rank, const Deadline& deadline,
                       std::vector<int>& fds, const std::string& who) {
  int own = -1;  // this rank's listener, for the ranks above it; closed on return
  uint16_t own_port = 0;
  if (hvda_status s = Listen(&own, &own_port)) return Fail(s, who + ": " + LastError());
  struct Closer {
    int fd;
    ~Closer() { CloseFd(fd); }
  } closer{own};
  const Hello hello{id.nonce, static_cast<uint32_t>(rank), static_cast<uint32_t>(nranks), own_port};

  hvda_status s = ConnectTo(id.ip, id.port, deadline, &fds[0]);
  if (s == HVDA_OK) s = SayHello(fds[0], hello, deadline);
  if (s != HVDA_OK)
    return Fail(s, who + ": cannot reach rank 0 (" + std::string(LastError()) +
                       "): is rank 0 inside comm_init_rank, and does HOROVOD_EXAMPLE_ADDR on "
                       "its host name an address this host reaches?");
  std::vector<unsigned char> table(kEntryBytes * nranks);
  if ((s = RecvAll(fds[0], table.data(), table.size(), deadline)))
    return Fail(s, who + ": waiting for rank 0's address table: " + LastError());

  for (int i = 1; i < rank; ++i) {
    const uint32_t ip = GetBigEndian<uint32_t>(&table[kEntryBytes * i]);
    const uint16_t port = GetBigEndian<uint16_t>(&table[kEntryBytes * i + 4]);
    s = ConnectTo(ip, port, deadline, &fds[i]);
    if (s == HVDA_OK) s = SayHello(fds[i], hello, deadline);
    if (s != HVDA_OK)
      return Fail(s, who + ": connecting to rank " + std::to_string(i) + ": " + LastError());
  }
  int joined = 0;
  if ((s = AcceptPeers(own, id, nranks, rank + 1, nranks - 1 - rank, deadline, fds, &joined)))
    return Fail(s, who + ": " + std::to_string(joined) + " of " +
                       std::to_string(nranks - 1 - rank) + " higher ranks connected: " +
                       LastError());

  unsigned char go = 0;
  s = SendAll(fds[0], &kReady, 1, deadline);
  if (s == HVDA_OK) s = RecvAll(fds[0], &go, 1, deadline);
  if (s == HVDA_OK && go != kGo) s = Fail(HVDA_INTERNAL, "protocol error");
  if (s != HVDA_OK)
    return Fail(s, who + ": waiting for the other ranks to connect: " + LastError());
  return HVDA_OK;
}

}  // namespace

hvda_status Mesh::Connect(const MeshId& id, int listener, int nranks, int rank,
                          double init_timeout_seconds, double op_timeout_seconds,
                          std::shared_ptr<Mesh>* out) {
  std::shared_ptr<Mesh> mesh(new Mesh(rank, nranks, op_timeout_seconds));
  const Deadline deadline = Deadline::In(init_timeout_seconds);
  const std::string who =
      "comm_init_rank (rank " + std::to_string(rank) + " of " + std::to_string(nranks) + ")";
  if (nranks > 1) {  // a single rank needs no sockets
    hvda_status s = rank == 0 ? SetUpRank0(id, listener, nranks, deadline, mesh->fds_, who)
                              : SetUpRankJ(id, nranks, rank, deadline, mesh->fds_, who);
    if (s != HVDA_OK) return s;  // ~Mesh closes what was connected
  }
  *out = std::move(mesh);
  return HVDA_OK;
}

}  // namespace example
