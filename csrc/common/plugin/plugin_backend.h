// PluginBackend: the core's CollectiveBackend over a loaded device plugin's
// collective library, through the collective part of its PluginOps
// (plugin_ops.h). It composes what the library does not offer (uneven
// allgather / reduce-scatter, alltoallv, barrier: docs/design/plugins.md).
//
// Lifetime: shares ownership of the PluginLibrary; the PluginDevice it was
// created with is borrowed and must outlive it. The communicator is the
// plugin's and is destroyed through it.
// Threading: as the HAL (the runtime's background thread).
//
// Versions: none here (NOTE [One table per plugin] in plugin_ops.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/plugin/plugin_device.h"
#include "common/plugin/plugin_library.h"
#include "common/plugin/plugin_ops.h"

namespace hvda {

class PluginBackend : public CollectiveBackend {
 public:
  // Collective over spec's ranks: set rank 0 makes the unique id and
  // publishes it in spec.store under spec.prefix; every rank then joins the
  // communicator through PluginCollectiveOps::comm_init (blocks up to
  // spec.timeout_seconds; the operation timeout passed is
  // HOROVOD_ACCEL_TIMEOUT_SECONDS from spec.job's settings, 0 without a job), and
  // rank 0 then releases the id whatever the outcome. device: borrowed,
  // outlives the backend (scratch memory for composed collectives); its
  // drain limit is set (NOTE [Bounded teardown] in plugin_device.h).
  static Status Create(std::shared_ptr<PluginLibrary> lib, PluginDevice* device,
                       const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out);
  ~PluginBackend() override;

  const char* name() const override { return name_.c_str(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const override;

  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                   Stream* stream) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                    Stream* stream) override;
  Status Broadcast(void* buffer, int64_t bytes, int root, Stream* stream) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes, Stream* stream) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op, Stream* stream) override;
  Status Barrier(Stream* stream) override;

  Status AsyncError() const override;
  void Abort() override;

 private:
  PluginBackend(std::shared_ptr<PluginLibrary> lib, PluginDevice* device, hvda_comm_t comm,
                int rank, int size);
  Status Check(hvda_status status, const char* what) const;
  // A device buffer of >= bytes, reused in the order of `stream`.
  Status Scratch(size_t bytes, Stream* stream, void** ptr);

  std::shared_ptr<PluginLibrary> lib_;
  const PluginCollectiveOps* collectives_;  // lib_'s table
  PluginDevice* device_;
  hvda_comm_t comm_;
  int rank_, size_;
  std::string name_;
  void* scratch_ = nullptr;  // device memory for composed collectives
  size_t scratch_bytes_ = 0;
};

}  // namespace hvda
