/* The replay of part "mpinfo"'s records (replay_log.h): a predefined error handler set on a
 * communicator, hindexed datatypes (MPI_Type_create_hindexed, _indexed, _indexed_block, all kept
 * in bytes) and subarray datatypes, whose arguments live in the log's array storage. */
#include <stdlib.h>

#include "lower_tls.h"
#include "replay_log.h"

static int replay_set_errhandler(const StasisMpiReplayRecord *record, const StasisMpiLower *lower,
                                 StasisMpiHandles *handles, uint32_t epoch, const char **fault) {
  StasisMpiRealHandle comm = 0;
  if (stasis_mpi_replay_usable(&handles->comms, record->from, epoch, &comm) != 0) {
    *fault = "its communicator is not one made before it";
    return -1;
  }
  if (LOWER_CALL(lower, comm_set_errhandler, comm, record->args[0] != 0) != 0) {
    *fault = "the MPI library refused it";
    return -1;
  }
  return 0;
}

/* Binds the datatype the record made, or says why not. */
static int bind_made_type(const StasisMpiReplayRecord *record, StasisMpiHandles *handles, uint32_t epoch,
                          StasisMpiRealHandle made, const char **fault) {
  if (stasis_mpi_replay_bind(&handles->datatypes, record->made, epoch, made) != 0) {
    *fault = "the datatype id it made is not a made datatype id";
    return -1;
  }
  return 0;
}

static int replay_type_hindexed(const StasisMpiReplayRecord *record, const int64_t *array, const StasisMpiLower *lower,
                                StasisMpiHandles *handles, uint32_t epoch, const char **fault) {
  int count = record->args[2];
  StasisMpiRealHandle old = 0, made = 0;
  if (count < 0 || (int64_t)count * 2 != record->args[1]) {
    *fault = "its block count does not match its array";
    return -1;
  }
  if (stasis_mpi_replay_usable(&handles->datatypes, record->from, epoch, &old) != 0) {
    *fault = "its datatype is not one made before it";
    return -1;
  }
  int *blocklengths = malloc((size_t)(count ? count : 1) * sizeof *blocklengths);
  int64_t *displacements = malloc((size_t)(count ? count : 1) * sizeof *displacements);
  int rc = blocklengths && displacements ? 0 : -1;
  if (rc != 0) *fault = "no memory for its blocks";
  for (int i = 0; rc == 0 && i < count; i++) {
    blocklengths[i] = (int)array[2 * i];
    displacements[i] = array[2 * i + 1];
  }
  if (rc == 0 && LOWER_CALL(lower, type_create_hindexed, count, blocklengths, displacements, old, &made) != 0) {
    *fault = "the MPI library refused it";
    rc = -1;
  }
  if (rc == 0) rc = bind_made_type(record, handles, epoch, made, fault);
  free(blocklengths);
  free(displacements);
  return rc;
}

static int replay_type_subarray(const StasisMpiReplayRecord *record, const int64_t *array, const StasisMpiLower *lower,
                                StasisMpiHandles *handles, uint32_t epoch, const char **fault) {
  int ndims = record->args[2];
  StasisMpiRealHandle old = 0, made = 0;
  if (ndims < 1 || (int64_t)ndims * 3 + 1 != record->args[1]) {
    *fault = "its dimension count does not match its array";
    return -1;
  }
  if (stasis_mpi_replay_usable(&handles->datatypes, record->from, epoch, &old) != 0) {
    *fault = "its datatype is not one made before it";
    return -1;
  }
  int *values = malloc((size_t)ndims * 3 * sizeof *values);
  if (!values) {
    *fault = "no memory for its dimensions";
    return -1;
  }
  for (int i = 0; i < ndims * 3; i++) values[i] = (int)array[i];
  int rc = LOWER_CALL(lower, type_create_subarray, ndims, values, values + ndims, values + 2 * ndims,
                      array[3 * ndims] != 0, old, &made);
  free(values);
  if (rc != 0) {
    *fault = "the MPI library refused it";
    return -1;
  }
  return bind_made_type(record, handles, epoch, made, fault);
}

int stasis_mpi_replay_types_layout(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log,
                                   const StasisMpiLower *lower, StasisMpiHandles *handles, uint32_t epoch,
                                   const char **fault) {
  if (record->op == STASIS_MPI_REPLAY_COMM_SET_ERRHANDLER)
    return replay_set_errhandler(record, lower, handles, epoch, fault);
  if (record->op != STASIS_MPI_REPLAY_TYPE_HINDEXED && record->op != STASIS_MPI_REPLAY_TYPE_SUBARRAY) return 1;
  const int64_t *array = stasis_mpi_replay_record_array(record, log);
  if (!array) {
    *fault = "its array lies outside the log's array storage (a damaged log)";
    return -1;
  }
  return record->op == STASIS_MPI_REPLAY_TYPE_HINDEXED
             ? replay_type_hindexed(record, array, lower, handles, epoch, fault)
             : replay_type_subarray(record, array, lower, handles, epoch, fault);
}
