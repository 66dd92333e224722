#include "devices/cpu/mpi_shim_table.h"

#include <dlfcn.h>

namespace hvda {
namespace cpu {
namespace {

template <typename Fn>
bool Bind(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *fn != nullptr;
}

}  // namespace

MpiShim::~MpiShim() {
  if (handle != nullptr) dlclose(handle);
}

std::string MpiShim::Describe(const char* what, int code) const {
  char buf[512] = {0};
  std::string text = "unknown error";
  if (error_string != nullptr && error_string(code, buf, sizeof(buf)) == 0) text = buf;
  return std::string(what) + " failed: " + text + " (MPI error " + std::to_string(code) + ")";
}

Status LoadMpiShim(const std::string& path, std::shared_ptr<const MpiShim>* out) {
  auto shim = std::make_shared<MpiShim>();
  shim->path = path;
  // RTLD_NOLOAD: only the copy Python loaded after libmpi resolves MPI's
  // symbols; loading it afresh here could not.
  shim->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (shim->handle == nullptr)
    return Status::Precondition(
        "the MPI shim " + path + " (_HOROVOD_MPI_SHIM) is not loaded in this process. It is "
        "loaded by hvd.init() in a job started by mpirun; do not set _HOROVOD_MPI_SHIM by hand.");
  auto abi = reinterpret_cast<decltype(&hvda_mpi_shim_abi)>(dlsym(shim->handle, "hvda_mpi_shim_abi"));
  if (abi == nullptr || abi() != HVDA_MPI_SHIM_ABI)
    return Status::Precondition("the MPI shim " + path + " has ABI " +
                                (abi ? std::to_string(abi()) : std::string("?")) + ", this core needs " +
                                std::to_string(HVDA_MPI_SHIM_ABI) + "; reinstall horovod_accel.");
  std::string missing;
  MpiShim& s = *shim;
  Bind(s.handle, "hvda_mpi_finalized", &s.finalized, &missing);
  Bind(s.handle, "hvda_mpi_comm_rank", &s.comm_rank, &missing);
  Bind(s.handle, "hvda_mpi_comm_size", &s.comm_size, &missing);
  Bind(s.handle, "hvda_mpi_comm_create_group", &s.comm_create_group, &missing);
  Bind(s.handle, "hvda_mpi_comm_free", &s.comm_free, &missing);
  Bind(s.handle, "hvda_mpi_supports", &s.supports, &missing);
  Bind(s.handle, "hvda_mpi_allreduce", &s.allreduce, &missing);
  Bind(s.handle, "hvda_mpi_bcast", &s.bcast, &missing);
  Bind(s.handle, "hvda_mpi_allgatherv", &s.allgatherv, &missing);
  Bind(s.handle, "hvda_mpi_alltoallv", &s.alltoallv, &missing);
  Bind(s.handle, "hvda_mpi_reduce_scatter", &s.reduce_scatter, &missing);
  Bind(s.handle, "hvda_mpi_barrier", &s.barrier, &missing);
  Bind(s.handle, "hvda_mpi_error_string", &s.error_string, &missing);
  if (!missing.empty())
    return Status::Precondition("the MPI shim " + path + " lacks " + missing +
                                "; reinstall horovod_accel.");
  *out = std::move(shim);
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
