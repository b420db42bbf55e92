/* The replay log: how every communicator, group and derived datatype of the upper half was made,
 * in the order it was made, so that a fresh lower half (a new MPI library after a restart, maybe
 * another implementation) can make them again and the virtual ids (virtual_ids.h) be rebound.
 *
 * Records hold virtual ids and the program's arguments only, never a library handle. Replay
 * runs the records in order, frees included: a derived datatype may have been built on one the
 * program freed since, and a freed id may have been given out again later. Collective creations
 * (dup, split, create) are replayed by every rank of the parent communicator in the same order, as they
 * were made. Nothing here allocates; the log lives in memory the caller gives. */
#ifndef STASIS_MPI_REPLAY_LOG_H
#define STASIS_MPI_REPLAY_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "lower_half_api.h"
#include "virtual_ids.h"

#ifdef __cplusplus
extern "C" {
#endif

enum StasisMpiReplayOp {
  STASIS_MPI_REPLAY_COMM_DUP = 1,    /* made = dup(from) */
  STASIS_MPI_REPLAY_COMM_SPLIT,      /* made = split(from, args[0] color, args[1] key) */
  STASIS_MPI_REPLAY_COMM_FREE,       /* free(from) */
  STASIS_MPI_REPLAY_COMM_GROUP,      /* made = group of communicator from */
  STASIS_MPI_REPLAY_GROUP_FREE,      /* free(from) */
  STASIS_MPI_REPLAY_TYPE_CONTIGUOUS, /* made = contiguous(args[0] count, from) */
  STASIS_MPI_REPLAY_TYPE_VECTOR,     /* made = vector(args[0] count, args[1] blocklength, args[2] stride, from) */
  STASIS_MPI_REPLAY_TYPE_COMMIT,     /* commit(from) */
  STASIS_MPI_REPLAY_TYPE_FREE,       /* free(from) */
  STASIS_MPI_REPLAY_COMM_CREATE,     /* made = create(from, args[0] the group id) */
  /* Intercommunicators (mpiinter, upper_intercomm.c). */
  STASIS_MPI_REPLAY_INTERCOMM_CREATE, /* made = intercomm_create(from the local communicator, args[0] local
                                       * leader, args[1] peer communicator id, args[2] remote leader, args[3] tag) */
  STASIS_MPI_REPLAY_INTERCOMM_MERGE,  /* made = merge(from, args[0] high) */
  STASIS_MPI_REPLAY_COMM_REMOTE_GROUP, /* made = remote group of intercommunicator from */
  /* Part "mpiops" (replay_ops_types.c). An "array" is args[1] values from args[0] on in the
   * log's array storage (stasis_mpi_replay_append_array). */
  STASIS_MPI_REPLAY_OP_CREATE = 64, /* made = user operation, args[2] commute (the function: the made id's slot) */
  STASIS_MPI_REPLAY_OP_FREE,        /* free(from) */
  STASIS_MPI_REPLAY_TYPE_STRUCT,    /* made = struct of args[2] members; array: blocklength, displacement, type id each */
  STASIS_MPI_REPLAY_GROUP_INCL,     /* made = incl(from, array: ranks) */
  STASIS_MPI_REPLAY_GROUP_EXCL,     /* made = excl(from, array: ranks) */
  /* Part "mpinfo" (replay_types_layout.c). */
  STASIS_MPI_REPLAY_COMM_SET_ERRHANDLER = 96, /* set_errhandler(from, args[0]: 1 MPI_ERRORS_RETURN, 0 _ARE_FATAL) */
  STASIS_MPI_REPLAY_TYPE_HINDEXED, /* made = hindexed(from, args[2] blocks; array: blocklength, byte displacement each) */
  STASIS_MPI_REPLAY_TYPE_SUBARRAY, /* made = subarray(from, args[2] ndims; array: the sizes, the subsizes, the starts,
                                    * then 1 for MPI_ORDER_FORTRAN or 0 for MPI_ORDER_C) */
};

typedef struct StasisMpiReplayRecord {
  uint32_t op;  /* enum StasisMpiReplayOp */
  int32_t made; /* the virtual id made, or MPI_COMM_NULL for a split that gave none */
  int32_t from; /* the virtual id it was made from or acts on */
  int32_t args[4]; /* args[3]: an intercommunicator's tag (stasis_mpi_replay_append leaves it 0) */
} StasisMpiReplayRecord;

typedef struct StasisMpiReplayLog {
  uint32_t capacity;
  uint32_t count;
  uint32_t epoch; /* counts replays: each stamps the ids it binds */
  StasisMpiReplayRecord *records;
  /* The records' arrays (part "mpiops"); none until stasis_mpi_replay_set_arrays. */
  uint32_t array_capacity;
  uint32_t array_count;
  int64_t *arrays;
} StasisMpiReplayLog;

void stasis_mpi_replay_init(StasisMpiReplayLog *log, StasisMpiReplayRecord *storage, uint32_t capacity);

/* Appends one record; -1 when the log is full. */
int stasis_mpi_replay_append(StasisMpiReplayLog *log, uint32_t op, int made, int from, int arg0, int arg1, int arg2);

/* Gives the log storage for its records' arrays (capacity values). */
void stasis_mpi_replay_set_arrays(StasisMpiReplayLog *log, int64_t *storage, uint32_t capacity);
/* Copies n values into the array storage; *offset says where. -1 when it is full. */
int stasis_mpi_replay_append_array(StasisMpiReplayLog *log, const int64_t *values, uint32_t n, uint32_t *offset);

/* The function a fresh lower half's user operations call (upper_ops_types.c sets it). */
extern void (*stasis_mpi_replay_op_callback)(int slot, void *in, void *inout, int *length, StasisMpiRealHandle type);

/* For replay_ops_types.c: during a replay, an id's handle when it is predefined or made by this
 * replay (epoch) and not freed since (0), else -1; bind a made id; forget a freed one. */
int stasis_mpi_replay_usable(StasisMpiIdTable *table, int id, uint32_t epoch, StasisMpiRealHandle *real);
int stasis_mpi_replay_bind(StasisMpiIdTable *table, int id, uint32_t epoch, StasisMpiRealHandle real);
int stasis_mpi_replay_forget(StasisMpiIdTable *table, int id, uint32_t epoch, StasisMpiRealHandle *real);
/* Replays one record of part "mpiops"'s operations: 0, 1 when the operation is not one of them,
 * -1 with *fault. */
int stasis_mpi_replay_ops_types(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log,
                                const StasisMpiLower *lower, StasisMpiHandles *handles, uint32_t epoch,
                                const char **fault);

/* Part "mpinfo"'s records (replay_types_layout.c), as stasis_mpi_replay_ops_types. */
int stasis_mpi_replay_types_layout(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log,
                                   const StasisMpiLower *lower, StasisMpiHandles *handles, uint32_t epoch,
                                   const char **fault);
/* The record's array (args[0] offset, args[1] length), or NULL when it lies outside the storage. */
const int64_t *stasis_mpi_replay_record_array(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log);

/* The name of a record's operation, for messages ("comm_split"); "unknown" for another value. */
const char *stasis_mpi_replay_op_name(uint32_t op);

/* Makes every object of the log again with `lower` (whose predefined ids must already be bound,
 * stasis_mpi_handles_bind_predefined) and rebinds its virtual id, then checks that every live
 * made id of the communicator, group and datatype tables was rebound by this replay. Returns 0,
 * or -1 with a one-line message in `error` naming the record, its operation and the fault. */
int stasis_mpi_replay_run(StasisMpiReplayLog *log, const StasisMpiLower *lower, StasisMpiHandles *handles,
                          char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif
