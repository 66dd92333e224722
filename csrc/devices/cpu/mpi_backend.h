// The "mpi" CPU collective backend: the MPI library of a job started by
// mpirun (Open MPI or an MPICH-ABI MPI), called through the MPI shim
// (mpi_shim_table.h), so the core is not compiled against MPI.
//
// One MPI communicator per process set, created by its members only
// (MPI_Comm_create_group) from the job's communicator (_HOROVOD_MPI_COMM:
// MPI_COMM_WORLD or the mpi4py communicator given to hvd.init(comm=...),
// whose rank i is Horovod rank i), with MPI_ERRORS_RETURN.
//
// Threading: one caller at a time (the process set's background thread);
// MPI runs at MPI_THREAD_MULTIPLE, so other process sets' threads may call
// MPI concurrently on their own communicators.
// Failure: an MPI error becomes Status::Aborted and the backend refuses
// further collectives. MPI has no timeouts: a rank that dies ends the job
// through mpirun, which kills the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "devices/cpu/mpi_shim_table.h"

namespace hvda {
namespace cpu {

class MpiBackend : public CollectiveBackend {
 public:
  // OK when this process's job was formed from MPI by hvd.init() (which
  // passes the shim and the job's communicator in the JobSpec on every rank
  // alike); else an error for the user, naming `setting` (e.g.
  // "HOROVOD_CONTROLLER=mpi").
  static Status JobAvailable(const JobSpec& job, const std::string& setting);

  // Create with the shim and job communicator of spec.job (which must be
  // set and pass JobAvailable).
  static Status CreateForJob(const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out);

  // Collective over spec's ranks (only they call it): creates the
  // communicator of spec.global_ranks, ranks of the job communicator
  // `job_comm` (a Fortran handle), through the shim loaded at `shim_path`.
  static Status Create(const CommunicatorSpec& spec, const std::string& shim_path, int job_comm,
                       std::unique_ptr<CollectiveBackend>* out);
  ~MpiBackend() override;  // frees the communicator unless MPI is finalized

  const char* name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Reductions of the dtypes MPI has (not float16/bfloat16, so that
  // "mpi,gloo" runs those on gloo); every dtype for the byte collectives.
  bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const override;

  // Host-synchronous: each blocks until this rank's part is done; `stream`
  // is ignored (may be null).
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

 private:
  MpiBackend(std::shared_ptr<const MpiShim> shim, int comm, const CommunicatorSpec& spec);
  Status Check(const char* op, int rc);  // MPI error code -> Status; marks failure
  Status Healthy(const char* op) const;
  Status CheckVector(const char* op, size_t n) const;

  std::shared_ptr<const MpiShim> shim_;
  int comm_;  // Fortran handle; owned
  int rank_;
  int size_;
  std::string prefix_;
  bool failed_ = false;
};

}  // namespace cpu
}  // namespace hvda
