#include "common/transport/gloo_controller_transport.h"

#include <cstring>
#include <exception>

#include <gloo/allreduce.h>

namespace hvda {
namespace {

constexpr size_t kFrameBytes = 4096;
constexpr size_t kHeadBytes = kFrameBytes - sizeof(uint64_t);
constexpr uint64_t kGatherSlot = 0x68766461000001ULL;
constexpr uint64_t kBroadcastSlot = 0x68766461000002ULL;
constexpr uint64_t kBitsSlot = 0x68766461000003ULL;
constexpr int kDirectExchangeMaxRanks = 16;

Status PeerFailure(const char* what, const std::exception& e) {
  return Status::Aborted(std::string("lost contact with a peer rank during ") + what + ": " +
                         e.what() +
                         ". Another rank probably exited or crashed; check its output above.");
}

}  // namespace

GlooControllerTransport::GlooControllerTransport(std::shared_ptr<gloo::Context> ctx)
    : ctx_(std::move(ctx)), frame_(kFrameBytes) {}

void GlooControllerTransport::Send(int peer, uint64_t slot, const std::string& bytes) {
  uint64_t n = bytes.size();
  std::memcpy(frame_.data(), &n, sizeof(n));
  std::memcpy(frame_.data() + sizeof(n), bytes.data(), std::min<size_t>(n, kHeadBytes));
  auto head = ctx_->createUnboundBuffer(frame_.data(), kFrameBytes);
  head->send(peer, slot);
  head->waitSend(ctx_->getTimeout());
  if (n > kHeadBytes) {
    std::string rest = bytes.substr(kHeadBytes);
    auto tail = ctx_->createUnboundBuffer(&rest[0], rest.size());
    tail->send(peer, slot + 1);
    tail->waitSend(ctx_->getTimeout());
  }
}

std::string GlooControllerTransport::Recv(int peer, uint64_t slot) {
  auto head = ctx_->createUnboundBuffer(frame_.data(), kFrameBytes);
  head->recv(peer, slot);
  head->waitRecv(ctx_->getTimeout());
  uint64_t n;
  std::memcpy(&n, frame_.data(), sizeof(n));
  std::string out(frame_.data() + sizeof(n), std::min<size_t>(n, kHeadBytes));
  if (n > kHeadBytes) {
    std::string rest(n - kHeadBytes, '\0');
    auto tail = ctx_->createUnboundBuffer(&rest[0], rest.size());
    tail->recv(peer, slot + 1);
    tail->waitRecv(ctx_->getTimeout());
    out += rest;
  }
  return out;
}

Status GlooControllerTransport::Gather(const std::string& mine, std::vector<std::string>* all) {
  all->clear();
  try {
    if (rank() != 0) {
      Send(0, kGatherSlot, mine);
      return Status::OK();
    }
    all->resize(size());
    (*all)[0] = mine;
    for (int r = 1; r < size(); ++r) (*all)[r] = Recv(r, kGatherSlot);
  } catch (const std::exception& e) {
    return PeerFailure("negotiation (gather)", e);
  }
  return Status::OK();
}

Status GlooControllerTransport::Broadcast(std::string* bytes) {
  try {
    if (rank() == 0) {
      for (int r = 1; r < size(); ++r) Send(r, kBroadcastSlot, *bytes);
    } else {
      *bytes = Recv(0, kBroadcastSlot);
    }
  } catch (const std::exception& e) {
    return PeerFailure("negotiation (broadcast)", e);
  }
  return Status::OK();
}

Status GlooControllerTransport::BitAnd(std::vector<uint64_t>* bits) {
  if (size() == 1 || bits->empty()) return Status::OK();
  try {
    if (size() <= kDirectExchangeMaxRanks) {
      // One latency step: every rank sends its vector to every other rank.
      const size_t bytes = bits->size() * sizeof(uint64_t);
      std::vector<uint64_t> mine = *bits;
      std::vector<uint64_t> theirs(bits->size() * size());
      auto send = ctx_->createUnboundBuffer(mine.data(), bytes);
      auto recv = ctx_->createUnboundBuffer(theirs.data(), theirs.size() * sizeof(uint64_t));
      for (int r = 0; r < size(); ++r) {
        if (r == rank()) continue;
        send->send(r, kBitsSlot);
        recv->recv(r, kBitsSlot, r * bytes, bytes);
      }
      for (int r = 0; r < size() - 1; ++r) {
        send->waitSend(ctx_->getTimeout());
        recv->waitRecv(ctx_->getTimeout());
      }
      for (int r = 0; r < size(); ++r) {
        if (r == rank()) continue;
        for (size_t i = 0; i < bits->size(); ++i) (*bits)[i] &= theirs[r * bits->size() + i];
      }
    } else {
      gloo::AllreduceOptions opts(ctx_);
      opts.setOutput(bits->data(), bits->size());
      opts.setReduceFunction([](void* out, const void* a, const void* b, size_t n) {
        auto* o = static_cast<uint64_t*>(out);
        auto* x = static_cast<const uint64_t*>(a);
        auto* y = static_cast<const uint64_t*>(b);
        for (size_t i = 0; i < n; ++i) o[i] = x[i] & y[i];
      });
      opts.setTag(0x4856);
      gloo::allreduce(opts);
    }
  } catch (const std::exception& e) {
    return PeerFailure("negotiation (cache bit vector)", e);
  }
  return Status::OK();
}

}  // namespace hvda
