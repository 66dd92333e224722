#include "collectives.h"

#include <algorithm>
#include <cstring>

namespace hvda_emu {
namespace {

bool Overlap(const char* a, size_t an, const char* b, size_t bn) {
  return an > 0 && bn > 0 && a < b + bn && b < a + an;
}

// Copies n bytes from src to dst unless they are the same place.
void CopyBlock(char* dst, const char* src, size_t n) {
  if (n > 0 && dst != src) std::memmove(dst, src, n);
}

// Element range of block b when count elements are split over n ranks.
size_t BlockStart(size_t count, int n, int b) {
  const size_t nn = static_cast<size_t>(n);
  const size_t bb = static_cast<size_t>(b);
  return count / nn * bb + std::min(bb, count % nn);
}

}  // namespace

PlanPart AllReducePart(const char* s, char* r, size_t count, const Reduction& red) {
  return [=](Plan& plan) {
    const int n = plan.nranks();
    const int me = plan.rank();
    const size_t es = DTypeSize(red.dtype);
    auto at = [&](int b) { return BlockStart(count, n, b) * es; };
    auto len = [&](int b) { return at(b + 1) - at(b); };
    // In place is safe: peer p's reduced block p, which overwrites our block
    // p, exists only after p consumed all of our block p.
    for (int p = 0; p < n; ++p) {
      if (p != me) plan.Send(p, s + at(p), len(p));
    }
    const size_t* reduced = plan.Reduce(s + at(me), r + at(me), len(me) / es, red);
    for (int p = 0; p < n; ++p) {
      if (p != me) plan.Send(p, r + at(me), len(me), reduced);
    }
    for (int p = 0; p < n; ++p) {
      if (p != me) plan.Recv(p, r + at(p), len(p));
    }
  };
}

PlanPart ReduceScatterPart(const char* s, char* r, size_t recvcount, const Reduction& red) {
  return [=](Plan& plan) {
    const int n = plan.nranks();
    const int me = plan.rank();
    const size_t block = recvcount * DTypeSize(red.dtype);
    const size_t total = block * static_cast<size_t>(n);
    const char* src = s;
    // r may overlap s only as its own block (NCCL's in place); otherwise
    // (e.g. s == r on rank > 0) reducing into r would clobber blocks still
    // to be sent: send from a snapshot.
    if (Overlap(s, total, r, block) && r != s + block * static_cast<size_t>(me)) {
      char* copy = plan.Scratch(total);
      std::memcpy(copy, s, total);
      src = copy;
    }
    for (int p = 0; p < n; ++p) {
      if (p != me) plan.Send(p, src + block * static_cast<size_t>(p), block);
    }
    plan.Reduce(src + block * static_cast<size_t>(me), r, recvcount, red);
  };
}

PlanPart BroadcastPart(const char* s, char* r, size_t bytes, int root) {
  return [=](Plan& plan) {
    if (plan.rank() != root) {
      plan.Recv(root, r, bytes);
      return;
    }
    CopyBlock(r, s, bytes);
    for (int p = 0; p < plan.nranks(); ++p) {
      if (p != root) plan.Send(p, r, bytes);
    }
  };
}

PlanPart AllGatherPart(const char* s, char* r, size_t bytes) {
  return [=](Plan& plan) {
    const int n = plan.nranks();
    const int me = plan.rank();
    // The own block first (s is read only here), then sends from it.
    char* own = r + bytes * static_cast<size_t>(me);
    CopyBlock(own, s, bytes);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      plan.Send(p, own, bytes);
      plan.Recv(p, r + bytes * static_cast<size_t>(p), bytes);
    }
  };
}

PlanPart AllGatherVPart(const char* s, char* r, std::vector<size_t> recv_bytes,
                        std::vector<size_t> recv_displs) {
  return [=](Plan& plan) {
    const int me = plan.rank();
    char* own = r + recv_displs[static_cast<size_t>(me)];
    const size_t own_bytes = recv_bytes[static_cast<size_t>(me)];
    CopyBlock(own, s, own_bytes);
    for (int p = 0; p < plan.nranks(); ++p) {
      if (p == me) continue;
      plan.Send(p, own, own_bytes);
      plan.Recv(p, r + recv_displs[static_cast<size_t>(p)], recv_bytes[static_cast<size_t>(p)]);
    }
  };
}

PlanPart AlltoAllvPart(const char* s, std::vector<size_t> send_bytes,
                       std::vector<size_t> send_displs, char* r, std::vector<size_t> recv_bytes,
                       std::vector<size_t> recv_displs) {
  return [=](Plan& plan) {
    const size_t n = static_cast<size_t>(plan.nranks());
    const size_t me = static_cast<size_t>(plan.rank());
    size_t s_end = 0, r_end = 0;
    for (size_t p = 0; p < n; ++p) {
      if (send_bytes[p] > 0) s_end = std::max(s_end, send_displs[p] + send_bytes[p]);
      if (recv_bytes[p] > 0) r_end = std::max(r_end, recv_displs[p] + recv_bytes[p]);
    }
    const char* src = s;
    if (Overlap(s, s_end, r, r_end)) {  // in place: receives would overwrite unsent data
      char* copy = plan.Scratch(s_end);
      std::memcpy(copy, s, s_end);
      src = copy;
    }
    CopyBlock(r + recv_displs[me], src + send_displs[me], send_bytes[me]);
    for (size_t p = 0; p < n; ++p) {
      if (p == me) continue;
      plan.Send(static_cast<int>(p), src + send_displs[p], send_bytes[p]);
      plan.Recv(static_cast<int>(p), r + recv_displs[p], recv_bytes[p]);
    }
  };
}

PlanPart SendPart(const char* s, size_t bytes, int peer) {
  return [=](Plan& plan) { plan.Send(peer, s, bytes); };
}

PlanPart RecvPart(char* r, size_t bytes, int peer) {
  return [=](Plan& plan) { plan.Recv(peer, r, bytes); };
}

}  // namespace hvda_emu
