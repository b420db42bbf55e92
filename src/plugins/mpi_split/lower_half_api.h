/* The one interface between the two halves of a split MPI process (README.md).
 *
 * The lower half (lower_half.c, built once per MPI library with that library's own compiler
 * wrapper into stasis_mpi_lower_<impl>.so) exports stasis_mpi_lower_interface(), which returns
 * this table. Handles cross it as StasisMpiRealHandle: the library's own handle widened to 64
 * bits (a pointer in Open MPI, an int in MPICH); the upper half stores them in its virtual-id
 * tables and never looks inside. Statuses cross as StasisMpiLowerStatus. Predefined objects are
 * named by their index in abi/stasis_mpi_predefined.h. Every function returns MPI_SUCCESS (0) or
 * the library's own error code. */
#ifndef STASIS_MPI_LOWER_HALF_API_H
#define STASIS_MPI_LOWER_HALF_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t StasisMpiRealHandle;

typedef struct StasisMpiLowerStatus {
  int source;
  int tag;
  int error;
  int cancelled;
  long long bytes;
} StasisMpiLowerStatus;

/* Stands for MPI_IN_PLACE in buffers handed down (the library's own value differs). */
#define STASIS_MPI_LOWER_IN_PLACE ((void *)1)

#define STASIS_MPI_LOWER_INTERFACE_VERSION 10

/* An address range [start, end) the lower half owns (inventory below). */
typedef struct StasisMpiLowerRange {
  uint64_t start, end;
} StasisMpiLowerRange;

/* The nonblocking collectives beyond the four above, as one call (icollective): which one, and its
 * arguments as the standard names them (counts and displacements point into the program's
 * memory, valid until the request completes). Buffers may be STASIS_MPI_LOWER_IN_PLACE. */
enum StasisMpiLowerCollectiveKind {
  STASIS_MPI_LOWER_GATHER,
  STASIS_MPI_LOWER_GATHERV,
  STASIS_MPI_LOWER_SCATTER,
  STASIS_MPI_LOWER_SCATTERV,
  STASIS_MPI_LOWER_ALLGATHER,
  STASIS_MPI_LOWER_ALLGATHERV,
  STASIS_MPI_LOWER_ALLTOALL,
  STASIS_MPI_LOWER_ALLTOALLV,
  STASIS_MPI_LOWER_REDUCE_SCATTER,
  STASIS_MPI_LOWER_REDUCE_SCATTER_BLOCK,
  STASIS_MPI_LOWER_SCAN,
  STASIS_MPI_LOWER_EXSCAN,
};
typedef struct StasisMpiLowerCollective {
  int kind; /* enum StasisMpiLowerCollectiveKind */
  const void *sendbuf;
  void *recvbuf;
  int sendcount, recvcount, root;
  const int *sendcounts, *sdispls, *recvcounts, *rdispls;
  StasisMpiRealHandle sendtype, recvtype, op, comm; /* a reduction's datatype is sendtype */
} StasisMpiLowerCollective;

/* One-sided communication (RMA, upper_rma.c): the epoch calls as one (win_epoch), which one and
 * its arguments; lock types and assertions in Open MPI's values (abi/mpi.h), converted below. */
enum StasisMpiLowerEpochKind {
  STASIS_MPI_LOWER_FENCE,         /* assert */
  STASIS_MPI_LOWER_LOCK,          /* lock_type, target, assert */
  STASIS_MPI_LOWER_UNLOCK,        /* target */
  STASIS_MPI_LOWER_LOCK_ALL,      /* assert */
  STASIS_MPI_LOWER_UNLOCK_ALL,
  STASIS_MPI_LOWER_FLUSH,         /* target */
  STASIS_MPI_LOWER_FLUSH_ALL,
  STASIS_MPI_LOWER_FLUSH_LOCAL,   /* target */
  STASIS_MPI_LOWER_FLUSH_LOCAL_ALL,
  STASIS_MPI_LOWER_SYNC,
};
/* The RMA operations as one (win_access): which one and its arguments as the standard names
 * them (origin, result and compare buffers are the program's memory). */
enum StasisMpiLowerAccessKind {
  STASIS_MPI_LOWER_PUT,
  STASIS_MPI_LOWER_GET,
  STASIS_MPI_LOWER_ACCUMULATE,
  STASIS_MPI_LOWER_GET_ACCUMULATE,
  STASIS_MPI_LOWER_FETCH_AND_OP,    /* origin, result, origin_type, target, target_disp, op */
  STASIS_MPI_LOWER_COMPARE_AND_SWAP, /* origin, compare, result, origin_type, target, target_disp */
};
typedef struct StasisMpiLowerAccess {
  int kind; /* enum StasisMpiLowerAccessKind */
  const void *origin;
  void *result;
  const void *compare;
  int origin_count, result_count, target_count, target;
  long target_disp;
  StasisMpiRealHandle origin_type, result_type, target_type, op, win;
} StasisMpiLowerAccess;

typedef struct StasisMpiLower {
  uint32_t interface_version; /* STASIS_MPI_LOWER_INTERFACE_VERSION */
  const char *implementation; /* "openmpi", "mpich": for messages */

  int (*init_thread)(int *argc, char ***argv, int required, int *provided);
  int (*finalize)(void);
  int (*abort)(StasisMpiRealHandle comm, int errorcode);
  double (*wtime)(void);
  int (*get_processor_name)(char *name, int *length);
  int (*get_library_version)(char *version, int *length);

  /* The library's object for predefined index `index` of each kind; 0 when out of range. */
  StasisMpiRealHandle (*predefined)(int kind, int index);

  int (*comm_rank)(StasisMpiRealHandle comm, int *rank);
  int (*comm_size)(StasisMpiRealHandle comm, int *size);
  int (*comm_dup)(StasisMpiRealHandle comm, StasisMpiRealHandle *made);
  /* *made is the library's COMM_NULL where color was MPI_UNDEFINED (-32766). */
  int (*comm_split)(StasisMpiRealHandle comm, int color, int key, StasisMpiRealHandle *made);
  /* *made is the library's COMM_NULL where this rank is not in group. */
  int (*comm_create)(StasisMpiRealHandle comm, StasisMpiRealHandle group, StasisMpiRealHandle *made);
  int (*comm_free)(StasisMpiRealHandle comm);
  int (*comm_group)(StasisMpiRealHandle comm, StasisMpiRealHandle *made);
  int (*group_size)(StasisMpiRealHandle group, int *size);
  int (*group_rank)(StasisMpiRealHandle group, int *rank); /* MPI_UNDEFINED as -32766 */
  int (*group_free)(StasisMpiRealHandle group);
  /* ranks[i] = the rank in `world` of rank i of `comm`, for i < size (comm's size). */
  int (*comm_world_ranks)(StasisMpiRealHandle comm, StasisMpiRealHandle world, int *ranks, int size);

  int (*type_contiguous)(int count, StasisMpiRealHandle old, StasisMpiRealHandle *made);
  int (*type_vector)(int count, int blocklength, int stride, StasisMpiRealHandle old, StasisMpiRealHandle *made);
  int (*type_commit)(StasisMpiRealHandle type);
  int (*type_free)(StasisMpiRealHandle type);
  int (*type_size)(StasisMpiRealHandle type, int *size);

  /* Peer ranks and tags use the standard's values (MPI_ANY_SOURCE -1, MPI_ANY_TAG -1,
   * MPI_PROC_NULL -2): the lower half translates them. status may be 0 (ignored). */
  int (*send)(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag, StasisMpiRealHandle comm);
  int (*recv)(void *buf, int count, StasisMpiRealHandle type, int source, int tag, StasisMpiRealHandle comm,
              StasisMpiLowerStatus *status);
  int (*sendrecv)(const void *sendbuf, int sendcount, StasisMpiRealHandle sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, StasisMpiRealHandle recvtype, int source, int recvtag,
                  StasisMpiRealHandle comm, StasisMpiLowerStatus *status);
  int (*isend)(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag, StasisMpiRealHandle comm,
               StasisMpiRealHandle *request);
  int (*irecv)(void *buf, int count, StasisMpiRealHandle type, int source, int tag, StasisMpiRealHandle comm,
               StasisMpiRealHandle *request);
  /* Synchronous and buffered sends; the buffer MPI_Bsend copies into is the program's (upper-half
   * memory), attached again after a restart. */
  int (*issend)(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag, StasisMpiRealHandle comm,
                StasisMpiRealHandle *request);
  int (*bsend)(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag, StasisMpiRealHandle comm);
  int (*buffer_attach)(void *buffer, int size);
  int (*buffer_detach)(void *buffer_address, int *size);
  /* Completes *request and sets it to the library's REQUEST_NULL. recv_type is the datatype of
   * a receive (the status counts its bytes with it), 0 for a send. */
  int (*wait)(StasisMpiRealHandle *request, StasisMpiRealHandle recv_type, StasisMpiLowerStatus *status);
  /* Whether *request is complete (*flag); when it is, sets it to the library's REQUEST_NULL and
   * fills status as wait does. The upper half's blocking calls are these in a loop (README.md,
   * Safe points inside blocking calls). */
  int (*test)(StasisMpiRealHandle *request, StasisMpiRealHandle recv_type, int *flag, StasisMpiLowerStatus *status);
  /* Asks the library to cancel *request; a wait then completes it, status->cancelled telling. */
  int (*cancel)(StasisMpiRealHandle *request);

  /* The drain's three: whether a message waits on `comm` (*flag; status->bytes counted as
   * MPI_PACKED), receive it as MPI_PACKED, and unpack such bytes with a receive's datatype
   * (*unpacked: bytes taken; MPI_ERR_TRUNCATE-like failure when they exceed count elements). */
  int (*iprobe)(int source, int tag, StasisMpiRealHandle comm, int *flag, StasisMpiLowerStatus *status);
  int (*recv_packed)(void *buf, int bytes, int source, int tag, StasisMpiRealHandle comm,
                     StasisMpiLowerStatus *status);
  int (*unpack)(const void *packed, int bytes, void *buf, int count, StasisMpiRealHandle type,
                StasisMpiRealHandle comm);

  int (*barrier)(StasisMpiRealHandle comm);
  int (*bcast)(void *buf, int count, StasisMpiRealHandle type, int root, StasisMpiRealHandle comm);
  int (*allreduce)(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type, StasisMpiRealHandle op,
                   StasisMpiRealHandle comm);
  int (*reduce)(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type, StasisMpiRealHandle op,
                int root, StasisMpiRealHandle comm);
  /* The nonblocking collectives the upper half's blocking ones are made of (test completes them). */
  int (*ibarrier)(StasisMpiRealHandle comm, StasisMpiRealHandle *request);
  int (*ibcast)(void *buf, int count, StasisMpiRealHandle type, int root, StasisMpiRealHandle comm,
                StasisMpiRealHandle *request);
  int (*iallreduce)(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type, StasisMpiRealHandle op,
                    StasisMpiRealHandle comm, StasisMpiRealHandle *request);
  int (*ireduce)(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type, StasisMpiRealHandle op,
                 int root, StasisMpiRealHandle comm, StasisMpiRealHandle *request);
  int (*reduce_scatter_block)(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type,
                              StasisMpiRealHandle op, StasisMpiRealHandle comm);
  int (*icollective)(const StasisMpiLowerCollective *collective, StasisMpiRealHandle *request);

  /* What a checkpoint leaves out (lower_inventory.h): the ranges this half mapped, sorted and
   * disjoint, page-aligned, and the threads its libc runs. Returns 0, or -1 when the lists do not
   * fit or this half lost track (then nothing may be left out). NULL when the lower half was
   * loaded into the program (one libc: nothing of it can be told apart). */
  int (*inventory)(StasisMpiLowerRange *ranges, int range_capacity, int *range_count, int *tids, int tid_capacity,
                   int *tid_count);
  /* The descriptors this half holds, in order; 0, or -1 when they do not fit or this half lost
   * track. NULL as above. */
  int (*descriptors)(int *fds, int capacity, int *count);
  /* Called by every thread this half starts, first with (its tid, 1), last with (its tid, 0): the
   * upper half exempts them from the checkpoint's stop (stasis_plugin_exempt_thread). Set before
   * init_thread. NULL as above. */
  void (*set_thread_hook)(int (*hook)(int tid, int exempt));

  /* mpirma (one-sided communication, upper_rma.c). win_create over memory of the upper half
   * (*model: 1 when the library says MPI_WIN_UNIFIED); win_free sets *win to 0. */
  int (*win_create)(void *base, long size, int disp_unit, StasisMpiRealHandle comm, StasisMpiRealHandle *win,
                    int *model);
  int (*win_free)(StasisMpiRealHandle *win);
  int (*win_epoch)(int kind, int lock_type, int target, int assert, StasisMpiRealHandle win);
  int (*win_access)(const StasisMpiLowerAccess *access);
  /* The windows whose memory or layout the library owns: served, never checkpointed. */
  int (*win_allocate_shared)(long size, int disp_unit, StasisMpiRealHandle comm, void *baseptr,
                             StasisMpiRealHandle *win);
  int (*win_shared_query)(StasisMpiRealHandle win, int rank, long *size, int *disp_unit, void *baseptr);
  int (*win_create_dynamic)(StasisMpiRealHandle comm, StasisMpiRealHandle *win);
  int (*win_attach)(StasisMpiRealHandle win, void *base, long size);
  int (*win_detach)(StasisMpiRealHandle win, const void *base);
  /* Intercommunicators (mpiinter, upper_intercomm.c). peer is significant at local_leader only
   * (the library's COMM_NULL elsewhere); intercomm_merge is collective over both groups.
   * comm_remote_world_ranks: ranks[i] = the rank in `world` of rank i of comm's remote group. */
  int (*intercomm_create)(StasisMpiRealHandle local, int local_leader, StasisMpiRealHandle peer, int remote_leader,
                          int tag, StasisMpiRealHandle *made);
  int (*intercomm_merge)(StasisMpiRealHandle intercomm, int high, StasisMpiRealHandle *made);
  int (*comm_test_inter)(StasisMpiRealHandle comm, int *flag);
  int (*comm_remote_size)(StasisMpiRealHandle comm, int *size);
  int (*comm_remote_group)(StasisMpiRealHandle comm, StasisMpiRealHandle *made);
  int (*comm_remote_world_ranks)(StasisMpiRealHandle comm, StasisMpiRealHandle world, int *ranks, int size);
  /* Part "mpiops" (issue 17: user operations, struct datatypes, groups made from ranks;
   * lower_ops_types.c). A user operation is trampoline `slot` (< STASIS_MPI_LOWER_OP_SLOTS),
   * which calls `callback` with the slot and the library's datatype handle. */
  int (*op_create)(int slot, int commute, void (*callback)(int slot, void *in, void *inout, int *length,
                                                           StasisMpiRealHandle type),
                   StasisMpiRealHandle *made);
  int (*op_free)(StasisMpiRealHandle op);
  int (*type_create_struct)(int count, const int *blocklengths, const int64_t *displacements,
                            const StasisMpiRealHandle *types, StasisMpiRealHandle *made);
  /* MPI_Group_incl (exclude 0) or MPI_Group_excl (exclude 1). */
  int (*group_select)(StasisMpiRealHandle group, int exclude, int n, const int *ranks, StasisMpiRealHandle *made);
  int (*group_translate_ranks)(StasisMpiRealHandle group1, int n, const int *ranks1, StasisMpiRealHandle group2,
                               int *ranks2);
  int (*group_compare)(StasisMpiRealHandle group1, StasisMpiRealHandle group2, int *result);
  /* Part "mpinfo" (lower_types_layout.c): a predefined error handler set on a communicator
   * (errors_return 1: MPI_ERRORS_RETURN, 0: MPI_ERRORS_ARE_FATAL), and the derived datatypes
   * NWChem's Global Arrays build (an indexed one is a hindexed one in bytes above; subarray's
   * order 1 is MPI_ORDER_FORTRAN, 0 MPI_ORDER_C); a datatype's extent (true_extent 1: its true
   * extent). */
  int (*comm_set_errhandler)(StasisMpiRealHandle comm, int errors_return);
  int (*type_create_hindexed)(int count, const int *blocklengths, const int64_t *displacements, StasisMpiRealHandle old,
                              StasisMpiRealHandle *made);
  int (*type_create_subarray)(int ndims, const int *sizes, const int *subsizes, const int *starts, int order_fortran,
                              StasisMpiRealHandle old, StasisMpiRealHandle *made);
  int (*type_get_extent)(StasisMpiRealHandle type, int true_extent, int64_t *lb, int64_t *extent);
  /* MPI_Pack, MPI_Unpack (from *position on, which they move) and MPI_Pack_size (ScaLAPACK's
   * BLACS, under NWChem). */
  int (*pack)(const void *inbuf, int incount, StasisMpiRealHandle type, void *outbuf, int outsize, int *position,
              StasisMpiRealHandle comm);
  int (*unpack_at)(const void *inbuf, int insize, int *position, void *outbuf, int outcount, StasisMpiRealHandle type,
                   StasisMpiRealHandle comm);
  int (*pack_size)(int incount, StasisMpiRealHandle type, StasisMpiRealHandle comm, int *size);
} StasisMpiLower;

/* How many user operations may live at once (one lower-half trampoline each). */
#define STASIS_MPI_LOWER_OP_SLOTS 32

typedef const StasisMpiLower *(*StasisMpiLowerInterfaceFn)(void);
#define STASIS_MPI_LOWER_INTERFACE_SYMBOL "stasis_mpi_lower_interface"

#ifdef __cplusplus
}
#endif
#endif
