#include "plan.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace hvda_emu {

namespace {
constexpr size_t kMaxPieceBytes = 256 << 10;
}

Plan::Plan(Links links)
    : links_(std::move(links)),
      piece_bytes_(std::min(kMaxPieceBytes, links_.to[0].capacity() / 2)),
      sends_(static_cast<size_t>(links_.nranks)),
      recvs_(static_cast<size_t>(links_.nranks)) {}

void Plan::Send(int peer, const char* src, size_t bytes, const size_t* ready) {
  if (bytes > 0) sends_[static_cast<size_t>(peer)].push_back({src, bytes, ready, 0});
}

void Plan::Recv(int peer, char* dst, size_t bytes) {
  if (bytes > 0) recvs_[static_cast<size_t>(peer)].push_back({dst, bytes, nullptr, 0});
}

const size_t* Plan::Reduce(const char* local, char* dst, size_t count, const Reduction& red) {
  if (count == 0) return nullptr;
  tasks_.push_back({local, dst, count * DTypeSize(red.dtype), red});
  ReduceTask* t = &tasks_.back();
  for (int p = 0; p < nranks(); ++p) {
    if (p != rank()) recvs_[static_cast<size_t>(p)].push_back({nullptr, t->bytes, t, 0});
  }
  return &t->done;
}

char* Plan::Scratch(size_t bytes) {
  scratch_.emplace_back(new char[bytes == 0 ? 1 : bytes]);
  return scratch_.back().get();
}

bool Plan::PumpSends(int peer) {
  std::deque<SendSeg>& q = sends_[static_cast<size_t>(peer)];
  Channel& ch = links_.to[static_cast<size_t>(peer)];
  bool moved = false;
  while (!q.empty()) {
    SendSeg& s = q.front();
    const size_t limit = s.ready != nullptr ? std::min(*s.ready, s.bytes) : s.bytes;
    if (s.done < limit) {
      const size_t n = ch.Write(s.src + s.done, limit - s.done);
      s.done += n;
      moved |= n > 0;
    }
    if (s.done < s.bytes) break;
    q.pop_front();
  }
  return moved;
}

bool Plan::PumpRecvs(int peer) {
  std::deque<RecvSeg>& q = recvs_[static_cast<size_t>(peer)];
  Channel& ch = links_.from[static_cast<size_t>(peer)];
  bool moved = false;
  while (!q.empty() && q.front().task == nullptr) {  // a reduction's bytes wait for StepReduce
    RecvSeg& r = q.front();
    const size_t n = ch.Read(r.dst + r.done, r.bytes - r.done);
    r.done += n;
    moved |= n > 0;
    if (r.done < r.bytes) break;
    q.pop_front();
  }
  return moved;
}

bool Plan::StepReduce(ReduceTask& t) {
  const int n = nranks();
  const int me = rank();
  const size_t elem = DTypeSize(t.red.dtype);
  bool moved = false;
  while (t.done < t.bytes) {
    const size_t piece = std::min(t.bytes - t.done, piece_bytes_);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      const std::deque<RecvSeg>& q = recvs_[static_cast<size_t>(p)];
      if (q.empty() || q.front().task != &t ||
          links_.from[static_cast<size_t>(p)].Readable() < piece) {
        return moved;
      }
    }
    // One rank alone reduces straight into dst (in place is fine: element i
    // is read before it is written); otherwise an accumulator keeps dst
    // untouched until every contribution of the piece was read.
    char* acc = t.dst + t.done;
    if (n > 1) {
      acc_.resize(piece_bytes_);
      peek_.resize(piece_bytes_);
      acc = acc_.data();
    }
    for (int r = 0; r < n; ++r) {
      const char* x = r == me ? t.local + t.done
                              : links_.from[static_cast<size_t>(r)].Peek(piece, peek_.data());
      if (r == 0) {
        ReduceFirst(t.red, acc, x, piece / elem);
      } else {
        ReduceNext(t.red, acc, x, piece / elem);
      }
    }
    ReduceFinish(t.red, acc, piece / elem);
    if (acc != t.dst + t.done) std::memcpy(t.dst + t.done, acc, piece);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      links_.from[static_cast<size_t>(p)].Consume(piece);
      RecvSeg& seg = recvs_[static_cast<size_t>(p)].front();
      seg.done += piece;
      if (seg.done == seg.bytes) recvs_[static_cast<size_t>(p)].pop_front();
    }
    t.done += piece;
    moved = true;
  }
  return moved;
}

bool Plan::Progress() {
  bool moved = false;
  for (int p = 0; p < nranks(); ++p) {
    moved |= PumpSends(p);
    moved |= PumpRecvs(p);
  }
  for (ReduceTask& t : tasks_) moved |= StepReduce(t);
  return moved;
}

bool Plan::Done() const {
  for (const auto& q : sends_) {
    if (!q.empty()) return false;
  }
  for (const auto& q : recvs_) {
    if (!q.empty()) return false;
  }
  for (const ReduceTask& t : tasks_) {
    if (t.done < t.bytes) return false;
  }
  return true;
}

}  // namespace hvda_emu
