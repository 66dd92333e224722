// The MPI shim's functions (csrc/mpi/hvda_mpi_shim.h) as seen by the core:
// resolved with dlsym from the shim library that horovod_accel/common/mpi.py
// already loaded into this process, after the launcher's libmpi. The core is
// never compiled or linked against an MPI.
//
// Ownership: a table holds a reference to the library (dlopen RTLD_NOLOAD)
// and drops it when the last shared_ptr goes; the functions are then invalid.
// Thread safety: the table is immutable; the functions are MPI's.
#pragma once

#include <memory>
#include <string>

#include "common/util/status.h"
#include "mpi/hvda_mpi_shim.h"

namespace hvda {
namespace cpu {

struct MpiShim {
  ~MpiShim();
  void* handle = nullptr;  // dlopen handle of the shim
  std::string path;
  decltype(&hvda_mpi_finalized) finalized = nullptr;
  decltype(&hvda_mpi_comm_rank) comm_rank = nullptr;
  decltype(&hvda_mpi_comm_size) comm_size = nullptr;
  decltype(&hvda_mpi_comm_create_group) comm_create_group = nullptr;
  decltype(&hvda_mpi_comm_free) comm_free = nullptr;
  decltype(&hvda_mpi_supports) supports = nullptr;
  decltype(&hvda_mpi_allreduce) allreduce = nullptr;
  decltype(&hvda_mpi_bcast) bcast = nullptr;
  decltype(&hvda_mpi_allgatherv) allgatherv = nullptr;
  decltype(&hvda_mpi_alltoallv) alltoallv = nullptr;
  decltype(&hvda_mpi_reduce_scatter) reduce_scatter = nullptr;
  decltype(&hvda_mpi_barrier) barrier = nullptr;
  decltype(&hvda_mpi_error_string) error_string = nullptr;

  // "<what> failed: <MPI's description> (MPI error <code>)".
  std::string Describe(const char* what, int code) const;
};

// Binds the shim at `path`, which must already be loaded in this process
// (by hvd.init() under mpirun) and have ABI HVDA_MPI_SHIM_ABI. Errors say
// what to do.
Status LoadMpiShim(const std::string& path, std::shared_ptr<const MpiShim>* out);

}  // namespace cpu
}  // namespace hvda
