/* The MPI shim: a few MPI calls behind a C ABI that does not depend on the
 * MPI implementation, so the core and the Python package use MPI without
 * being compiled against one (docs/design/mpi.md).
 *
 * Built once per MPI ABI family (Open MPI 4/5: libmpi.so.40; MPICH and its
 * ABI-compatible derivatives: libmpi.so.12) into libhvda_mpi_<flavour>.so;
 * horovod_accel/common/mpi.py picks the one matching the launcher's
 * environment. Communicators cross the boundary as Fortran handles
 * (MPI_Fint, what mpi4py's Comm.py2f() returns), which are plain integers in
 * every implementation. Every function returns an MPI error code (0 =
 * MPI_SUCCESS); hvda_mpi_error_string describes one.
 *
 * Thread safety: as MPI's. The caller initializes with
 * hvda_mpi_init_thread before anything else (or MPI was initialized by
 * someone else, e.g. mpi4py). */
#include <mpi.h>
#include <string.h>

/* The build compiles this file once per family; make sure the header is
 * the family's (a wrong mpi.h gives a shim with the other ABI). */
#if defined(HVDA_MPI_FLAVOUR_OPENMPI) && !defined(OMPI_MAJOR_VERSION)
#error "the Open MPI shim needs Open MPI's mpi.h (HVDA_OPENMPI_INCLUDE_DIR)"
#endif
#if defined(HVDA_MPI_FLAVOUR_MPICH) && !defined(MPICH_VERSION)
#error "the MPICH shim needs MPICH's mpi.h (HVDA_MPICH_INCLUDE_DIR)"
#endif

#define HVDA_MPI_SHIM_ABI 1

#if defined(__GNUC__)
#define HVDA_EXPORT __attribute__((visibility("default")))
#else
#define HVDA_EXPORT
#endif

HVDA_EXPORT int hvda_mpi_shim_abi(void) { return HVDA_MPI_SHIM_ABI; }

/* The implementation's name and version (MPI_Get_library_version). */
HVDA_EXPORT int hvda_mpi_library_version(char* out, int out_len) {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  int rc = MPI_Get_library_version(buf, &len);
  if (rc != MPI_SUCCESS || out_len <= 0) return rc;
  if (len >= out_len) len = out_len - 1;
  memcpy(out, buf, (size_t)len);
  out[len] = '\0';
  return MPI_SUCCESS;
}

HVDA_EXPORT int hvda_mpi_initialized(int* flag) { return MPI_Initialized(flag); }
HVDA_EXPORT int hvda_mpi_finalized(int* flag) { return MPI_Finalized(flag); }

/* required: 0 single, 1 funneled, 2 serialized, 3 multiple (MPI's order). */
static int ThreadLevel(int level) {
  switch (level) {
    case 0: return MPI_THREAD_SINGLE;
    case 1: return MPI_THREAD_FUNNELED;
    case 2: return MPI_THREAD_SERIALIZED;
    default: return MPI_THREAD_MULTIPLE;
  }
}

static int LevelIndex(int provided) {
  if (provided == MPI_THREAD_MULTIPLE) return 3;
  if (provided == MPI_THREAD_SERIALIZED) return 2;
  if (provided == MPI_THREAD_FUNNELED) return 1;
  return 0;
}

HVDA_EXPORT int hvda_mpi_init_thread(int required, int* provided) {
  int p = MPI_THREAD_SINGLE;
  int rc = MPI_Init_thread(NULL, NULL, ThreadLevel(required), &p);
  *provided = LevelIndex(p);
  return rc;
}

/* The thread level MPI runs at (also when someone else initialized it). */
HVDA_EXPORT int hvda_mpi_query_thread(int* provided) {
  int p = MPI_THREAD_SINGLE;
  int rc = MPI_Query_thread(&p);
  *provided = LevelIndex(p);
  return rc;
}

HVDA_EXPORT int hvda_mpi_finalize(void) { return MPI_Finalize(); }

HVDA_EXPORT int hvda_mpi_abort(int comm, int code) {
  return MPI_Abort(MPI_Comm_f2c((MPI_Fint)comm), code);
}

HVDA_EXPORT int hvda_mpi_comm_world(void) { return (int)MPI_Comm_c2f(MPI_COMM_WORLD); }

HVDA_EXPORT int hvda_mpi_comm_rank(int comm, int* rank) {
  return MPI_Comm_rank(MPI_Comm_f2c((MPI_Fint)comm), rank);
}

HVDA_EXPORT int hvda_mpi_comm_size(int comm, int* size) {
  return MPI_Comm_size(MPI_Comm_f2c((MPI_Fint)comm), size);
}

/* The ranks of comm that share memory with this one (one host). */
HVDA_EXPORT int hvda_mpi_comm_split_shared(int comm, int* out) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_split_type(MPI_Comm_f2c((MPI_Fint)comm), MPI_COMM_TYPE_SHARED, 0,
                               MPI_INFO_NULL, &c);
  *out = (int)MPI_Comm_c2f(c);
  return rc;
}

HVDA_EXPORT int hvda_mpi_comm_split(int comm, int color, int key, int* out) {
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_split(MPI_Comm_f2c((MPI_Fint)comm), color, key, &c);
  *out = (int)MPI_Comm_c2f(c);
  return rc;
}

HVDA_EXPORT int hvda_mpi_comm_free(int comm) {
  MPI_Comm c = MPI_Comm_f2c((MPI_Fint)comm);
  return MPI_Comm_free(&c);
}

HVDA_EXPORT int hvda_mpi_bcast_bytes(void* buf, int bytes, int root, int comm) {
  return MPI_Bcast(buf, bytes, MPI_BYTE, root, MPI_Comm_f2c((MPI_Fint)comm));
}

/* Each rank's `bytes` bytes, in rank order, into recv (size * bytes). */
HVDA_EXPORT int hvda_mpi_allgather_bytes(const void* send, void* recv, int bytes, int comm) {
  return MPI_Allgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE,
                       MPI_Comm_f2c((MPI_Fint)comm));
}

HVDA_EXPORT int hvda_mpi_barrier(int comm) { return MPI_Barrier(MPI_Comm_f2c((MPI_Fint)comm)); }

HVDA_EXPORT int hvda_mpi_error_string(int code, char* out, int out_len) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  int rc = MPI_Error_string(code, buf, &len);
  if (rc != MPI_SUCCESS || out_len <= 0) return rc;
  if (len >= out_len) len = out_len - 1;
  memcpy(out, buf, (size_t)len);
  out[len] = '\0';
  return MPI_SUCCESS;
}
