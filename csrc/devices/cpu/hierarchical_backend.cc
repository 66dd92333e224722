#include "devices/cpu/hierarchical_backend.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/dtype.h"
#include "devices/cpu/gloo_backend.h"
#include "devices/cpu/shm_backend.h"

namespace hvda {
namespace cpu {
namespace {

// Hosts in the order of their first rank: host_of[r] and the ranks of each.
void GroupByHost(const CommunicatorSpec& spec, std::vector<int>* host_of,
                 std::vector<std::vector<int>>* hosts) {
  std::vector<std::string> names;
  host_of->assign(spec.size, 0);
  for (int r = 0; r < spec.size; ++r) {
    auto it = std::find(names.begin(), names.end(), spec.hosts[r]);
    if (it == names.end()) {
      names.push_back(spec.hosts[r]);
      hosts->emplace_back();
      it = names.end() - 1;
    }
    (*host_of)[r] = static_cast<int>(it - names.begin());
    (*hosts)[(*host_of)[r]].push_back(r);
  }
}

CommunicatorSpec SubSpec(const CommunicatorSpec& spec, const std::vector<int>& members,
                         const std::string& prefix) {
  CommunicatorSpec sub = spec;
  sub.prefix = prefix;
  sub.size = static_cast<int>(members.size());
  sub.rank = static_cast<int>(std::find(members.begin(), members.end(), spec.rank) -
                              members.begin());
  sub.global_ranks.clear();
  sub.hosts.clear();
  for (int r : members) {
    sub.global_ranks.push_back(spec.global_ranks.empty() ? r : spec.global_ranks[r]);
    sub.hosts.push_back(spec.hosts[r]);
  }
  return sub;
}

}  // namespace

bool HierarchicalBackend::HasHierarchy(const CommunicatorSpec& spec) {
  if (spec.size <= 2 || spec.hosts.size() != static_cast<size_t>(spec.size)) return false;
  std::vector<int> host_of;
  std::vector<std::vector<int>> hosts;
  GroupByHost(spec, &host_of, &hosts);
  return hosts.size() > 1 && hosts.size() < static_cast<size_t>(spec.size);
}

Status HierarchicalBackend::Create(const CommunicatorSpec& spec, const std::string& iface,
                                   int64_t shm_segment_bytes, HierarchicalLevels levels,
                                   std::unique_ptr<CollectiveBackend>* out) {
  std::unique_ptr<HierarchicalBackend> b(new HierarchicalBackend());
  b->levels_ = levels;
  GroupByHost(spec, &b->host_of_, &b->hosts_);
  CommunicatorSpec flat = spec;
  flat.prefix = spec.prefix + "flat/";
  HVDA_RETURN_IF_ERROR(GlooBackend::Create(flat, iface, &b->flat_));

  const int my_host = b->host_of_[spec.rank];
  const std::vector<int>& mine = b->hosts_[my_host];
  b->root_ = mine.front() == spec.rank;
  if (mine.size() > 1) {
    HVDA_RETURN_IF_ERROR(ShmBackend::Create(
        SubSpec(spec, mine, spec.prefix + "host" + std::to_string(my_host) + "/"),
        shm_segment_bytes, &b->local_));
  }
  if (b->root_) {
    std::vector<int> roots;
    for (const auto& h : b->hosts_) roots.push_back(h.front());
    HVDA_RETURN_IF_ERROR(GlooBackend::Create(SubSpec(spec, roots, spec.prefix + "roots/"), iface,
                                             &b->roots_));
  }
  *out = std::move(b);
  return Status::OK();
}

Status HierarchicalBackend::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                      Stream* stream) {
  if (!levels_.allreduce) return flat_->Allreduce(buffer, count, dtype, op, stream);
  if (local_) HVDA_RETURN_IF_ERROR(local_->Allreduce(buffer, count, dtype, op, stream));
  if (roots_) HVDA_RETURN_IF_ERROR(roots_->Allreduce(buffer, count, dtype, op, stream));
  if (local_) {
    const int64_t bytes = count * static_cast<int64_t>(DataTypeSize(dtype));
    HVDA_RETURN_IF_ERROR(local_->Broadcast(buffer, bytes, /*root=*/0, stream));
  }
  return Status::OK();
}

Status HierarchicalBackend::Allgatherv(const void* in, void* out,
                                       const std::vector<int64_t>& bytes_per_rank,
                                       Stream* stream) {
  if (!levels_.allgather || bytes_per_rank.size() != static_cast<size_t>(size()))
    return flat_->Allgatherv(in, out, bytes_per_rank, stream);
  const int my_host = host_of_[rank()];
  const std::vector<int>& mine = hosts_[my_host];
  // offset[r]: where rank r's block starts in `out` (communicator order).
  std::vector<int64_t> offset(size() + 1, 0);
  std::partial_sum(bytes_per_rank.begin(), bytes_per_rank.end(), offset.begin() + 1);
  const int64_t total = offset.back();
  std::vector<int64_t> host_bytes(hosts_.size(), 0);
  for (int r = 0; r < size(); ++r) host_bytes[host_of_[r]] += bytes_per_rank[r];
  // Host-major staging: host h's ranks' blocks, in communicator order, one
  // host after another. Equal to `out` when every host's ranks are
  // consecutive and hosts come in rank order (the usual layouts): then no
  // staging copy is made.
  bool host_major = true;
  for (int r = 1; r < size(); ++r) host_major = host_major && host_of_[r] >= host_of_[r - 1];
  char* staged = static_cast<char*>(out);
  if (!host_major) {
    if (scratch_.size() < static_cast<size_t>(total)) scratch_.resize(total);
    staged = scratch_.data();
  }
  std::vector<int64_t> host_start(hosts_.size() + 1, 0);
  std::partial_sum(host_bytes.begin(), host_bytes.end(), host_start.begin() + 1);
  char* my_block = staged + host_start[my_host];

  if (local_) {
    std::vector<int64_t> local_bytes;
    for (int r : mine) local_bytes.push_back(bytes_per_rank[r]);
    if (root_) {
      HVDA_RETURN_IF_ERROR(local_->Allgatherv(in, my_block, local_bytes, stream));
    } else {
      // Only the root's copy of the host block is used; the others still
      // take part (the shm allgatherv is collective) into scratch.
      if (scratch_.size() < static_cast<size_t>(host_bytes[my_host]))
        scratch_.resize(host_bytes[my_host]);
      HVDA_RETURN_IF_ERROR(local_->Allgatherv(in, scratch_.data(), local_bytes, stream));
    }
  } else if (bytes_per_rank[rank()] > 0) {
    std::memmove(my_block, in, bytes_per_rank[rank()]);
  }
  if (roots_) {
    // The roots' Gloo allgatherv may not read and write one buffer: gather
    // from a copy of this host's block.
    if (block_.size() < static_cast<size_t>(host_bytes[my_host])) block_.resize(host_bytes[my_host]);
    if (host_bytes[my_host] > 0) std::memcpy(block_.data(), my_block, host_bytes[my_host]);
    HVDA_RETURN_IF_ERROR(roots_->Allgatherv(block_.data(), staged, host_bytes, stream));
    if (!host_major) {  // host-major staging -> communicator order
      for (size_t h = 0; h < hosts_.size(); ++h) {
        int64_t at = host_start[h];
        for (int r : hosts_[h]) {
          std::memcpy(static_cast<char*>(out) + offset[r], staged + at, bytes_per_rank[r]);
          at += bytes_per_rank[r];
        }
      }
    }
  }
  if (local_) HVDA_RETURN_IF_ERROR(local_->Broadcast(out, total, /*root=*/0, stream));
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
