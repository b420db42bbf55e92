/* The replay log (replay_log.h). */
#include "replay_log.h"

#include "lower_tls.h"

#include <stdio.h>

void stasis_mpi_replay_init(StasisMpiReplayLog *log, StasisMpiReplayRecord *storage, uint32_t capacity) {
  log->capacity = capacity;
  log->count = 0;
  log->epoch = 0;
  log->records = storage;
  log->array_capacity = 0;
  log->array_count = 0;
  log->arrays = NULL;
}

int stasis_mpi_replay_append(StasisMpiReplayLog *log, uint32_t op, int made, int from, int arg0, int arg1, int arg2) {
  if (log->count >= log->capacity) return -1;
  StasisMpiReplayRecord record = {op, made, from, {arg0, arg1, arg2, 0}};
  log->records[log->count++] = record;
  return 0;
}

const char *stasis_mpi_replay_op_name(uint32_t op) {
  switch (op) {
    case STASIS_MPI_REPLAY_COMM_DUP: return "comm_dup";
    case STASIS_MPI_REPLAY_COMM_SPLIT: return "comm_split";
    case STASIS_MPI_REPLAY_COMM_FREE: return "comm_free";
    case STASIS_MPI_REPLAY_COMM_GROUP: return "comm_group";
    case STASIS_MPI_REPLAY_GROUP_FREE: return "group_free";
    case STASIS_MPI_REPLAY_TYPE_CONTIGUOUS: return "type_contiguous";
    case STASIS_MPI_REPLAY_TYPE_VECTOR: return "type_vector";
    case STASIS_MPI_REPLAY_TYPE_COMMIT: return "type_commit";
    case STASIS_MPI_REPLAY_TYPE_FREE: return "type_free";
    case STASIS_MPI_REPLAY_COMM_CREATE: return "comm_create";
    case STASIS_MPI_REPLAY_INTERCOMM_CREATE: return "intercomm_create";
    case STASIS_MPI_REPLAY_INTERCOMM_MERGE: return "intercomm_merge";
    case STASIS_MPI_REPLAY_COMM_REMOTE_GROUP: return "comm_remote_group";
    case STASIS_MPI_REPLAY_OP_CREATE: return "op_create";
    case STASIS_MPI_REPLAY_OP_FREE: return "op_free";
    case STASIS_MPI_REPLAY_TYPE_STRUCT: return "type_create_struct";
    case STASIS_MPI_REPLAY_GROUP_INCL: return "group_incl";
    case STASIS_MPI_REPLAY_GROUP_EXCL: return "group_excl";
    case STASIS_MPI_REPLAY_COMM_SET_ERRHANDLER: return "comm_set_errhandler";
    case STASIS_MPI_REPLAY_TYPE_HINDEXED: return "type_create_hindexed";
    case STASIS_MPI_REPLAY_TYPE_SUBARRAY: return "type_create_subarray";
    default: return "unknown";
  }
}

/* During a replay the tables' live flags say how things END, not how they were when a record was
 * made (an id may have been freed and given out again since). So replay tracks its own view: an
 * id is usable when it is predefined or was made by this replay (stamped with its epoch) and not
 * freed since. */
static StasisMpiIdEntry *replay_entry(StasisMpiIdTable *table, int id) {
  uint32_t bits = (uint32_t)id, index = bits & (STASIS_MPI_INDEX_LIMIT - 1);
  if ((bits & 0xff000000u) != (uint32_t)STASIS_MPI_VID_TAG || ((bits >> 16) & 0xffu) != (uint32_t)table->kind ||
      index >= table->next_unused)
    return NULL;
  return &table->entries[index];
}

int stasis_mpi_replay_usable(StasisMpiIdTable *table, int id, uint32_t epoch, StasisMpiRealHandle *real) {
  StasisMpiIdEntry *entry = replay_entry(table, id);
  if (!entry) return -1;
  uint32_t index = (uint32_t)(entry - table->entries);
  if (index >= table->predefined_count && entry->replay_epoch != epoch) return -1;
  *real = entry->real;
  return 0;
}

int stasis_mpi_replay_bind(StasisMpiIdTable *table, int id, uint32_t epoch, StasisMpiRealHandle real) {
  StasisMpiIdEntry *entry = replay_entry(table, id);
  if (!entry || (uint32_t)(entry - table->entries) < table->predefined_count) return -1;
  entry->real = real;
  entry->replay_epoch = epoch;
  return 0;
}

/* A freed id is no longer usable by later records until a record makes it again. */
int stasis_mpi_replay_forget(StasisMpiIdTable *table, int id, uint32_t epoch, StasisMpiRealHandle *real) {
  if (stasis_mpi_replay_usable(table, id, epoch, real) != 0) return -1;
  StasisMpiIdEntry *entry = replay_entry(table, id);
  if ((uint32_t)(entry - table->entries) < table->predefined_count) return -1;
  entry->replay_epoch = 0;
  entry->real = 0;
  return 0;
}

static int replay_one(const StasisMpiReplayRecord *record, const StasisMpiReplayLog *log, const StasisMpiLower *lower,
                      StasisMpiHandles *handles, uint32_t epoch, const char **fault) {
  StasisMpiRealHandle from = 0, made = 0;
  int rc;
  switch (record->op) {
    case STASIS_MPI_REPLAY_COMM_DUP:
    case STASIS_MPI_REPLAY_COMM_SPLIT:
    case STASIS_MPI_REPLAY_COMM_CREATE:
    case STASIS_MPI_REPLAY_COMM_GROUP:
    case STASIS_MPI_REPLAY_INTERCOMM_CREATE:
    case STASIS_MPI_REPLAY_INTERCOMM_MERGE:
    case STASIS_MPI_REPLAY_COMM_REMOTE_GROUP:
      if (stasis_mpi_replay_usable(&handles->comms, record->from, epoch, &from) != 0) {
        *fault = "its communicator is not one made before it";
        return -1;
      }
      if (record->op == STASIS_MPI_REPLAY_COMM_DUP) rc = LOWER_CALL(lower, comm_dup, from, &made);
      else if (record->op == STASIS_MPI_REPLAY_COMM_SPLIT)
        rc = LOWER_CALL(lower, comm_split, from, record->args[0], record->args[1], &made);
      else if (record->op == STASIS_MPI_REPLAY_COMM_CREATE) {
        StasisMpiRealHandle group = 0;
        if (stasis_mpi_replay_usable(&handles->groups, record->args[0], epoch, &group) != 0) {
          *fault = "its group is not one made before it";
          return -1;
        }
        rc = LOWER_CALL(lower, comm_create, from, group, &made);
      } else if (record->op == STASIS_MPI_REPLAY_INTERCOMM_CREATE) {
        /* The peer communicator counts at the local leader only; elsewhere it may be any id. */
        StasisMpiRealHandle peer = handles->comms.entries[STASIS_MPI_INDEX_COMM_NULL].real;
        (void)stasis_mpi_replay_usable(&handles->comms, record->args[1], epoch, &peer);
        rc = LOWER_CALL(lower, intercomm_create, from, record->args[0], peer, record->args[2], record->args[3], &made);
      } else if (record->op == STASIS_MPI_REPLAY_INTERCOMM_MERGE) {
        rc = LOWER_CALL(lower, intercomm_merge, from, record->args[0], &made);
      } else if (record->op == STASIS_MPI_REPLAY_COMM_REMOTE_GROUP) {
        rc = LOWER_CALL(lower, comm_remote_group, from, &made);
      } else rc = LOWER_CALL(lower, comm_group, from, &made);
      if (rc != 0) {
        *fault = "the MPI library refused it";
        return -1;
      }
      if (record->op == STASIS_MPI_REPLAY_COMM_GROUP || record->op == STASIS_MPI_REPLAY_COMM_REMOTE_GROUP) {
        if (stasis_mpi_replay_bind(&handles->groups, record->made, epoch, made) != 0) {
          *fault = "the group id it made is not a group id";
          return -1;
        }
        return 0;
      }
      if (record->made == MPI_COMM_NULL) {
        /* A split whose color was MPI_UNDEFINED: this rank took part and got none, again. */
        if (made != handles->comms.entries[STASIS_MPI_INDEX_COMM_NULL].real) {
          *fault = "the library made a communicator where the first run made none";
          return -1;
        }
        return 0;
      }
      if (made == handles->comms.entries[STASIS_MPI_INDEX_COMM_NULL].real) {
        *fault = "the library made no communicator where the first run made one";
        return -1;
      }
      if (stasis_mpi_replay_bind(&handles->comms, record->made, epoch, made) != 0) {
        *fault = "the communicator id it made is not a communicator id";
        return -1;
      }
      return 0;
    case STASIS_MPI_REPLAY_TYPE_CONTIGUOUS:
    case STASIS_MPI_REPLAY_TYPE_VECTOR:
      if (stasis_mpi_replay_usable(&handles->datatypes, record->from, epoch, &from) != 0) {
        *fault = "its datatype is not one made before it";
        return -1;
      }
      rc = record->op == STASIS_MPI_REPLAY_TYPE_CONTIGUOUS
               ? LOWER_CALL(lower, type_contiguous, record->args[0], from, &made)
               : LOWER_CALL(lower, type_vector, record->args[0], record->args[1], record->args[2], from, &made);
      if (rc != 0) {
        *fault = "the MPI library refused it";
        return -1;
      }
      if (stasis_mpi_replay_bind(&handles->datatypes, record->made, epoch, made) != 0) {
        *fault = "the datatype id it made is not a made datatype id";
        return -1;
      }
      return 0;
    case STASIS_MPI_REPLAY_TYPE_COMMIT:
      if (stasis_mpi_replay_usable(&handles->datatypes, record->from, epoch, &from) != 0) {
        *fault = "its datatype is not one made before it";
        return -1;
      }
      if (LOWER_CALL(lower, type_commit, from) != 0) {
        *fault = "the MPI library refused it";
        return -1;
      }
      return 0;
    case STASIS_MPI_REPLAY_COMM_FREE:
    case STASIS_MPI_REPLAY_GROUP_FREE:
    case STASIS_MPI_REPLAY_TYPE_FREE: {
      StasisMpiIdTable *table = record->op == STASIS_MPI_REPLAY_COMM_FREE    ? &handles->comms
                                : record->op == STASIS_MPI_REPLAY_GROUP_FREE ? &handles->groups
                                                                             : &handles->datatypes;
      if (stasis_mpi_replay_forget(table, record->from, epoch, &from) != 0) {
        *fault = "it frees an id no earlier record made";
        return -1;
      }
      rc = record->op == STASIS_MPI_REPLAY_COMM_FREE    ? LOWER_CALL(lower, comm_free, from)
           : record->op == STASIS_MPI_REPLAY_GROUP_FREE ? LOWER_CALL(lower, group_free, from)
                                                        : LOWER_CALL(lower, type_free, from);
      if (rc != 0) {
        *fault = "the MPI library refused it";
        return -1;
      }
      return 0;
    }
    default: {
      int rc = stasis_mpi_replay_ops_types(record, log, lower, handles, epoch, fault);
      if (rc == 1) rc = stasis_mpi_replay_types_layout(record, log, lower, handles, epoch, fault);
      if (rc == 1) *fault = "its operation is unknown (a damaged log)";
      return rc == 0 ? 0 : -1;
    }
  }
}

int stasis_mpi_replay_run(StasisMpiReplayLog *log, const StasisMpiLower *lower, StasisMpiHandles *handles,
                          char *error, size_t error_size) {
  uint32_t epoch = ++log->epoch;
  if (epoch == 0) epoch = ++log->epoch; /* 0 means "never bound" */
  for (uint32_t i = 0; i < log->count; i++) {
    const StasisMpiReplayRecord *record = &log->records[i];
    const char *fault = NULL;
    if (replay_one(record, log, lower, handles, epoch, &fault) != 0) {
      snprintf(error, error_size, "MPI replay record %u of %u (%s, id 0x%x from 0x%x): %s", i, log->count,
               stasis_mpi_replay_op_name(record->op), (unsigned)record->made, (unsigned)record->from, fault);
      return -1;
    }
  }
  /* The invariant that makes a restart right: every object the program still holds was made
   * again. An id the log does not explain would silently point at a dead library object. */
  StasisMpiIdTable *replayed[] = {&handles->comms, &handles->groups, &handles->datatypes, &handles->ops};
  for (size_t t = 0; t < sizeof replayed / sizeof replayed[0]; t++) {
    StasisMpiIdTable *table = replayed[t];
    for (uint32_t index = table->predefined_count; index < table->next_unused; index++) {
      const StasisMpiIdEntry *entry = &table->entries[index];
      if (entry->live && entry->replay_epoch != epoch) {
        snprintf(error, error_size, "MPI replay: id 0x%x is held by the program but no record of the log made it",
                 (unsigned)STASIS_MPI_VID(table->kind, (int)index));
        return -1;
      }
      if (!entry->live && entry->replay_epoch == epoch) {
        snprintf(error, error_size, "MPI replay: id 0x%x was made again but the program had freed it",
                 (unsigned)STASIS_MPI_VID(table->kind, (int)index));
        return -1;
      }
    }
  }
  return 0;
}
