/* A stand-in for the MPI shim (csrc/mpi/hvda_mpi_shim.h), built by CMake in
 * a few variants to test how the core binds a shim
 * (tests/cpp/mpi_shim_table_test.cc). No MPI: every function answers a fixed
 * value; hvda_mpi_error_string describes code c as "fixture error c".
 *
 * Variants (compile definitions):
 *   FIXTURE_SHIM_ABI=N     hvda_mpi_shim_abi() returns N
 *   FIXTURE_SHIM_PARTIAL   leaves out hvda_mpi_barrier and hvda_mpi_bcast
 */
#include <stdio.h>

#include "mpi/hvda_mpi_shim.h"

#ifndef FIXTURE_SHIM_ABI
#define FIXTURE_SHIM_ABI HVDA_MPI_SHIM_ABI
#endif

int hvda_mpi_shim_abi(void) { return FIXTURE_SHIM_ABI; }
int hvda_mpi_finalized(int* flag) { *flag = 0; return 0; }
int hvda_mpi_comm_rank(int comm, int* rank) { *rank = 1; return 0; }
int hvda_mpi_comm_size(int comm, int* size) { *size = 4; return 0; }
int hvda_mpi_comm_create_group(int comm, const int* ranks, int n, int tag, int* out) { return 1; }
int hvda_mpi_comm_free(int comm) { return 0; }
int hvda_mpi_supports(int dtype, int op) { return dtype == HVDA_MPI_FLOAT32; }
int hvda_mpi_allreduce(void* buf, int64_t count, int dtype, int op, int comm) { return 0; }
int hvda_mpi_allgatherv(const void* send, int64_t send_bytes, void* recv,
                        const int64_t* recv_bytes, int comm) { return 0; }
int hvda_mpi_alltoallv(const void* send, const int64_t* send_bytes, void* recv,
                       const int64_t* recv_bytes, int comm) { return 0; }
int hvda_mpi_reduce_scatter(const void* send, void* recv, const int64_t* counts, int dtype,
                            int op, int comm) { return 0; }
#ifndef FIXTURE_SHIM_PARTIAL
int hvda_mpi_bcast(void* buf, int64_t bytes, int root, int comm) { return 0; }
int hvda_mpi_barrier(int comm) { return 0; }
#endif

int hvda_mpi_error_string(int code, char* out, int out_len) {
  if (code < 0) return 1; /* "no description": the core says "unknown error" */
  snprintf(out, (size_t)out_len, "fixture error %d", code);
  return 0;
}
