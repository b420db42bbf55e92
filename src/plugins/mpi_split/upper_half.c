/* The upper half's MPI: libstasis_mpi.so, which a program built against abi/mpi.h links. Each
 * MPI_* function translates virtual ids (virtual_ids.h) to the lower half's real handles, calls
 * the lower half (lower_half_api.h), and records how every communicator, group and datatype was
 * made (replay_log.h) so that a fresh lower half can make them again.
 *
 * The tables and the log are static storage of this library: upper-half memory, saved with the
 * program. Every point-to-point message is counted per peer (peer_counts.h) for the drain.
 * Threads: up to MPI_THREAD_MULTIPLE, the program's threads taking turns in the safe regions
 * (lower_tls.h), where every table is read and written. The drain is in
 * upper_drain.c; the state both share is declared in upper_state.h. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/mpi.h"
#include "drain_queue.h"
#include "lower_half_loader.h"
#include "peer_counts.h"
#include "replay_log.h"
#include "virtual_ids.h"
#include "lower_tls.h"
#include "upper_state.h"


static StasisMpiIdEntry comm_entries[COMM_CAPACITY];
static StasisMpiIdEntry datatype_entries[DATATYPE_CAPACITY];
static StasisMpiIdEntry op_entries[STASIS_MPI_PREDEFINED_OP_COUNT + STASIS_MPI_LOWER_OP_SLOTS];
static StasisMpiIdEntry group_entries[GROUP_CAPACITY];
static StasisMpiIdEntry request_entries[REQUEST_CAPACITY];
static uint64_t receives_posted;
RequestSide request_side[REQUEST_CAPACITY];
static StasisMpiReplayRecord replay_records[REPLAY_CAPACITY];

StasisMpiHandles handles;
StasisMpiReplayLog replay;
const StasisMpiLower *lower;
StasisMpiPeerCounts peers;
StasisMpiRealHandle private_world; /* upper_state.h says what these are */
StasisMpiDrainQueue drained;
static int initialized;
int finalized;
int stasis_mpi_lower_thread_level;

/* The program's own MPI errors are returned as well; these lines say what the split layer saw. */
void complain(const char *function, const char *what) {
  char line[512];
  int length = snprintf(line, sizeof line, "stasis mpi_split: %s: %s\n", function, what);
  if (length > 0) (void)!write(2, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
}

int not_initialized(const char *function) {
  complain(function, finalized ? "called after MPI_Finalize" : "called before MPI_Init");
  return MPI_ERR_OTHER;
}

int not_live(const char *function, const char *what, int id, int error_class) {
  char text[128];
  snprintf(text, sizeof text, "0x%x is not a live %s", (unsigned)id, what);
  complain(function, text);
  return error_class;
}

int library_error(int rc) { return rc == 0 ? MPI_SUCCESS : MPI_ERR_OTHER; }

/* The REAL_* macros below check the id; the calls read the handle again with REAL_NOW
 * (upper_state.h). */

#define REAL_COMM(function, id, out)                                                                            \
  StasisMpiRealHandle out;                                                                                      \
  if (stasis_mpi_ids_real(&handles.comms, id, &out) != 0) return not_live(function, "communicator", id, MPI_ERR_COMM)
#define REAL_TYPE(function, id, out)                                                                            \
  StasisMpiRealHandle out;                                                                                      \
  if (stasis_mpi_ids_real(&handles.datatypes, id, &out) != 0) return not_live(function, "datatype", id, MPI_ERR_TYPE)
#define REAL_OP(function, id, out)                                                                              \
  StasisMpiRealHandle out;                                                                                      \
  if (stasis_mpi_ids_real(&handles.ops, id, &out) != 0) return not_live(function, "operation", id, MPI_ERR_OP)
#define REAL_GROUP(function, id, out)                                                                           \
  StasisMpiRealHandle out;                                                                                      \
  if (stasis_mpi_ids_real(&handles.groups, id, &out) != 0) return not_live(function, "group", id, MPI_ERR_GROUP)

static void tables_init(void) {
  stasis_mpi_ids_init(&handles.comms, STASIS_MPI_KIND_COMM, comm_entries, COMM_CAPACITY,
                      STASIS_MPI_PREDEFINED_COMM_COUNT);
  stasis_mpi_ids_init(&handles.datatypes, STASIS_MPI_KIND_DATATYPE, datatype_entries, DATATYPE_CAPACITY,
                      STASIS_MPI_PREDEFINED_DATATYPE_COUNT);
  stasis_mpi_ids_init(&handles.ops, STASIS_MPI_KIND_OP, op_entries,
                      STASIS_MPI_PREDEFINED_OP_COUNT + STASIS_MPI_LOWER_OP_SLOTS, STASIS_MPI_PREDEFINED_OP_COUNT);
  stasis_mpi_ids_init(&handles.groups, STASIS_MPI_KIND_GROUP, group_entries, GROUP_CAPACITY,
                      STASIS_MPI_PREDEFINED_GROUP_COUNT);
  stasis_mpi_ids_init(&handles.requests, STASIS_MPI_KIND_REQUEST, request_entries, REQUEST_CAPACITY,
                      STASIS_MPI_PREDEFINED_REQUEST_COUNT);
  stasis_mpi_replay_init(&replay, replay_records, REPLAY_CAPACITY);
  stasis_mpi_ops_types_init();
}

/* Gives `real`, just made by the library, a virtual id in `table` and logs how it was made.
 * On a full table or log the object is left to the library and the call fails, saying so. */
int remember(const char *function, StasisMpiIdTable *table, StasisMpiRealHandle real, uint32_t op, int from, int arg0,
             int arg1, int arg2, int *id) {
  if (stasis_mpi_ids_add(table, real, id) != 0) {
    complain(function, "too many live objects of this kind for the split layer's table");
    return MPI_ERR_INTERN;
  }
  if (stasis_mpi_replay_append(&replay, op, *id, from, arg0, arg1, arg2) != 0) {
    stasis_mpi_ids_remove(table, *id);
    complain(function, "the replay log is full");
    return MPI_ERR_INTERN;
  }
  return MPI_SUCCESS;
}

/* Records the world rank of each rank of the communicator just made (id `comm`), so that its
 * messages are counted by world rank; of an intercommunicator (remote), its remote group's ranks:
 * the ones its messages name. */
int map_comm_ranks(const char *function, int comm, int remote) {
  int64_t index = stasis_mpi_ids_index(&handles.comms, comm);
  /* The handles are read inside each call's safe region (REAL_NOW, WORLD_NOW): a checkpoint and a
   * restart may come at any call's entry, and a handle read before it would be the old library's. */
#define WORLD_NOW handles.comms.entries[STASIS_MPI_INDEX_COMM_WORLD].real
  int size = 0;
  if ((remote ? LOWER_CALL(lower, comm_remote_size, REAL_NOW(handles.comms, comm), &size)
              : LOWER_CALL(lower, comm_size, REAL_NOW(handles.comms, comm), &size)) != 0)
    return library_error(1);
  int *world_ranks = malloc((size_t)(size ? size : 1) * sizeof *world_ranks);
  int rc = !world_ranks ? MPI_ERR_INTERN
           : remote ? LOWER_CALL(lower, comm_remote_world_ranks, REAL_NOW(handles.comms, comm), WORLD_NOW, world_ranks, size)
                    : LOWER_CALL(lower, comm_world_ranks, REAL_NOW(handles.comms, comm), WORLD_NOW, world_ranks, size);
#undef WORLD_NOW
  if (rc == 0 && stasis_mpi_peers_map_comm(&peers, (uint32_t)index, world_ranks, size) != 0) rc = MPI_ERR_INTERN;
  free(world_ranks);
  if (rc != 0) complain(function, "cannot tell the world ranks of the new communicator's members");
  return rc == 0 ? MPI_SUCCESS : MPI_ERR_INTERN;
}

/* Logs an operation on an existing object (a commit, a free) for replay. */
static int log_action(const char *function, uint32_t op, int id) {
  if (stasis_mpi_replay_append(&replay, op, 0, id, 0, 0, 0) != 0) {
    complain(function, "the replay log is full");
    return MPI_ERR_INTERN;
  }
  return MPI_SUCCESS;
}

API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  if (initialized) {
    complain("MPI_Init", "called twice");
    return MPI_ERR_OTHER;
  }
  char error[600];
  lower = stasis_mpi_load_lower_half(error, sizeof error);
  if (!lower) {
    complain("MPI_Init", error);
    return MPI_ERR_OTHER;
  }
  tables_init();
  stasis_mpi_join_checkpoints();
  /* Several threads' calls reach the library one region at a time: it is asked for
   * MPI_THREAD_SERIALIZED, and a restart asks the fresh library for the same level. */
  if (required == MPI_THREAD_MULTIPLE) stasis_mpi_threads_multiple = 1;
  stasis_mpi_lower_thread_level = required < MPI_THREAD_SERIALIZED ? required : MPI_THREAD_SERIALIZED;
  int lower_provided = MPI_THREAD_SINGLE;
  int rc = LOWER_CALL(lower, init_thread, argc, argv, stasis_mpi_lower_thread_level, &lower_provided);
  if (rc != 0) return library_error(rc);
  int failed_kind = 0, failed_index = 0;
  if (stasis_mpi_handles_bind_predefined(&handles, lower, &failed_kind, &failed_index) != 0) {
    char text[160];
    snprintf(text, sizeof text, "the %s lower half has no object for predefined index %d of kind %d",
             lower->implementation, failed_index, failed_kind);
    complain("MPI_Init", text);
    return MPI_ERR_INTERN;
  }
  StasisMpiRealHandle world = handles.comms.entries[STASIS_MPI_INDEX_COMM_WORLD].real;
  int world_size = 0, world_rank = 0;
  if (LOWER_CALL(lower, comm_size, world, &world_size) != 0 || LOWER_CALL(lower, comm_rank, world, &world_rank) != 0 ||
      stasis_mpi_peers_init(&peers, world_size, COMM_CAPACITY) != 0 ||
      stasis_mpi_peers_map_comm(&peers, STASIS_MPI_INDEX_COMM_WORLD, NULL, world_size) != 0 ||
      stasis_mpi_peers_map_comm(&peers, STASIS_MPI_INDEX_COMM_SELF, &world_rank, 1) != 0 ||
      LOWER_CALL(lower, comm_dup, world, &private_world) != 0) {
    complain("MPI_Init", "cannot set up the per-peer message counts (out of memory, or the library refused)");
    return MPI_ERR_INTERN;
  }
  if (stasis_mpi_collectives_init(world_rank, world_size) != 0) {
    complain("MPI_Init", "out of memory for the collectives' checkpoint agreement");
    return MPI_ERR_INTERN;
  }
  initialized = 1;
  int most = lower_provided < MPI_THREAD_SERIALIZED ? lower_provided
             : stasis_mpi_threads_multiple        ? MPI_THREAD_MULTIPLE
                                                  : MPI_THREAD_SERIALIZED;
  stasis_mpi_provided_thread_level = required < most ? required : most;
  if (provided) *provided = stasis_mpi_provided_thread_level;
  return MPI_SUCCESS;
}

API int MPI_Init(int *argc, char ***argv) {
  int provided;
  return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}

API int MPI_Initialized(int *flag) {
  *flag = initialized;
  return MPI_SUCCESS;
}

API int MPI_Finalized(int *flag) {
  *flag = finalized;
  return MPI_SUCCESS;
}

API int MPI_Finalize(void) {
  NEED_LOWER("MPI_Finalize");
  /* MPI_COMM_SELF's attributes are deleted first, as the standard says (mpi4py's clean-up hooks). */
  int rc = stasis_mpi_attributes_delete_all(MPI_COMM_SELF);
  if (rc != MPI_SUCCESS) return rc;
  rc = stasis_mpi_finalize_entry(); /* every rank there, at a safe point */
  if (rc != MPI_SUCCESS) return rc;
  rc = LOWER_CALL(lower, finalize);
  finalized = 1;
  return library_error(rc);
}

API int MPI_Abort(MPI_Comm comm, int errorcode) {
  NEED_LOWER("MPI_Abort");
  REAL_COMM("MPI_Abort", comm, real_comm);
  (void)real_comm;
  return library_error(LOWER_CALL(lower, abort, REAL_NOW(handles.comms, comm), errorcode));
}

API double MPI_Wtime(void) {
  return lower && !finalized ? LOWER_CALL(lower, wtime) + stasis_mpi_wtime_offset : 0.0;
}

API int MPI_Get_processor_name(char *name, int *resultlen) {
  NEED_LOWER("MPI_Get_processor_name");
  return library_error(LOWER_CALL(lower, get_processor_name, name, resultlen));
}

API int MPI_Get_library_version(char *version, int *resultlen) {
  NEED_LOWER("MPI_Get_library_version");
  return library_error(LOWER_CALL(lower, get_library_version, version, resultlen));
}

API int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  NEED_LOWER("MPI_Comm_rank");
  REAL_COMM("MPI_Comm_rank", comm, real_comm);
  (void)real_comm;
  return library_error(LOWER_CALL(lower, comm_rank, REAL_NOW(handles.comms, comm), rank));
}

API int MPI_Comm_size(MPI_Comm comm, int *size) {
  NEED_LOWER("MPI_Comm_size");
  REAL_COMM("MPI_Comm_size", comm, real_comm);
  (void)real_comm;
  return library_error(LOWER_CALL(lower, comm_size, REAL_NOW(handles.comms, comm), size));
}

/* Gives the communicator the library just made from `parent` (a dup, split or create, logged as
 * `op` with its arguments) its id, or MPI_COMM_NULL where this rank got none, logs it and counts it
 * among the parent's children. In a safe region, by the program's thread or, at a checkpoint, the
 * checkpoint's (upper_collectives.c): nothing here allocates or calls the library, so the object
 * and its record exist together in every image. */
int stasis_mpi_record_comm(const char *function, uint32_t op, StasisMpiRealHandle made, int parent, int color,
                           int arg0, int arg1, int *newcomm) {
  if (made == handles.comms.entries[STASIS_MPI_INDEX_COMM_NULL].real) {
    /* No communicator for this rank, but it took part: replay must take part again. */
    *newcomm = MPI_COMM_NULL;
    stasis_mpi_collectives_comm_made(parent, MPI_COMM_NULL, color);
    if (stasis_mpi_replay_append(&replay, op, MPI_COMM_NULL, parent, arg0, arg1, 0) != 0) {
      complain(function, "the replay log is full");
      return MPI_ERR_INTERN;
    }
    return MPI_SUCCESS;
  }
  int rc = remember(function, &handles.comms, made, op, parent, arg0, arg1, 0, newcomm);
  if (rc == MPI_SUCCESS) stasis_mpi_collectives_comm_made(parent, *newcomm, color);
  return rc;
}

/* The creations wait at a safe point first (upper_collectives.c); the new communicator's ranks
 * are then mapped to world ranks, outside any region (this allocates). */
int comm_created(const char *function, int rc, MPI_Comm *newcomm) {
  if (rc != MPI_SUCCESS || *newcomm == MPI_COMM_NULL) return rc;
  return map_comm_ranks(function, *newcomm, 0);
}

API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  NEED_LOWER("MPI_Comm_dup");
  int rc = comm_created("MPI_Comm_dup", stasis_mpi_create_comm(STASIS_MPI_REPLAY_COMM_DUP, comm, 0, 0, 0, newcomm),
                        newcomm);
  /* A dup of a Cartesian communicator keeps its grid (upper_topology.c). */
  if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) rc = stasis_mpi_topology_comm_dup(comm, *newcomm);
  /* The attributes' copy functions (upper_attributes.c). */
  if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) rc = stasis_mpi_attributes_copy(comm, *newcomm);
  return rc;
}

API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  NEED_LOWER("MPI_Comm_split");
  return comm_created("MPI_Comm_split",
                      stasis_mpi_create_comm(STASIS_MPI_REPLAY_COMM_SPLIT, comm, color, key, 0, newcomm), newcomm);
}

API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
  NEED_LOWER("MPI_Comm_create");
  REAL_GROUP("MPI_Comm_create", group, real_group);
  (void)real_group;
  return comm_created("MPI_Comm_create",
                      stasis_mpi_create_comm(STASIS_MPI_REPLAY_COMM_CREATE, comm, 0, 0, group, newcomm), newcomm);
}

/* Frees an object the program made (never a predefined one) in the library, forgets its id,
 * logs the free for replay and sets the program's handle to the kind's null id. */
static int free_made(const char *function, StasisMpiIdTable *table, const char *what, int error_class, uint32_t op,
                     int *id, int null_id) {
  NEED_LOWER(function);
  int64_t index = stasis_mpi_ids_index(table, *id);
  if (index < (int64_t)table->predefined_count) return not_live(function, what, *id, error_class);
  /* One region: the library's free, the id's and the record together (and the lower half of the
   * moment, with the handle of the moment). */
  stasis_mpi_safe_point_enter(function);
  StasisMpiRealHandle real = table->entries[index].real;
  int rc = op == STASIS_MPI_REPLAY_COMM_FREE    ? LOWER_CALL_IN_REGION(lower, comm_free, real)
           : op == STASIS_MPI_REPLAY_GROUP_FREE ? LOWER_CALL_IN_REGION(lower, group_free, real)
                                                : LOWER_CALL_IN_REGION(lower, type_free, real);
  if (rc == 0) {
    stasis_mpi_ids_remove(table, *id);
    rc = log_action(function, op, *id);
  } else {
    rc = library_error(rc);
  }
  stasis_mpi_safe_point_leave();
  if (rc == MPI_SUCCESS) *id = null_id;
  return rc;
}

API int MPI_Comm_free(MPI_Comm *comm) {
  int freed = *comm;
  int rc = stasis_mpi_ids_index(&handles.comms, freed) >= STASIS_MPI_PREDEFINED_COMM_COUNT
               ? stasis_mpi_attributes_delete_all(freed) /* the attributes' delete functions first */
               : MPI_SUCCESS;
  if (rc != MPI_SUCCESS) return rc;
  rc = free_made("MPI_Comm_free", &handles.comms, "communicator made by the program", MPI_ERR_COMM,
                     STASIS_MPI_REPLAY_COMM_FREE, comm, MPI_COMM_NULL);
  if (*comm == MPI_COMM_NULL) stasis_mpi_topology_comm_freed(freed);
  return rc;
}

API int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
  NEED_LOWER("MPI_Comm_group");
  REAL_COMM("MPI_Comm_group", comm, real_comm);
  (void)real_comm;
  StasisMpiRealHandle made;
  stasis_mpi_safe_point_enter("MPI_Comm_group"); /* the object and its id and record together */
  int rc = LOWER_CALL_IN_REGION(lower, comm_group, REAL_NOW(handles.comms, comm), &made);
  rc = rc != 0 ? library_error(rc)
               : remember("MPI_Comm_group", &handles.groups, made, STASIS_MPI_REPLAY_COMM_GROUP, comm, 0, 0, 0, group);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Group_size(MPI_Group group, int *size) {
  NEED_LOWER("MPI_Group_size");
  REAL_GROUP("MPI_Group_size", group, real_group);
  (void)real_group;
  return library_error(LOWER_CALL(lower, group_size, REAL_NOW(handles.groups, group), size));
}

API int MPI_Group_rank(MPI_Group group, int *rank) {
  NEED_LOWER("MPI_Group_rank");
  REAL_GROUP("MPI_Group_rank", group, real_group);
  (void)real_group;
  return library_error(LOWER_CALL(lower, group_rank, REAL_NOW(handles.groups, group), rank));
}

API int MPI_Group_free(MPI_Group *group) {
  return free_made("MPI_Group_free", &handles.groups, "group made by the program", MPI_ERR_GROUP,
                   STASIS_MPI_REPLAY_GROUP_FREE, group, MPI_GROUP_NULL);
}

API int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  NEED_LOWER("MPI_Type_contiguous");
  REAL_TYPE("MPI_Type_contiguous", oldtype, real_old);
  (void)real_old;
  StasisMpiRealHandle made;
  stasis_mpi_safe_point_enter("MPI_Type_contiguous");
  int rc = LOWER_CALL_IN_REGION(lower, type_contiguous, count, REAL_NOW(handles.datatypes, oldtype), &made);
  rc = rc != 0 ? library_error(rc)
               : remember("MPI_Type_contiguous", &handles.datatypes, made, STASIS_MPI_REPLAY_TYPE_CONTIGUOUS, oldtype,
                          count, 0, 0, newtype);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  NEED_LOWER("MPI_Type_vector");
  REAL_TYPE("MPI_Type_vector", oldtype, real_old);
  (void)real_old;
  StasisMpiRealHandle made;
  stasis_mpi_safe_point_enter("MPI_Type_vector");
  int rc = LOWER_CALL_IN_REGION(lower, type_vector, count, blocklength, stride, REAL_NOW(handles.datatypes, oldtype),
                                &made);
  rc = rc != 0 ? library_error(rc)
               : remember("MPI_Type_vector", &handles.datatypes, made, STASIS_MPI_REPLAY_TYPE_VECTOR, oldtype, count,
                          blocklength, stride, newtype);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Type_commit(MPI_Datatype *datatype) {
  NEED_LOWER("MPI_Type_commit");
  REAL_TYPE("MPI_Type_commit", *datatype, real_type);
  (void)real_type;
  stasis_mpi_safe_point_enter("MPI_Type_commit");
  int rc = LOWER_CALL_IN_REGION(lower, type_commit, REAL_NOW(handles.datatypes, *datatype));
  if (rc == 0) rc = log_action("MPI_Type_commit", STASIS_MPI_REPLAY_TYPE_COMMIT, *datatype);
  stasis_mpi_safe_point_leave();
  return library_error(rc);
}

API int MPI_Type_free(MPI_Datatype *datatype) {
  if (stasis_mpi_ids_index(&handles.datatypes, *datatype) >= STASIS_MPI_PREDEFINED_DATATYPE_COUNT) {
    int rc = stasis_mpi_attributes_delete_all(*datatype); /* the attributes' delete functions first */
    if (rc != MPI_SUCCESS) return rc;
  }
  return free_made("MPI_Type_free", &handles.datatypes, "datatype made by the program", MPI_ERR_TYPE,
                   STASIS_MPI_REPLAY_TYPE_FREE, datatype, MPI_DATATYPE_NULL);
}

API int MPI_Type_size(MPI_Datatype datatype, int *size) {
  NEED_LOWER("MPI_Type_size");
  REAL_TYPE("MPI_Type_size", datatype, real_type);
  (void)real_type;
  return library_error(LOWER_CALL(lower, type_size, REAL_NOW(handles.datatypes, datatype), size));
}

API int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  NEED_LOWER("MPI_Get_count");
  REAL_TYPE("MPI_Get_count", datatype, real_type);
  int size = 0;
  (void)real_type;
  int rc = LOWER_CALL(lower, type_size, REAL_NOW(handles.datatypes, datatype), &size);
  if (rc != 0) return library_error(rc);
  if (size == 0) *count = 0;
  else if (status->stasis_bytes % size != 0) *count = MPI_UNDEFINED;
  else *count = (int)(status->stasis_bytes / size);
  return MPI_SUCCESS;
}

void status_up(const StasisMpiLowerStatus *lower_status, MPI_Status *status) {
  if (!status) return;
  status->MPI_SOURCE = lower_status->source;
  status->MPI_TAG = lower_status->tag;
  status->MPI_ERROR = lower_status->error ? MPI_ERR_OTHER : MPI_SUCCESS;
  status->stasis_cancelled = lower_status->cancelled;
  status->stasis_bytes = lower_status->bytes;
}

/* A message posted to `dest` of the live communicator `comm`, counted for the drain. */
void stasis_mpi_count_sent(MPI_Comm comm, int dest) {
  if (dest != MPI_PROC_NULL) stasis_mpi_peers_sent(&peers, (uint32_t)stasis_mpi_ids_index(&handles.comms, comm), dest);
}

/* A new request id for the library's request; recv_type is 0 for a send. In a safe region. */
static int remember_request(const char *function, StasisMpiRealHandle real, StasisMpiRealHandle recv_type,
                            MPI_Comm comm, MPI_Request *request) {
  if (stasis_mpi_ids_add(&handles.requests, real, request) != 0) {
    complain(function, "too many requests in flight for the split layer's table");
    return MPI_ERR_INTERN;
  }
  RequestSide side = {recv_type, (uint32_t)stasis_mpi_ids_index(&handles.comms, comm), 0, {0, 0, 0, 0, 0},
                      0, 0, NULL, 0, 0, 0, comm};
  request_side[stasis_mpi_ids_index(&handles.requests, *request)] = side;
  return MPI_SUCCESS;
}

/* Point-to-point calls run whole in a safe region (lower_tls.h): the library's request and the
 * upper half's record of it are made together, so a checkpoint's drain never finds one without
 * the other, and a receive never misses a message the drain took while it was held. */
static int isend_in_region(const void *buf, int count, StasisMpiRealHandle real_type, int dest, int tag, MPI_Comm comm,
                           StasisMpiRealHandle real_comm, int synchronous, MPI_Request *request) {
  StasisMpiRealHandle made;
  int rc = synchronous ? LOWER_CALL_IN_REGION(lower, issend, buf, count, real_type, dest, tag, real_comm, &made)
                       : LOWER_CALL_IN_REGION(lower, isend, buf, count, real_type, dest, tag, real_comm, &made);
  if (rc != 0) return library_error(rc);
  stasis_mpi_count_sent(comm, dest);
  return remember_request(synchronous ? "MPI_Issend" : "MPI_Isend", made, 0, comm, request);
}

static int irecv_in_region(void *buf, int count, MPI_Datatype datatype, StasisMpiRealHandle real_type, int source,
                           int tag, MPI_Comm comm, StasisMpiRealHandle real_comm, MPI_Request *request) {
  if (drained.count != 0) {
    StasisMpiLowerStatus served;
    int rc = receive_drained("MPI_Irecv", buf, count, real_type, source, tag, comm, real_comm, &served);
    if (rc != -1) {
      if (rc != MPI_SUCCESS) return rc;
      rc = remember_request("MPI_Irecv", 0, real_type, comm, request);
      if (rc != MPI_SUCCESS) return rc;
      RequestSide *side = &request_side[stasis_mpi_ids_index(&handles.requests, *request)];
      side->done = 1;
      side->done_status = served;
      return MPI_SUCCESS;
    }
  }
  StasisMpiRealHandle made;
  int rc = LOWER_CALL_IN_REGION(lower, irecv, buf, count, real_type, source, tag, real_comm, &made);
  if (rc != 0) return library_error(rc);
  rc = remember_request("MPI_Irecv", made, real_type, comm, request);
  if (rc != MPI_SUCCESS) return rc;
  RequestSide *side = &request_side[stasis_mpi_ids_index(&handles.requests, *request)];
  side->type = datatype;
  side->posted = ++receives_posted;
  side->buf = buf;
  side->count = count;
  side->source = source;
  side->tag = tag;
  return MPI_SUCCESS;
}

static int isend_checked(const char *function, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, int synchronous, MPI_Request *request) {
  NEED_LOWER(function);
  REAL_TYPE(function, datatype, real_type);
  REAL_COMM(function, comm, real_comm);
  stasis_mpi_safe_point_enter(function);
  real_type = REAL_NOW(handles.datatypes, datatype); /* a restart may have come while held at the entry */
  real_comm = REAL_NOW(handles.comms, comm);
  int rc = isend_in_region(buf, count, real_type, dest, tag, comm, real_comm, synchronous, request);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                  MPI_Request *request) {
  return isend_checked("MPI_Isend", buf, count, datatype, dest, tag, comm, 0, request);
}

/* A synchronous send completes once its receive has matched it; a drain receives every message in
 * flight, so one posted before a checkpoint is complete after it, like any send. */
API int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request) {
  return isend_checked("MPI_Issend", buf, count, datatype, dest, tag, comm, 1, request);
}

API int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request) {
  NEED_LOWER("MPI_Irecv");
  REAL_TYPE("MPI_Irecv", datatype, real_type);
  REAL_COMM("MPI_Irecv", comm, real_comm);
  stasis_mpi_safe_point_enter("MPI_Irecv");
  real_type = REAL_NOW(handles.datatypes, datatype); /* a restart may have come while held at the entry */
  real_comm = REAL_NOW(handles.comms, comm);
  int rc = irecv_in_region(buf, count, datatype, real_type, source, tag, comm, real_comm, request);
  stasis_mpi_safe_point_leave();
  return rc;
}

/* One test of request `index`, in a safe region: 1 when it is complete (*status filled, its
 * receive counted), 0 when not, or -1 with *rc the library's error. The request's state is read
 * here and nowhere outside a region: a checkpoint's drain may have completed it, parked and posted
 * it again, or a restart posted it in a fresh library, while the caller was held. */
int test_request_in_region(int64_t index, StasisMpiLowerStatus *status, int *rc) {
  RequestSide *side = &request_side[index];
  if (stasis_mpi_collectives_pending) stasis_mpi_collectives_progress(); /* collectives progress in every test */
  if (side->collective) {
    StasisMpiLowerStatus empty = {MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0, 0};
    *status = empty;
    int complete = stasis_mpi_collective_test(side->collective - 1, rc);
    if (complete && *rc != MPI_SUCCESS) return -1;
    return complete;
  }
  if (side->done) {
    *status = side->done_status; /* counted when the drain received it */
    return 1;
  }
  int flag = 0;
  *rc = LOWER_CALL_IN_REGION(lower, test, &handles.requests.entries[index].real, side->recv_type, &flag, status);
  if (*rc != 0) return -1;
  if (!flag) return 0;
  if (side->recv_type && status->source != MPI_PROC_NULL)
    stasis_mpi_peers_received(&peers, side->comm_index, status->source);
  return 1;
}

/* The blocking calls wait here, in the upper half: one test a turn, each in a safe region, so a
 * checkpoint holds the caller between two tests, never inside the library (README.md, Safe points
 * inside blocking calls). After SPINS_BEFORE_YIELD turns each turn gives the core away: ranks
 * oversubscribe cores, and the rank waited for may need this one. */
void stasis_mpi_wait_turn(unsigned turn) {
  if (turn >= SPINS_BEFORE_YIELD) sched_yield();
}

const char *stasis_mpi_blocked_in;

/* Completes a request: the test loop of every blocking point-to-point call, `function` naming
 * the call the program made (what a checkpoint reports it found the rank waiting in). */
static int wait_request(const char *function, MPI_Request *request, MPI_Status *status) {
  NEED_LOWER(function);
  if (*request == MPI_REQUEST_NULL) {
    /* The standard's empty status. */
    if (status) {
      MPI_Status empty = {MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, 0};
      *status = empty;
    }
    return MPI_SUCCESS;
  }
  int64_t index = stasis_mpi_ids_index(&handles.requests, *request);
  if (index < (int64_t)handles.requests.predefined_count) return not_live(function, "request", *request, MPI_ERR_REQUEST);
  if (request_side[index].persistent) return stasis_mpi_persistent_complete(function, index, status, NULL);
  StasisMpiLowerStatus lower_status;
  int rc = 0, complete = 0;
  for (unsigned turn = 0; !complete; turn++) {
    stasis_mpi_safe_point_enter(function);
    complete = test_request_in_region(index, &lower_status, &rc);
    if (complete > 0) stasis_mpi_ids_remove(&handles.requests, *request); /* in the region: other threads */
    stasis_mpi_blocked_in = complete ? NULL : function;
    stasis_mpi_safe_point_leave();
    if (complete < 0) return library_error(rc);
    if (!complete) stasis_mpi_wait_turn(turn);
  }
  status_up(&lower_status, status);
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

API int MPI_Wait(MPI_Request *request, MPI_Status *status) { return wait_request("MPI_Wait", request, status); }

API int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  NEED_LOWER("MPI_Test");
  if (*request == MPI_REQUEST_NULL) {
    *flag = 1;
    return wait_request("MPI_Test", request, status);
  }
  int64_t index = stasis_mpi_ids_index(&handles.requests, *request);
  if (index < (int64_t)handles.requests.predefined_count) return not_live("MPI_Test", "request", *request, MPI_ERR_REQUEST);
  if (request_side[index].persistent) return stasis_mpi_persistent_complete("MPI_Test", index, status, flag);
  StasisMpiLowerStatus lower_status;
  int rc = 0;
  stasis_mpi_safe_point_enter("MPI_Test");
  int complete = test_request_in_region(index, &lower_status, &rc);
  if (complete > 0) stasis_mpi_ids_remove(&handles.requests, *request); /* in the region: other threads */
  stasis_mpi_safe_point_leave();
  if (complete < 0) return library_error(rc);
  *flag = complete;
  if (!complete) return MPI_SUCCESS;
  status_up(&lower_status, status);
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

API int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  int result = MPI_SUCCESS;
  for (int i = 0; i < count; i++) {
    int rc = MPI_Wait(&requests[i], statuses ? &statuses[i] : MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) result = rc;
  }
  return result;
}

/* The blocking point-to-point calls are the nonblocking ones and MPI_Wait's loop. */
API int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  MPI_Request request;
  int rc = MPI_Isend(buf, count, datatype, dest, tag, comm, &request);
  return rc == MPI_SUCCESS ? wait_request("MPI_Send", &request, MPI_STATUS_IGNORE) : rc;
}

API int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  MPI_Request request;
  int rc = MPI_Issend(buf, count, datatype, dest, tag, comm, &request);
  return rc == MPI_SUCCESS ? wait_request("MPI_Ssend", &request, MPI_STATUS_IGNORE) : rc;
}

API int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                 MPI_Status *status) {
  MPI_Request request;
  int rc = MPI_Irecv(buf, count, datatype, source, tag, comm, &request);
  return rc == MPI_SUCCESS ? wait_request("MPI_Recv", &request, status) : rc;
}

API int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  MPI_Request received, sent;
  int rc = MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &received);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &sent);
  int received_rc = wait_request("MPI_Sendrecv", &received, status);
  if (rc != MPI_SUCCESS) return rc;
  rc = wait_request("MPI_Sendrecv", &sent, MPI_STATUS_IGNORE);
  return received_rc != MPI_SUCCESS ? received_rc : rc;
}

API int STASIS_MPI_Remake_objects(int *remade) {
  NEED_LOWER("STASIS_MPI_Remake_objects");
  if (handles.requests.live_count != 0) {
    complain("STASIS_MPI_Remake_objects", "refused: requests are in flight");
    return MPI_ERR_REQUEST;
  }
  char error[600];
  if (stasis_mpi_remake_objects(error, sizeof error) != 0) {
    complain("STASIS_MPI_Remake_objects", error);
    return MPI_ERR_INTERN;
  }
  *remade = (int)(handles.comms.live_count + handles.groups.live_count + handles.datatypes.live_count +
                  handles.ops.live_count);
  return MPI_SUCCESS;
}

int stasis_mpi_remake_objects(char *error, size_t error_size) {
  int failed_kind = 0, failed_index = 0;
  if (stasis_mpi_handles_bind_predefined(&handles, lower, &failed_kind, &failed_index) != 0) {
    snprintf(error, error_size, "no object for predefined index %d of kind %d", failed_index, failed_kind);
    return -1;
  }
  if (stasis_mpi_replay_run(&replay, lower, &handles, error, error_size) != 0) return -1;
  if (LOWER_CALL(lower, comm_dup, handles.comms.entries[STASIS_MPI_INDEX_COMM_WORLD].real, &private_world) != 0) {
    snprintf(error, error_size, "the library refused the private duplicate of MPI_COMM_WORLD");
    return -1;
  }
  return 0;
}

