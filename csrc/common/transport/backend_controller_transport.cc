#include "common/transport/backend_controller_transport.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace hvda {
namespace {

// Fits a typical cycle's request list; longer messages take a second step.
constexpr int64_t kFrameBytes = 2048;
constexpr int64_t kHeadBytes = kFrameBytes - static_cast<int64_t>(sizeof(uint64_t));

Status Annotate(const Status& st, const char* what) {
  return st.WithPrefix(std::string("negotiation (") + what + ") failed: ");
}

}  // namespace

BackendControllerTransport::BackendControllerTransport(CollectiveBackend* backend)
    : backend_(backend), frames_(static_cast<size_t>(kFrameBytes) * backend->size()) {}

BackendControllerTransport::BackendControllerTransport(std::unique_ptr<CollectiveBackend> owned)
    : BackendControllerTransport(owned.get()) {
  owned_ = std::move(owned);
}

Status BackendControllerTransport::AllgatherMessages(const std::string& mine,
                                                     std::vector<std::string>* all) {
  const int n = size();
  std::vector<char> frame(kFrameBytes, 0);
  const uint64_t len = mine.size();
  std::memcpy(frame.data(), &len, sizeof(len));
  std::memcpy(frame.data() + sizeof(len), mine.data(),
              static_cast<size_t>(std::min<int64_t>(len, kHeadBytes)));
  HVDA_RETURN_IF_ERROR(backend_->Allgatherv(frame.data(), frames_.data(),
                                            std::vector<int64_t>(n, kFrameBytes), nullptr));
  all->assign(n, std::string());
  std::vector<int64_t> tails(n, 0);
  for (int r = 0; r < n; ++r) {
    const char* f = frames_.data() + static_cast<size_t>(r) * kFrameBytes;
    uint64_t l;
    std::memcpy(&l, f, sizeof(l));
    (*all)[r].assign(f + sizeof(l), static_cast<size_t>(std::min<int64_t>(l, kHeadBytes)));
    tails[r] = std::max<int64_t>(0, static_cast<int64_t>(l) - kHeadBytes);
  }
  const int64_t total = std::accumulate(tails.begin(), tails.end(), int64_t{0});
  if (total == 0) return Status::OK();
  std::vector<char> rest(static_cast<size_t>(total));
  const char* my_tail = tails[rank()] > 0 ? mine.data() + kHeadBytes : nullptr;
  HVDA_RETURN_IF_ERROR(backend_->Allgatherv(my_tail, rest.data(), tails, nullptr));
  int64_t off = 0;
  for (int r = 0; r < n; ++r) {
    (*all)[r].append(rest.data() + off, static_cast<size_t>(tails[r]));
    off += tails[r];
  }
  return Status::OK();
}

Status BackendControllerTransport::Gather(const std::string& mine, std::vector<std::string>* all) {
  // An allgather: every rank pays for reading the others' frames, which on
  // shared memory is cheaper than a second synchronisation step.
  HVDA_RETURN_IF_ERROR(Annotate(AllgatherMessages(mine, all), "gather"));
  if (rank() != 0) all->clear();
  return Status::OK();
}

Status BackendControllerTransport::Broadcast(std::string* bytes) {
  std::vector<char> frame(kFrameBytes, 0);
  uint64_t len = rank() == 0 ? bytes->size() : 0;
  if (rank() == 0) {
    std::memcpy(frame.data(), &len, sizeof(len));
    std::memcpy(frame.data() + sizeof(len), bytes->data(),
                static_cast<size_t>(std::min<int64_t>(len, kHeadBytes)));
  }
  HVDA_RETURN_IF_ERROR(Annotate(backend_->Broadcast(frame.data(), kFrameBytes, 0, nullptr), "broadcast"));
  if (rank() != 0) {
    std::memcpy(&len, frame.data(), sizeof(len));
    bytes->assign(frame.data() + sizeof(len), static_cast<size_t>(std::min<int64_t>(len, kHeadBytes)));
  }
  const int64_t tail = std::max<int64_t>(0, static_cast<int64_t>(len) - kHeadBytes);
  if (tail == 0) return Status::OK();
  if (rank() == 0) {
    std::string rest = bytes->substr(kHeadBytes);
    return Annotate(backend_->Broadcast(&rest[0], tail, 0, nullptr), "broadcast");
  }
  std::string rest(static_cast<size_t>(tail), '\0');
  HVDA_RETURN_IF_ERROR(Annotate(backend_->Broadcast(&rest[0], tail, 0, nullptr), "broadcast"));
  bytes->append(rest);
  return Status::OK();
}

Status BackendControllerTransport::BitAnd(std::vector<uint64_t>* bits) {
  const int n = size();
  if (n == 1 || bits->empty()) return Status::OK();
  // Runs every cycle: the scratch vectors are reused, not reallocated.
  const int64_t bytes = static_cast<int64_t>(bits->size() * sizeof(uint64_t));
  bits_all_.resize(bits->size() * n);
  bits_sizes_.assign(n, bytes);
  HVDA_RETURN_IF_ERROR(
      Annotate(backend_->Allgatherv(bits->data(), bits_all_.data(), bits_sizes_, nullptr),
               "bit vector"));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < bits->size(); ++i) (*bits)[i] &= bits_all_[r * bits->size() + i];
  return Status::OK();
}

}  // namespace hvda
