/* The MPI shim's C ABI (docs/design/mpi.md), shared by the shim
 * (hvda_mpi_shim.c, compiled against one MPI family's mpi.h) and its users:
 * the core's "mpi" CPU backend (csrc/devices/cpu/mpi_shim_table.*, which
 * resolves these symbols with dlsym from the shim Python already loaded) and
 * horovod_accel/common/mpi.py (ctypes). This header must not include mpi.h:
 * nothing but the shim is compiled against an MPI.
 *
 * Conventions:
 *  - communicators are Fortran handles (MPI_Fint: plain ints everywhere);
 *  - every function but hvda_mpi_shim_abi, hvda_mpi_comm_world and
 *    hvda_mpi_supports returns an MPI error code (0 = MPI_SUCCESS);
 *    hvda_mpi_error_string describes one;
 *  - byte and element counts are int64_t: the shim splits what exceeds MPI's
 *    int counts (chunks, or point-to-point in chunks), never truncates;
 *  - collectives block until this rank's part is done, like MPI's.
 *
 * Bump HVDA_MPI_SHIM_ABI on any change of a signature or of the meaning of a
 * code below; both loaders refuse a shim with another number. */
#ifndef HVDA_MPI_SHIM_H_
#define HVDA_MPI_SHIM_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVDA_MPI_SHIM_ABI 2

/* Element types: the core's DataType numbering (csrc/common/dtype.h). */
enum {
  HVDA_MPI_UINT8 = 0,
  HVDA_MPI_INT8 = 1,
  HVDA_MPI_INT16 = 2,
  HVDA_MPI_INT32 = 3,
  HVDA_MPI_INT64 = 4,
  HVDA_MPI_FLOAT16 = 5,  /* no MPI type: unsupported */
  HVDA_MPI_BFLOAT16 = 6, /* no MPI type: unsupported */
  HVDA_MPI_FLOAT32 = 7,
  HVDA_MPI_FLOAT64 = 8,
  HVDA_MPI_BOOL = 9, /* MPI_C_BOOL: no arithmetic reduction */
  HVDA_MPI_UINT16 = 10
};

/* Reductions: the core's ReduceOp numbering (Average and Adasum are not
 * MPI reductions: unsupported). */
enum { HVDA_MPI_SUM = 1, HVDA_MPI_MIN = 3, HVDA_MPI_MAX = 4, HVDA_MPI_PROD = 5 };

int hvda_mpi_shim_abi(void);
int hvda_mpi_library_version(char* out, int out_len);
int hvda_mpi_initialized(int* flag);
int hvda_mpi_finalized(int* flag);
int hvda_mpi_init_thread(int required, int* provided);
int hvda_mpi_query_thread(int* provided);
int hvda_mpi_finalize(void);
int hvda_mpi_abort(int comm, int code);
int hvda_mpi_comm_world(void);
int hvda_mpi_comm_rank(int comm, int* rank);
int hvda_mpi_comm_size(int comm, int* size);
int hvda_mpi_comm_split_shared(int comm, int* out);
int hvda_mpi_comm_split(int comm, int color, int key, int* out);
int hvda_mpi_comm_free(int comm);
int hvda_mpi_bcast_bytes(void* buf, int bytes, int root, int comm);
int hvda_mpi_allgather_bytes(const void* send, void* recv, int bytes, int comm);
int hvda_mpi_barrier(int comm);
int hvda_mpi_error_string(int code, char* out, int out_len);

/* ABI 2: the collectives of the core's "mpi" backend. */

/* A communicator of the n ranks `ranks` (ranks of comm, in the new
 * communicator's order), with MPI_ERRORS_RETURN. Collective over those ranks
 * only (MPI_Comm_create_group): the others do not call it. `tag` tells apart
 * creations that may run concurrently. */
int hvda_mpi_comm_create_group(int comm, const int* ranks, int n, int tag, int* out);

/* 1 when allreduce/reduce_scatter can reduce dtype with op, else 0. */
int hvda_mpi_supports(int dtype, int op);

/* In place (MPI_IN_PLACE): buf holds count elements. MPI_ERR_TYPE /
 * MPI_ERR_OP when !hvda_mpi_supports(dtype, op). */
int hvda_mpi_allreduce(void* buf, int64_t count, int dtype, int op, int comm);

/* root's `bytes` bytes of buf on every rank. */
int hvda_mpi_bcast(void* buf, int64_t bytes, int root, int comm);

/* recv = concatenation over ranks r of recv_bytes[r] bytes of rank r's send
 * (send_bytes == recv_bytes[this rank]); recv must not alias send. */
int hvda_mpi_allgatherv(const void* send, int64_t send_bytes, void* recv,
                        const int64_t* recv_bytes, int comm);

/* send_bytes[r] consecutive bytes of send go to rank r; recv_bytes[r] bytes
 * from rank r land consecutively in recv, in rank order. */
int hvda_mpi_alltoallv(const void* send, const int64_t* send_bytes, void* recv,
                       const int64_t* recv_bytes, int comm);

/* send holds sum(counts) elements; this rank receives the reduction of its
 * segment (counts[rank] elements at offset sum(counts[<rank])) in recv,
 * which must not alias send. */
int hvda_mpi_reduce_scatter(const void* send, void* recv, const int64_t* counts, int dtype,
                            int op, int comm);

#ifdef __cplusplus
}
#endif

#endif /* HVDA_MPI_SHIM_H_ */
