/* The MPI shim: a few MPI calls behind a C ABI that does not depend on the
 * MPI implementation, so the core and the Python package use MPI without
 * being compiled against one (docs/design/mpi.md).
 *
 * Built once per MPI ABI family (Open MPI 4/5: libmpi.so.40; MPICH and its
 * ABI-compatible derivatives: libmpi.so.12) into libhvda_mpi_<flavour>.so;
 * horovod_accel/common/mpi.py picks the one matching the launcher's
 * environment; the core's "mpi" backend calls the same library through
 * dlsym. The ABI (functions, codes, conventions) is hvda_mpi_shim.h.
 *
 * Thread safety: as MPI's. The caller initializes with
 * hvda_mpi_init_thread before anything else (or MPI was initialized by
 * someone else, e.g. mpi4py). */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "hvda_mpi_shim.h"

/* The build compiles this file once per family; make sure the header is
 * the family's (a wrong mpi.h gives a shim with the other ABI). */
#if defined(HVDA_MPI_FLAVOUR_OPENMPI) && !defined(OMPI_MAJOR_VERSION)
#error "the Open MPI shim needs Open MPI's mpi.h (HVDA_OPENMPI_INCLUDE_DIR)"
#endif
#if defined(HVDA_MPI_FLAVOUR_MPICH) && !defined(MPICH_VERSION)
#error "the MPICH shim needs MPICH's mpi.h (HVDA_MPICH_INCLUDE_DIR)"
#endif

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

/* ------------------------------------------------------------------ ABI 2 */

/* Largest piece one MPI call moves when a count exceeds MPI's int counts
 * (bytes, or elements for reductions). */
#define HVDA_CHUNK ((int64_t)1 << 30)

static MPI_Comm Comm(int comm) { return MPI_Comm_f2c((MPI_Fint)comm); }

static MPI_Datatype Type(int dtype) {
  switch (dtype) {
    case HVDA_MPI_UINT8: return MPI_UINT8_T;
    case HVDA_MPI_INT8: return MPI_INT8_T;
    case HVDA_MPI_INT16: return MPI_INT16_T;
    case HVDA_MPI_UINT16: return MPI_UINT16_T;
    case HVDA_MPI_INT32: return MPI_INT32_T;
    case HVDA_MPI_INT64: return MPI_INT64_T;
    case HVDA_MPI_FLOAT32: return MPI_FLOAT;
    case HVDA_MPI_FLOAT64: return MPI_DOUBLE;
    case HVDA_MPI_BOOL: return MPI_C_BOOL;
    default: return MPI_DATATYPE_NULL; /* float16, bfloat16, unknown */
  }
}

static int TypeSize(int dtype) {
  switch (dtype) {
    case HVDA_MPI_UINT8: case HVDA_MPI_INT8: case HVDA_MPI_BOOL: return 1;
    case HVDA_MPI_INT16: case HVDA_MPI_UINT16: return 2;
    case HVDA_MPI_INT32: case HVDA_MPI_FLOAT32: return 4;
    case HVDA_MPI_INT64: case HVDA_MPI_FLOAT64: return 8;
    default: return 0;
  }
}

static MPI_Op Op(int op) {
  switch (op) {
    case HVDA_MPI_SUM: return MPI_SUM;
    case HVDA_MPI_MIN: return MPI_MIN;
    case HVDA_MPI_MAX: return MPI_MAX;
    case HVDA_MPI_PROD: return MPI_PROD;
    default: return MPI_OP_NULL; /* Average, Adasum */
  }
}

HVDA_EXPORT int hvda_mpi_supports(int dtype, int op) {
  /* bool has only logical reductions in MPI, which the core never asks for. */
  return dtype != HVDA_MPI_BOOL && Type(dtype) != MPI_DATATYPE_NULL && Op(op) != MPI_OP_NULL;
}

HVDA_EXPORT int hvda_mpi_comm_create_group(int comm, const int* ranks, int n, int tag, int* out) {
  MPI_Group all = MPI_GROUP_NULL, sub = MPI_GROUP_NULL;
  MPI_Comm c = MPI_COMM_NULL;
  int rc = MPI_Comm_group(Comm(comm), &all);
  if (rc == MPI_SUCCESS) rc = MPI_Group_incl(all, n, ranks, &sub);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(Comm(comm), sub, tag, &c);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  if (sub != MPI_GROUP_NULL) MPI_Group_free(&sub);
  if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
  *out = (int)MPI_Comm_c2f(c);
  return rc;
}

HVDA_EXPORT int hvda_mpi_allreduce(void* buf, int64_t count, int dtype, int op, int comm) {
  if (!hvda_mpi_supports(dtype, op)) return Type(dtype) == MPI_DATATYPE_NULL ? MPI_ERR_TYPE : MPI_ERR_OP;
  char* p = (char*)buf;
  for (int64_t done = 0; done < count;) {
    int64_t n = count - done < HVDA_CHUNK ? count - done : HVDA_CHUNK;
    int rc = MPI_Allreduce(MPI_IN_PLACE, p + done * TypeSize(dtype), (int)n, Type(dtype), Op(op),
                           Comm(comm));
    if (rc != MPI_SUCCESS) return rc;
    done += n;
  }
  return MPI_SUCCESS;
}

HVDA_EXPORT int hvda_mpi_bcast(void* buf, int64_t bytes, int root, int comm) {
  char* p = (char*)buf;
  for (int64_t done = 0; done < bytes;) {
    int64_t n = bytes - done < HVDA_CHUNK ? bytes - done : HVDA_CHUNK;
    int rc = MPI_Bcast(p + done, (int)n, MPI_BYTE, root, Comm(comm));
    if (rc != MPI_SUCCESS) return rc;
    done += n;
  }
  return MPI_SUCCESS;
}

/* Whether counts and their running offsets all fit MPI's int arguments. */
static int FitsInt(const int64_t* counts, int n) {
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (counts[r] < 0 || counts[r] > INT_MAX) return 0;
    total += counts[r];
    if (total > INT_MAX) return 0;
  }
  return 1;
}

/* int counts and displacements (caller checked FitsInt); malloc'ed, 2n ints. */
static int* IntCounts(const int64_t* counts, int n) {
  int* out = (int*)malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
  if (out == NULL) return NULL;
  int off = 0;
  for (int r = 0; r < n; ++r) {
    out[r] = (int)counts[r];
    out[n + r] = off;
    off += (int)counts[r];
  }
  return out;
}

HVDA_EXPORT int hvda_mpi_allgatherv(const void* send, int64_t send_bytes, void* recv,
                                    const int64_t* recv_bytes, int comm) {
  int size = 0, rank = 0;
  int rc = MPI_Comm_size(Comm(comm), &size);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(Comm(comm), &rank);
  if (rc != MPI_SUCCESS) return rc;
  if (FitsInt(recv_bytes, size)) {
    int* c = IntCounts(recv_bytes, size);
    if (c == NULL) return MPI_ERR_NO_MEM;
    rc = MPI_Allgatherv(send, (int)send_bytes, MPI_BYTE, recv, c, c + size, MPI_BYTE, Comm(comm));
    free(c);
    return rc;
  }
  /* Over 2 GiB in all: each rank broadcasts its block, in chunks. */
  char* out = (char*)recv;
  int64_t off = 0;
  for (int r = 0; r < size; ++r) {
    if (r == rank && recv_bytes[r] > 0) memcpy(out + off, send, (size_t)recv_bytes[r]);
    rc = hvda_mpi_bcast(out + off, recv_bytes[r], r, comm);
    if (rc != MPI_SUCCESS) return rc;
    off += recv_bytes[r];
  }
  return MPI_SUCCESS;
}

/* alltoallv of sizes beyond int: every pair exchanges its bytes as chunked
 * nonblocking sends and receives (matched in order: MPI does not overtake). */
static int AlltoallvChunked(const char* send, const int64_t* send_bytes, char* recv,
                            const int64_t* recv_bytes, int size, MPI_Comm comm) {
  int64_t nreq = 0;
  for (int r = 0; r < size; ++r)
    nreq += (send_bytes[r] + HVDA_CHUNK - 1) / HVDA_CHUNK + (recv_bytes[r] + HVDA_CHUNK - 1) / HVDA_CHUNK;
  MPI_Request* reqs = (MPI_Request*)malloc(sizeof(MPI_Request) * (size_t)(nreq > 0 ? nreq : 1));
  if (reqs == NULL) return MPI_ERR_NO_MEM;
  int rc = MPI_SUCCESS;
  int64_t k = 0, soff = 0, roff = 0;
  for (int r = 0; r < size && rc == MPI_SUCCESS; ++r) {
    for (int64_t d = 0; d < recv_bytes[r] && rc == MPI_SUCCESS; d += HVDA_CHUNK) {
      int64_t n = recv_bytes[r] - d < HVDA_CHUNK ? recv_bytes[r] - d : HVDA_CHUNK;
      rc = MPI_Irecv(recv + roff + d, (int)n, MPI_BYTE, r, 0, comm, &reqs[k++]);
    }
    roff += recv_bytes[r];
  }
  for (int r = 0; r < size && rc == MPI_SUCCESS; ++r) {
    for (int64_t d = 0; d < send_bytes[r] && rc == MPI_SUCCESS; d += HVDA_CHUNK) {
      int64_t n = send_bytes[r] - d < HVDA_CHUNK ? send_bytes[r] - d : HVDA_CHUNK;
      rc = MPI_Isend(send + soff + d, (int)n, MPI_BYTE, r, 0, comm, &reqs[k++]);
    }
    soff += send_bytes[r];
  }
  /* Statuses are not needed, but MPI_STATUSES_IGNORE trips GCC's access
   * checks on some mpi.h. */
  MPI_Status* st = (MPI_Status*)malloc(sizeof(MPI_Status) * (size_t)(k > 0 ? k : 1));
  int wrc = st == NULL ? MPI_ERR_NO_MEM : MPI_Waitall((int)k, reqs, st);
  free(st);
  free(reqs);
  return rc != MPI_SUCCESS ? rc : wrc;
}

HVDA_EXPORT int hvda_mpi_alltoallv(const void* send, const int64_t* send_bytes, void* recv,
                                   const int64_t* recv_bytes, int comm) {
  int size = 0;
  int rc = MPI_Comm_size(Comm(comm), &size);
  if (rc != MPI_SUCCESS) return rc;
  if (!FitsInt(send_bytes, size) || !FitsInt(recv_bytes, size))
    return AlltoallvChunked((const char*)send, send_bytes, (char*)recv, recv_bytes, size,
                            Comm(comm));
  int* s = IntCounts(send_bytes, size);
  int* r = IntCounts(recv_bytes, size);
  rc = (s == NULL || r == NULL)
           ? MPI_ERR_NO_MEM
           : MPI_Alltoallv(send, s, s + size, MPI_BYTE, recv, r, r + size, MPI_BYTE, Comm(comm));
  free(s);
  free(r);
  return rc;
}

HVDA_EXPORT int hvda_mpi_reduce_scatter(const void* send, void* recv, const int64_t* counts,
                                        int dtype, int op, int comm) {
  if (!hvda_mpi_supports(dtype, op)) return Type(dtype) == MPI_DATATYPE_NULL ? MPI_ERR_TYPE : MPI_ERR_OP;
  int size = 0, rank = 0;
  int rc = MPI_Comm_size(Comm(comm), &size);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(Comm(comm), &rank);
  if (rc != MPI_SUCCESS) return rc;
  if (FitsInt(counts, size)) {
    int* c = IntCounts(counts, size);
    if (c == NULL) return MPI_ERR_NO_MEM;
    rc = MPI_Reduce_scatter(send, recv, c, Type(dtype), Op(op), Comm(comm));
    free(c);
    return rc;
  }
  /* Over INT_MAX elements in all: rank r's segment is reduced onto r, in
   * chunks. */
  const char* in = (const char*)send;
  const int64_t esize = TypeSize(dtype);
  int64_t off = 0;
  for (int r = 0; r < size; ++r) {
    for (int64_t d = 0; d < counts[r]; d += HVDA_CHUNK) {
      int64_t n = counts[r] - d < HVDA_CHUNK ? counts[r] - d : HVDA_CHUNK;
      char* out = r == rank ? (char*)recv + d * esize : NULL;
      rc = MPI_Reduce(in + (off + d) * esize, out, (int)n, Type(dtype), Op(op), r, Comm(comm));
      if (rc != MPI_SUCCESS) return rc;
    }
    off += counts[r];
  }
  return MPI_SUCCESS;
}
