// JobSpec: everything one init() needs to know about the job, passed to the
// core explicitly (Runtime::Init): who this rank is, how to reach the
// rendezvous store, which elastic round it joins, the job's MPI under
// mpirun, and the core's settings. The launcher-set fields are
// HVDA_JOB_SETTINGS of settings_table.h; the Python edge (init(),
// horovod_accel/common/job.py) reads them from the environment, the MPI
// bootstrap or the elastic driver's assignment. A value type; the
// generation made from it keeps its own copy.
#pragma once

#include <cstdint>
#include <string>

#include "common/util/settings.h"

namespace hvda {

// Who this rank is in the job.
struct Topology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
};

struct JobSpec {
  Topology topo;
  // The rendezvous store (horovodrun's, or rank 0's under the MPI bootstrap);
  // empty / -1: none, which only a job of size 1 may lack (it uses an
  // in-memory store).
  std::string store_addr;
  int store_port = -1;
  std::string secret;  // the store checks it on every message
  // > 0 in an elastic job: the driver's round number, which prefixes the
  // generation's store keys (NOTE [Elastic rounds]).
  int64_t elastic_round = 0;
  // Under mpirun: the MPI shim loaded in this process and the Fortran handle
  // of the communicator whose rank i is Horovod rank i (mpi backend and
  // controller). mpi_shim empty: not an MPI job (mpi_comm is then unused; 0
  // is a valid handle: Open MPI's MPI_COMM_WORLD).
  std::string mpi_shim;
  int64_t mpi_comm = 0;
  Settings settings;

  bool has_mpi() const { return !mpi_shim.empty(); }
};

}  // namespace hvda
