#include "devices/cpu/mpi_backend.h"

#include <cstring>
#include <numeric>

#include "common/job_spec.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace cpu {
namespace {

// MPI_Comm_create_group tag for the communicator of `prefix` (unique per
// process set and generation): creations of different sets may overlap in
// time on ranks that belong to both.
int TagOf(const std::string& prefix) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : prefix) h = (h ^ c) * 16777619u;
  return static_cast<int>(h & 0x7fff);  // MPI guarantees tags up to 32767
}

}  // namespace

Status MpiBackend::JobAvailable(const JobSpec& job, const std::string& setting) {
  if (job.has_mpi()) return Status::OK();
  return Status::Precondition(
      setting + " needs a job started by mpirun (Open MPI or MPICH: `mpirun -np N python "
      "train.py`, or `horovodrun --mpi`), where hvd.init() loads the launcher's MPI; this job "
      "was not (horovodrun starts Gloo jobs). Launch with mpirun, or leave mpi out (the "
      "defaults: HOROVOD_CPU_OPERATIONS=shm,gloo, HOROVOD_CONTROLLER=gloo).");
}

Status MpiBackend::CreateForJob(const CommunicatorSpec& spec,
                                std::unique_ptr<CollectiveBackend>* out) {
  if (spec.job == nullptr)
    return Status::InvalidArgument("mpi backend: no job to find the job's MPI in");
  HVDA_RETURN_IF_ERROR(JobAvailable(*spec.job, "the mpi backend"));
  return Create(spec, spec.job->mpi_shim, static_cast<int>(spec.job->mpi_comm), out);
}

Status MpiBackend::Create(const CommunicatorSpec& spec, const std::string& shim_path, int job_comm,
                          std::unique_ptr<CollectiveBackend>* out) {
  std::shared_ptr<const MpiShim> shim;
  HVDA_RETURN_IF_ERROR(LoadMpiShim(shim_path, &shim));
  int job_size = 0;
  int rc = shim->comm_size(job_comm, &job_size);
  if (rc != 0)
    return Status::Precondition(shim->Describe("mpi backend: MPI_Comm_size of the job communicator "
                                               "(JobSpec::mpi_comm)", rc));
  for (int r : spec.global_ranks)
    if (r < 0 || r >= job_size)
      return Status::Precondition("mpi backend: rank " + std::to_string(r) + " is not a rank of "
                                  "the job's MPI communicator of " + std::to_string(job_size) +
                                  " ranks; the job was not formed from this communicator.");
  int comm = 0;
  rc = shim->comm_create_group(job_comm, spec.global_ranks.data(),
                               static_cast<int>(spec.global_ranks.size()), TagOf(spec.prefix), &comm);
  if (rc != 0)
    return Status::Aborted(shim->Describe(("mpi backend: creating the communicator '" + spec.prefix +
                                           "' (MPI_Comm_create_group)").c_str(), rc));
  out->reset(new MpiBackend(std::move(shim), comm, spec));
  return Status::OK();
}

MpiBackend::MpiBackend(std::shared_ptr<const MpiShim> shim, int comm, const CommunicatorSpec& spec)
    : shim_(std::move(shim)), comm_(comm), rank_(spec.rank), size_(spec.size), prefix_(spec.prefix) {}

MpiBackend::~MpiBackend() {
  int finalized = 1;
  if (shim_->finalized(&finalized) == 0 && !finalized) shim_->comm_free(comm_);
}

bool MpiBackend::Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const {
  if (kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReducescatter)
    return kernels::IsReducible(dtype, op) &&
           shim_->supports(static_cast<int>(dtype), static_cast<int>(op)) != 0;
  return IsValidDataType(static_cast<int32_t>(dtype));
}

Status MpiBackend::Healthy(const char* op) const {
  if (!failed_) return Status::OK();
  return Status::Aborted(std::string("mpi backend: ") + op + " on rank " + std::to_string(rank_) +
                         " refused: an earlier MPI collective failed, so communicator '" +
                         prefix_ + "' is unusable; shut down and restart the job.");
}

Status MpiBackend::Check(const char* op, int rc) {
  if (rc == 0) return Status::OK();
  failed_ = true;
  return Status::Aborted(shim_->Describe((std::string("mpi backend: ") + op + " on rank " +
                                          std::to_string(rank_) + " of " + std::to_string(size_) +
                                          " (communicator '" + prefix_ + "')").c_str(), rc) +
                         ". Check the other ranks' output and mpirun's.");
}

Status MpiBackend::CheckVector(const char* op, size_t n) const {
  if (n == static_cast<size_t>(size_)) return Status::OK();
  return Status::InvalidArgument(std::string("mpi backend: ") + op + " got " + std::to_string(n) +
                                 " per-rank sizes for a communicator of " +
                                 std::to_string(size_) + " ranks.");
}

Status MpiBackend::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op, Stream*) {
  if (!Supports(CollectiveKind::kAllreduce, dtype, op))
    return Status::InvalidArgument(std::string("mpi backend: cannot allreduce ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  HVDA_RETURN_IF_ERROR(Healthy("allreduce"));
  if (count == 0 || size_ == 1) return Status::OK();  // same on every rank
  return Check("allreduce", shim_->allreduce(buffer, count, static_cast<int>(dtype),
                                             static_cast<int>(op), comm_));
}

Status MpiBackend::Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                              Stream*) {
  HVDA_RETURN_IF_ERROR(CheckVector("allgatherv", bytes_per_rank.size()));
  HVDA_RETURN_IF_ERROR(Healthy("allgatherv"));
  const int64_t total = std::accumulate(bytes_per_rank.begin(), bytes_per_rank.end(), int64_t{0});
  if (total == 0) return Status::OK();
  if (size_ == 1) {
    std::memcpy(out, in, bytes_per_rank[0]);
    return Status::OK();
  }
  return Check("allgatherv", shim_->allgatherv(in, bytes_per_rank[rank_], out,
                                               bytes_per_rank.data(), comm_));
}

Status MpiBackend::Broadcast(void* buffer, int64_t bytes, int root, Stream*) {
  if (root < 0 || root >= size_)
    return Status::InvalidArgument("mpi backend: broadcast root " + std::to_string(root) +
                                   " is not a rank of this communicator of " +
                                   std::to_string(size_) + ".");
  HVDA_RETURN_IF_ERROR(Healthy("broadcast"));
  if (bytes == 0 || size_ == 1) return Status::OK();
  return Check("broadcast", shim_->bcast(buffer, bytes, root, comm_));
}

Status MpiBackend::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                             const std::vector<int64_t>& recv_bytes, Stream*) {
  HVDA_RETURN_IF_ERROR(CheckVector("alltoallv", send_bytes.size()));
  HVDA_RETURN_IF_ERROR(CheckVector("alltoallv", recv_bytes.size()));
  HVDA_RETURN_IF_ERROR(Healthy("alltoallv"));
  if (size_ == 1) {
    if (send_bytes[0] > 0) std::memcpy(out, in, send_bytes[0]);
    return Status::OK();
  }
  return Check("alltoallv",
               shim_->alltoallv(in, send_bytes.data(), out, recv_bytes.data(), comm_));
}

Status MpiBackend::Reducescatter(const void* in, void* out,
                                 const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                 ReduceOp op, Stream*) {
  HVDA_RETURN_IF_ERROR(CheckVector("reducescatter", counts_per_rank.size()));
  if (!Supports(CollectiveKind::kReducescatter, dtype, op))
    return Status::InvalidArgument(std::string("mpi backend: cannot reducescatter ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  HVDA_RETURN_IF_ERROR(Healthy("reducescatter"));
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t mine = counts_per_rank[rank_];
  if (size_ == 1) {
    if (mine > 0 && in != out) std::memmove(out, in, mine * esize);
    return Status::OK();
  }
  const int64_t total =
      std::accumulate(counts_per_rank.begin(), counts_per_rank.end(), int64_t{0});
  if (total == 0) return Status::OK();  // same on every rank
  return Check("reducescatter", shim_->reduce_scatter(in, out, counts_per_rank.data(),
                                                      static_cast<int>(dtype),
                                                      static_cast<int>(op), comm_));
}

Status MpiBackend::Barrier(Stream*) {
  HVDA_RETURN_IF_ERROR(Healthy("barrier"));
  if (size_ == 1) return Status::OK();
  return Check("barrier", shim_->barrier(comm_));
}

}  // namespace cpu
}  // namespace hvda
