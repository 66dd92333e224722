#include "comm.h"

#include <cstdio>
#include <utility>

namespace hvda_emu {

Comm::Comm(CclApi api, int rank, std::unique_ptr<ShmSegment> segment)
    : api_(api), segment_(std::move(segment)) {
  const int n = segment_->nranks();
  links_.rank = rank;
  links_.nranks = n;
  for (int p = 0; p < n; ++p) {
    links_.to.push_back(segment_->Link(rank, p));
    links_.from.push_back(segment_->Link(p, rank));
  }
}

void Comm::CheckPeers() {
  {
    std::lock_guard<std::mutex> lock(check_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now < next_check_) return;
    next_check_ = now + std::chrono::milliseconds(100);
  }
  for (int p = 0; p < nranks(); ++p) {
    if (p == rank() || segment_->RankAlive(p)) continue;
    int expected = kCclSuccess;
    if (async_error_.compare_exchange_strong(expected, kCclRemote)) {
      std::fprintf(stderr,
                   "hvda_emu: rank %d of a %d-rank communicator: peer rank %d (pid %d) is gone; "
                   "its pending operations cannot complete - abort the communicator\n",
                   rank(), nranks(), p, segment_->RankPid(p));
    }
    return;
  }
}

int Comm::AddPreMulSum(const Reduction& red, int* op) {
  std::lock_guard<std::mutex> lock(ops_mu_);
  *op = next_op_++;
  premul_ops_[*op] = red;
  return kCclSuccess;
}

bool Comm::RemoveOp(int op) {
  std::lock_guard<std::mutex> lock(ops_mu_);
  return premul_ops_.erase(op) == 1;
}

bool Comm::ResolveOp(int op, int dtype, Reduction* out) const {
  if (!ValidDType(dtype)) return false;
  if (op >= 0 && op < kNumBuiltinOps) {
    *out = Reduction();
    out->dtype = dtype;
    out->op = static_cast<RedOpKind>(op);
    out->nranks = nranks();
    return true;
  }
  std::lock_guard<std::mutex> lock(ops_mu_);
  auto it = premul_ops_.find(op);
  if (it == premul_ops_.end() || it->second.dtype != dtype) return false;
  *out = it->second;
  return true;
}

}  // namespace hvda_emu
