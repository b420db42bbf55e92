/* The replay of part "mpiops"'s records (replay_log.h): user operations, struct datatypes and
 * groups made from ranks, whose arguments include arrays kept in the log's array storage. */
#include <stdlib.h>

#include "lower_tls.h"
#include "replay_log.h"

void (*stasis_mpi_replay_op_callback)(int slot, void *in, void *inout, int *length, StasisMpiRealHandle type);

void stasis_mpi_replay_set_arrays(StasisMpiReplayLog *log, int64_t *storage, uint32_t capacity) {
  log->arrays = storage;
  log->array_capacity = capacity;
  log->array_count = 0;
}

int stasis_mpi_replay_append_array(StasisMpiReplayLog *log, const int64_t *values, uint32_t n, uint32_t *offset) {
  if (!log->arrays || n > log->array_capacity - log->array_count || log->array_count > (uint32_t)INT32_MAX) return -1;
  *offset = log->array_count;
  for (uint32_t i = 0; i < n; i++) log->arrays[log->array_count + i] = values[i];
  log->array_count += n;
  return 0;
}

const int64_t *stasis_mpi_replay_record_array(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log) {
  uint32_t offset = (uint32_t)record->args[0], n = (uint32_t)record->args[1];
  if (record->args[0] < 0 || record->args[1] < 0 || !log->arrays || offset > log->array_count ||
      n > log->array_count - offset)
    return NULL;
  return log->arrays + offset;
}

static int replay_op_create(const StasisMpiReplayRecord *record, const StasisMpiLower *lower, StasisMpiHandles *handles,
                            uint32_t epoch, const char **fault) {
  int64_t index = (int64_t)((uint32_t)record->made & (STASIS_MPI_INDEX_LIMIT - 1)) - handles->ops.predefined_count;
  StasisMpiRealHandle made = 0;
  if (index < 0 || index >= STASIS_MPI_LOWER_OP_SLOTS || !stasis_mpi_replay_op_callback) {
    *fault = "its operation id has no trampoline slot";
    return -1;
  }
  if (LOWER_CALL(lower, op_create, (int)index, record->args[2], stasis_mpi_replay_op_callback, &made) != 0) {
    *fault = "the MPI library refused it";
    return -1;
  }
  if (stasis_mpi_replay_bind(&handles->ops, record->made, epoch, made) != 0) {
    *fault = "the operation id it made is not a made operation id";
    return -1;
  }
  return 0;
}

/* A struct's members: blocklength, displacement and type id each, the type ids made before it. */
static int replay_type_struct(const StasisMpiReplayRecord *record, const int64_t *array, const StasisMpiLower *lower,
                              StasisMpiHandles *handles, uint32_t epoch, const char **fault) {
  int count = record->args[2];
  if (count < 0 || (int64_t)count * 3 != record->args[1]) {
    *fault = "its member count does not match its array";
    return -1;
  }
  int *blocklengths = malloc((size_t)(count ? count : 1) * sizeof *blocklengths);
  int64_t *displacements = malloc((size_t)(count ? count : 1) * sizeof *displacements);
  StasisMpiRealHandle *types = malloc((size_t)(count ? count : 1) * sizeof *types), made = 0;
  int rc = blocklengths && displacements && types ? 0 : -1;
  if (rc != 0) *fault = "no memory for its members";
  for (int i = 0; rc == 0 && i < count; i++) {
    blocklengths[i] = (int)array[3 * i];
    displacements[i] = array[3 * i + 1];
    if (stasis_mpi_replay_usable(&handles->datatypes, (int)array[3 * i + 2], epoch, &types[i]) != 0) {
      *fault = "a member's datatype is not one made before it";
      rc = -1;
    }
  }
  if (rc == 0 && LOWER_CALL(lower, type_create_struct, count, blocklengths, displacements, types, &made) != 0) {
    *fault = "the MPI library refused it";
    rc = -1;
  }
  if (rc == 0 && stasis_mpi_replay_bind(&handles->datatypes, record->made, epoch, made) != 0) {
    *fault = "the datatype id it made is not a made datatype id";
    rc = -1;
  }
  free(blocklengths);
  free(displacements);
  free(types);
  return rc;
}

static int replay_group_select(const StasisMpiReplayRecord *record, const int64_t *array, const StasisMpiLower *lower,
                               StasisMpiHandles *handles, uint32_t epoch, const char **fault) {
  StasisMpiRealHandle from = 0, made = 0;
  if (stasis_mpi_replay_usable(&handles->groups, record->from, epoch, &from) != 0) {
    *fault = "its group is not one made before it";
    return -1;
  }
  int n = record->args[1];
  int *ranks = malloc((size_t)(n ? n : 1) * sizeof *ranks);
  if (!ranks) {
    *fault = "no memory for its ranks";
    return -1;
  }
  for (int i = 0; i < n; i++) ranks[i] = (int)array[i];
  int rc = LOWER_CALL(lower, group_select, from, record->op == STASIS_MPI_REPLAY_GROUP_EXCL, n, ranks, &made);
  free(ranks);
  if (rc != 0) {
    *fault = "the MPI library refused it";
    return -1;
  }
  if (stasis_mpi_replay_bind(&handles->groups, record->made, epoch, made) != 0) {
    *fault = "the group id it made is not a group id";
    return -1;
  }
  return 0;
}

int stasis_mpi_replay_ops_types(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log,
                                const StasisMpiLower *lower, StasisMpiHandles *handles, uint32_t epoch,
                                const char **fault) {
  StasisMpiRealHandle from = 0;
  switch (record->op) {
    case STASIS_MPI_REPLAY_OP_CREATE: return replay_op_create(record, lower, handles, epoch, fault);
    case STASIS_MPI_REPLAY_OP_FREE:
      if (stasis_mpi_replay_forget(&handles->ops, record->from, epoch, &from) != 0) {
        *fault = "it frees an id no earlier record made";
        return -1;
      }
      if (LOWER_CALL(lower, op_free, from) != 0) {
        *fault = "the MPI library refused it";
        return -1;
      }
      return 0;
    case STASIS_MPI_REPLAY_TYPE_STRUCT:
    case STASIS_MPI_REPLAY_GROUP_INCL:
    case STASIS_MPI_REPLAY_GROUP_EXCL: {
      const int64_t *array = stasis_mpi_replay_record_array(record, log);
      if (!array) {
        *fault = "its array lies outside the log's array storage (a damaged log)";
        return -1;
      }
      return record->op == STASIS_MPI_REPLAY_TYPE_STRUCT
                 ? replay_type_struct(record, array, lower, handles, epoch, fault)
                 : replay_group_select(record, array, lower, handles, epoch, fault);
    }
    default: return 1;
  }
}
