/* The collectives, made safe points (README.md, Safe points inside blocking calls). A collective
 * is the library's nonblocking one, driven by tests in the upper half, each test in a safe region,
 * so a checkpoint holds a rank between two tests. A blocking collective runs that loop itself; a
 * nonblocking one (MPI_Ibcast, ...) is driven by every later test of this rank (MPI_Wait on any
 * request, a blocking call's loop). Every communicator counts the collectives this rank started
 * on it (its sequence number) and the last one it got past the point of no return: for the kinds
 * whose completion on one member tells that every member started them (MPI_Barrier,
 * MPI_Allreduce, ...; needs_entry_barrier), completion; for the others (a root may finish a
 * broadcast before the others start it), an MPI_Ibarrier first, whose completion is that point
 * (MANA's two phases). A rank posts the library's operations on a communicator in one order,
 * the same on every member whatever order the program tests its requests in: collective k's entry
 * barrier only once collective k - 1 is posted, its own operation as soon as the entry barrier is
 * complete.
 *
 * At the checkpoint's drain every rank publishes each collective it has in flight (communicator
 * key, sequence number) and learns from every member the last one each communicator's members got
 * past the point of no return: every member completes those before the image is taken; the later
 * ones no member has passed, and each leaves them posted (a restart posts them again in the fresh
 * library, in order). Two reductions over the private world, whatever the number of communicators.
 *
 * The communicator creations (MPI_Comm_dup, _split, _create) have no nonblocking form in MPI-3.1:
 * each waits at an MPI_Ibarrier on its parent first, and makes the communicator in the same safe
 * region as the test that found the barrier complete, so a member inside the blocking creation
 * knows every member has arrived. A member held by a checkpoint before it saw its barrier
 * complete has its creation made by its checkpoint thread (stasis_mpi_collectives_drive), so the
 * member inside comes out. MPI_Finalize waits at an MPI_Ibarrier on the world: held there, a rank
 * is checkpointed like one in MPI_Barrier; once every rank has reached it, no checkpoint is taken
 * (stasis_mpi_finalizing). Part of libstasis_mpi.so. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_tls.h"
#include "upper_collectives.h"

static const char *const collective_names[] = {
    "MPI_Barrier",   "MPI_Allreduce",  "MPI_Bcast",     "MPI_Reduce",         "MPI_Comm_dup",
    "MPI_Comm_split", "MPI_Comm_create", "MPI_Finalize", "MPI_Intercomm_merge", "MPI_Gather",         "MPI_Gatherv",
    "MPI_Scatter",   "MPI_Scatterv",   "MPI_Allgather", "MPI_Allgatherv",     "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan"};
_Static_assert(sizeof collective_names / sizeof collective_names[0] == COLLECTIVE_EXSCAN + 1, "a name for each");
_Static_assert(COLLECTIVE_EXSCAN - COLLECTIVE_GATHER == STASIS_MPI_LOWER_EXSCAN, "the lower half's order");
static int is_reduction(enum CollectiveKind kind) {
  return kind == COLLECTIVE_ALLREDUCE || kind == COLLECTIVE_REDUCE || kind == COLLECTIVE_REDUCE_SCATTER ||
         kind == COLLECTIVE_REDUCE_SCATTER_BLOCK || kind == COLLECTIVE_SCAN || kind == COLLECTIVE_EXSCAN;
}
static int is_creation(enum CollectiveKind kind) {
  return kind == COLLECTIVE_COMM_DUP || kind == COLLECTIVE_COMM_SPLIT || kind == COLLECTIVE_COMM_CREATE ||
         kind == COLLECTIVE_INTERCOMM_MERGE;
}
/* Only an MPI_Ibarrier: the barrier, a creation's entry and MPI_Finalize's. */
static int barrier_only(enum CollectiveKind kind) {
  return kind == COLLECTIVE_BARRIER || kind == COLLECTIVE_FINALIZE || is_creation(kind);
}
_Atomic int stasis_mpi_finalizing;

/* The collectives in flight on this rank: the blocking one the program's thread is in, and the
 * nonblocking ones it has not completed. */
enum { IN_FLIGHT_CAPACITY = 64 };
static Collective in_flight[IN_FLIGHT_CAPACITY];
static int in_flight_end;       /* no slot at or above this index is active */
int stasis_mpi_collectives_pending; /* active slots */
static int creation_slot = -1;  /* the blocking creation the program's thread is in */

/* Per communicator index: its key (the same on every member), the collectives started, the last
 * past its point of no return, the last whose own operation is posted (the order of posting), and
 * the communicators made from it (for its children's keys). */
static uint64_t comm_key[COMM_CAPACITY], comm_started[COMM_CAPACITY], comm_decided[COMM_CAPACITY],
    comm_posted[COMM_CAPACITY], comm_children[COMM_CAPACITY];
/* The drain's agreement: up to SETTLE_SLOTS (key, sequence) pairs a rank and its members' votes,
 * allocated at MPI_Init (the drain may not allocate: the program's threads may be stopped in malloc). */
enum { SETTLE_SLOTS = 16 };
static uint64_t *published, *votes;
int stasis_mpi_own_world_rank;
static int world_ranks;

static uint64_t mix(uint64_t value) { /* splitmix64's finaliser */
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return (value ^ (value >> 31)) | 1; /* never 0: 0 is "nothing in progress" */
}

int stasis_mpi_collectives_init(int world_rank, int world_size) {
  stasis_mpi_own_world_rank = world_rank;
  world_ranks = world_size;
  published = calloc(2 * SETTLE_SLOTS * (size_t)world_size, sizeof *published);
  votes = calloc(SETTLE_SLOTS * (size_t)world_size, sizeof *votes);
  if (!published || !votes) return -1;
  comm_key[STASIS_MPI_INDEX_COMM_WORLD] = mix(1);
  comm_key[STASIS_MPI_INDEX_COMM_SELF] = mix(mix(2) + (uint64_t)world_rank); /* one rank's own */
  return 0;
}

void stasis_mpi_collectives_comm_made(int parent, int made, int color) {
  uint32_t from = (uint32_t)stasis_mpi_ids_index(&handles.comms, parent);
  uint64_t child = ++comm_children[from]; /* every member of the parent counts it, none or not */
  if (made == MPI_COMM_NULL) return;
  uint32_t index = (uint32_t)stasis_mpi_ids_index(&handles.comms, made);
  comm_key[index] = mix(comm_key[from] ^ mix(child) ^ mix((uint64_t)(uint32_t)color << 1));
  comm_started[index] = comm_decided[index] = comm_posted[index] = comm_children[index] = 0;
}

/* A datatype argument that may be insignificant (a non-root's send side of a scatter, the
 * receive side of an in-place call): its object, or the library's MPI_DATATYPE_NULL. */
static StasisMpiRealHandle type_or_null(int id) {
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_real(&handles.datatypes, id, &real) == 0) return real;
  return handles.datatypes.entries[STASIS_MPI_INDEX_DATATYPE_NULL].real;
}

static int post_icollective(Collective *c) {
  StasisMpiLowerCollective args = {
      .kind = (int)(c->kind - COLLECTIVE_GATHER), .sendbuf = c->sendbuf, .recvbuf = c->recvbuf,
      .sendcount = c->count, .recvcount = c->recvcount, .root = c->root, .sendcounts = c->sendcounts,
      .sdispls = c->sdispls, .recvcounts = c->recvcounts, .rdispls = c->rdispls,
      .sendtype = type_or_null(c->datatype), .recvtype = type_or_null(c->recvtype)};
  if (stasis_mpi_ids_real(&handles.comms, c->comm, &args.comm) != 0 ||
      (is_reduction(c->kind) && stasis_mpi_ids_real(&handles.ops, c->op, &args.op) != 0))
    return MPI_ERR_ARG;
  return library_error(LOWER_CALL_IN_REGION(lower, icollective, &args, &c->request));
}

/* Posts the current phase in the library of the moment (the ids' handles are looked up now: a
 * restart made them again). In a safe region. */
static int post_phase(Collective *c) {
  StasisMpiRealHandle real_comm, real_type = 0, real_op = 0;
  if (c->kind >= COLLECTIVE_GATHER && !c->entry_barrier) return post_icollective(c);
  if (stasis_mpi_ids_real(&handles.comms, c->comm, &real_comm) != 0 ||
      (!barrier_only(c->kind) && stasis_mpi_ids_real(&handles.datatypes, c->datatype, &real_type) != 0) ||
      (is_reduction(c->kind) && stasis_mpi_ids_real(&handles.ops, c->op, &real_op) != 0))
    return MPI_ERR_ARG;
  if (c->entry_barrier || barrier_only(c->kind))
    return library_error(LOWER_CALL_IN_REGION(lower, ibarrier, real_comm, &c->request));
  switch (c->kind) {
    case COLLECTIVE_ALLREDUCE:
      return library_error(LOWER_CALL_IN_REGION(lower, iallreduce, c->sendbuf, c->recvbuf, c->count, real_type,
                                                real_op, real_comm, &c->request));
    case COLLECTIVE_BCAST:
      return library_error(
          LOWER_CALL_IN_REGION(lower, ibcast, c->recvbuf, c->count, real_type, c->root, real_comm, &c->request));
    default:
      return library_error(LOWER_CALL_IN_REGION(lower, ireduce, c->sendbuf, c->recvbuf, c->count, real_type, real_op,
                                                c->root, real_comm, &c->request));
  }
}

/* A creation's communicator, once its entry barrier is complete: made by the library (blocking,
 * but every member has arrived) and recorded under its id, in the caller's safe region. */
static int make_communicator(Collective *c) {
  static const uint32_t replay_ops[] = {STASIS_MPI_REPLAY_COMM_DUP, STASIS_MPI_REPLAY_COMM_SPLIT,
                                        STASIS_MPI_REPLAY_COMM_CREATE};
  const char *name = collective_names[c->kind];
  StasisMpiRealHandle real_parent, real_group = 0, made = 0;
  if (stasis_mpi_ids_real(&handles.comms, c->comm, &real_parent) != 0 ||
      (c->kind == COLLECTIVE_COMM_CREATE && stasis_mpi_ids_real(&handles.groups, c->group, &real_group) != 0))
    return not_live(name, "communicator or group", c->comm, MPI_ERR_ARG);
  int rc;
  if (c->kind == COLLECTIVE_COMM_DUP) rc = LOWER_CALL_IN_REGION(lower, comm_dup, real_parent, &made);
  else if (c->kind == COLLECTIVE_COMM_SPLIT)
    rc = LOWER_CALL_IN_REGION(lower, comm_split, real_parent, c->color, c->key, &made);
  else if (c->kind == COLLECTIVE_INTERCOMM_MERGE)
    rc = LOWER_CALL_IN_REGION(lower, intercomm_merge, real_parent, c->color, &made);
  else rc = LOWER_CALL_IN_REGION(lower, comm_create, real_parent, real_group, &made);
  if (rc != 0) return library_error(rc);
  /* `high` differs between the two groups: the merged key is derived with color 0 on both. */
  if (c->kind == COLLECTIVE_INTERCOMM_MERGE)
    return stasis_mpi_record_comm(name, STASIS_MPI_REPLAY_INTERCOMM_MERGE, made, c->comm, 0, c->color, 0, &c->made);
  uint32_t op = replay_ops[c->kind - COLLECTIVE_COMM_DUP];
  if (c->kind == COLLECTIVE_COMM_CREATE) return stasis_mpi_record_comm(name, op, made, c->comm, 0, c->group, 0, &c->made);
  return stasis_mpi_record_comm(name, op, made, c->comm, c->color, c->color, c->key, &c->made);
}

/* One step of collective c: posts its phase where none is posted (in the communicator's order),
 * else tests it; the entry barrier's completion, or a single-phase collective's, is the point of no
 * return. In a safe region. */
static void collective_step(Collective *c) {
  int rc = MPI_SUCCESS, flag = 0;
  uint32_t at = c->comm_index;
  if (c->done) return;
  if (!c->request) {
    if (comm_posted[at] + 1 != c->sequence) return; /* an earlier collective on comm is not posted yet */
    rc = post_phase(c);
    if (rc == MPI_SUCCESS && !c->entry_barrier) comm_posted[at] = c->sequence;
  } else {
    rc = library_error(LOWER_CALL_IN_REGION(lower, test, &c->request, 0, &flag, NULL));
    if (rc == MPI_SUCCESS && flag) {
      c->request = 0;
      if ((c->entry_barrier || !c->two_phase) && comm_decided[at] < c->sequence) comm_decided[at] = c->sequence;
      if (c->kind == COLLECTIVE_FINALIZE) atomic_store(&stasis_mpi_finalizing, 1); /* every rank has reached it */
      if (is_creation(c->kind)) {
        c->result = make_communicator(c); /* in this region: every member has arrived */
        comm_posted[at] = c->sequence;
        c->entry_barrier = 0;
        c->done = 1;
        return;
      }
      if (c->entry_barrier) { /* its own operation now: nothing later on comm was posted before it */
        c->entry_barrier = 0;
        rc = post_phase(c);
        if (rc == MPI_SUCCESS) comm_posted[at] = c->sequence;
      } else {
        c->done = 1;
      }
    }
  }
  if (rc != MPI_SUCCESS) {
    c->done = 1;
    c->result = rc;
  }
}

/* A step of every collective in flight (twice: one may wait for another to be posted). In a safe
 * region. */
void stasis_mpi_collectives_progress(void) {
  for (int pass = 0; pass < 2; pass++)
    for (int slot = 0; slot < in_flight_end; slot++)
      if (in_flight[slot].active) collective_step(&in_flight[slot]);
}

/* Whether a collective's completion on one member tells that every member has started it (its
 * point of no return: no entry barrier needed). Not for the rooted ones (a root may finish a
 * broadcast, a member its part of a gather, before the others start), the scans (rank 0's result
 * needs nobody), the v kinds and MPI_Reduce_scatter (a member that exchanges nothing with another
 * need not wait for it), a zero count, nor MPI_IN_PLACE (a library may write partial results over
 * the input before it completes: left unfinished at a checkpoint, it could not be posted again from
 * its start after a restart, so its buffer stays untouched until every member has passed the entry
 * barrier). */
static int needs_entry_barrier(const Collective *c) {
  if (c->sendbuf == MPI_IN_PLACE || c->recvbuf == MPI_IN_PLACE) return 1;
  switch (c->kind) {
    case COLLECTIVE_BARRIER:
    case COLLECTIVE_FINALIZE:
    case COLLECTIVE_ALLREDUCE: return 0;
    case COLLECTIVE_ALLGATHER:
    case COLLECTIVE_ALLTOALL: return c->count <= 0 || c->recvcount <= 0;
    case COLLECTIVE_REDUCE_SCATTER_BLOCK: return c->recvcount <= 0;
    default: return 1;
  }
}

/* A slot for the collective asked, numbered on its communicator; -1 when all are taken. In a safe
 * region. */
static int start_in_region(const Collective *asked) {
  int slot = 0;
  while (slot < IN_FLIGHT_CAPACITY && in_flight[slot].active) slot++;
  if (slot == IN_FLIGHT_CAPACITY) return -1;
  Collective *c = &in_flight[slot];
  *c = *asked;
  c->active = 1;
  c->comm_index = (uint32_t)stasis_mpi_ids_index(&handles.comms, asked->comm);
  c->sequence = ++comm_started[c->comm_index];
  c->two_phase = needs_entry_barrier(asked);
  c->entry_barrier = c->two_phase;
  if (slot >= in_flight_end) in_flight_end = slot + 1;
  stasis_mpi_collectives_pending++;
  return slot;
}

static void release_slot(int slot) {
  in_flight[slot].active = 0;
  stasis_mpi_collectives_pending--;
  while (in_flight_end > 0 && !in_flight[in_flight_end - 1].active) in_flight_end--;
}

static int too_many(const char *name) {
  complain(name, "too many collectives in flight for the split layer (64)");
  return MPI_ERR_INTERN;
}

static int run_collective(Collective *asked) {
  const char *name = collective_names[asked->kind];
  stasis_mpi_safe_point_enter(name);
  int slot = start_in_region(asked);
  if (slot >= 0 && is_creation(asked->kind)) creation_slot = slot;
  stasis_mpi_safe_point_leave();
  if (slot < 0) return too_many(name);
  for (unsigned turn = 0;; turn++) {
    stasis_mpi_safe_point_enter(name);
    stasis_mpi_collectives_progress();
    Collective *c = &in_flight[slot];
    int done = c->done, result = c->result;
    if (done) {
      asked->made = c->made;
      if (slot == creation_slot) creation_slot = -1;
      release_slot(slot);
    }
    stasis_mpi_blocked_in = done ? NULL : name;
    stasis_mpi_safe_point_leave();
    if (done) return result;
    stasis_mpi_wait_turn(turn);
  }
}

/* The communicator and the operation checked before anything is posted. */
static int check_asked(const Collective *asked) {
  const char *name = collective_names[asked->kind];
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_index(&handles.comms, asked->comm) <= STASIS_MPI_INDEX_COMM_NULL ||
      stasis_mpi_ids_real(&handles.comms, asked->comm, &real) != 0)
    return not_live(name, "communicator", asked->comm, MPI_ERR_COMM);
  if (is_reduction(asked->kind) && stasis_mpi_ids_real(&handles.ops, asked->op, &real) != 0)
    return not_live(name, "operation", asked->op, MPI_ERR_OP);
  /* Where the datatype means the same on every member (a bad one found after an entry barrier
   * would fail this member alone). */
  if ((is_reduction(asked->kind) || asked->kind == COLLECTIVE_BCAST) &&
      stasis_mpi_ids_real(&handles.datatypes, asked->datatype, &real) != 0)
    return not_live(name, "datatype", asked->datatype, MPI_ERR_TYPE);
  return MPI_SUCCESS;
}

int stasis_mpi_collective_run(Collective *asked) {
  int rc = check_asked(asked);
  return rc == MPI_SUCCESS ? run_collective(asked) : rc;
}

int stasis_mpi_collective_start(Collective *asked, MPI_Request *request) {
  int rc = check_asked(asked);
  if (rc != MPI_SUCCESS) return rc;
  const char *name = collective_names[asked->kind];
  stasis_mpi_safe_point_enter(name);
  int slot = start_in_region(asked);
  if (slot >= 0 && stasis_mpi_ids_add(&handles.requests, 0, request) != 0) {
    release_slot(slot);
    complain(name, "too many requests in flight for the split layer's table");
    rc = MPI_ERR_INTERN;
  } else if (slot >= 0) {
    RequestSide side = {.comm_index = in_flight[slot].comm_index, .comm = asked->comm, .collective = slot + 1};
    request_side[stasis_mpi_ids_index(&handles.requests, *request)] = side;
    stasis_mpi_collectives_progress(); /* posted now where its turn has come */
  }
  stasis_mpi_safe_point_leave();
  return slot < 0 ? too_many(name) : rc;
}

int stasis_mpi_collective_test(int slot, int *rc) {
  stasis_mpi_collectives_progress();
  Collective *c = &in_flight[slot];
  if (!c->done) return 0;
  *rc = c->result;
  release_slot(slot);
  return 1;
}

int stasis_mpi_create_comm(uint32_t replay_op, MPI_Comm comm, int color, int key, MPI_Group group, MPI_Comm *newcomm) {
  enum CollectiveKind kind = replay_op == STASIS_MPI_REPLAY_COMM_DUP         ? COLLECTIVE_COMM_DUP
                             : replay_op == STASIS_MPI_REPLAY_COMM_SPLIT     ? COLLECTIVE_COMM_SPLIT
                             : replay_op == STASIS_MPI_REPLAY_INTERCOMM_MERGE ? COLLECTIVE_INTERCOMM_MERGE
                                                                             : COLLECTIVE_COMM_CREATE;
  Collective asked = {.kind = kind, .comm = comm, .color = color, .key = key, .group = group, .made = MPI_COMM_NULL};
  int rc = stasis_mpi_collective_run(&asked);
  if (rc == MPI_SUCCESS) *newcomm = asked.made;
  return rc;
}

uint64_t stasis_mpi_collectives_child_key(int parent) {
  uint32_t from = (uint32_t)stasis_mpi_ids_index(&handles.comms, parent);
  return mix(comm_key[from] ^ mix(++comm_children[from]));
}

void stasis_mpi_collectives_set_key(int comm, uint64_t mine, uint64_t theirs) {
  uint32_t index = (uint32_t)stasis_mpi_ids_index(&handles.comms, comm);
  uint64_t low = mine < theirs ? mine : theirs, high = mine < theirs ? theirs : mine; /* the same on both sides */
  comm_key[index] = mix(low ^ mix(high));
  comm_started[index] = comm_decided[index] = comm_posted[index] = comm_children[index] = 0;
}

int stasis_mpi_finalize_entry(void) {
  Collective asked = {.kind = COLLECTIVE_FINALIZE, .comm = MPI_COMM_WORLD};
  return run_collective(&asked);
}

int stasis_mpi_collectives_drive(int patience_ms) {
  if (creation_slot < 0) return 0;
  Collective *c = &in_flight[creation_slot];
  if (c->done || !c->request || !c->entry_barrier) return 0;
  double started = LOWER_CALL_IN_REGION(lower, wtime);
  while (!c->done) {
    collective_step(c);
    if (!c->done && (LOWER_CALL_IN_REGION(lower, wtime) - started) * 1000 > patience_ms) return 0;
  }
  return 1;
}

/* How long the drain drives the collectives some member got past their point of no return
 * before it gives up: every member then completes them, unless one is lost. */
enum { SETTLE_PATIENCE_SECONDS = 30 };

int stasis_mpi_collectives_settle(const char **completed, char *error, size_t error_size) {
  *completed = NULL;
  int mine[SETTLE_SLOTS], count = 0, unpublished = 0;
  uint64_t *own = published + 2 * SETTLE_SLOTS * (size_t)stasis_mpi_own_world_rank;
  memset(published, 0, 2 * SETTLE_SLOTS * (size_t)world_ranks * sizeof *published);
  for (int slot = 0; slot < in_flight_end; slot++) {
    Collective *c = &in_flight[slot];
    c->must_complete = 0;
    if (!c->active || c->done) continue;
    if (count == SETTLE_SLOTS) { /* refused after the reductions, which every rank must join */
      unpublished++;
      continue;
    }
    own[2 * count] = comm_key[c->comm_index];
    own[2 * count + 1] = c->sequence;
    mine[count++] = slot;
  }
  StasisMpiRealHandle uint64_type = handles.datatypes.entries[STASIS_MPI_INDEX_UINT64_T].real;
  StasisMpiRealHandle sum = handles.ops.entries[STASIS_MPI_INDEX_SUM].real;
  StasisMpiRealHandle max = handles.ops.entries[STASIS_MPI_INDEX_MAX].real;
  if (LOWER_CALL(lower, allreduce, STASIS_MPI_LOWER_IN_PLACE, published, 2 * SETTLE_SLOTS * world_ranks, uint64_type,
                 sum, private_world) != 0) {
    snprintf(error, error_size, "the library refused the collectives' agreement (allreduce)");
    return -1;
  }
  /* For each collective a rank published on a communicator of this rank's: the last one this rank
   * got past the point of no return on it. */
  memset(votes, 0, SETTLE_SLOTS * (size_t)world_ranks * sizeof *votes);
  for (int entry = 0; entry < SETTLE_SLOTS * world_ranks; entry++) {
    uint64_t key = published[2 * entry];
    if (!key) continue;
    for (uint32_t index = STASIS_MPI_INDEX_COMM_NULL + 1; index < handles.comms.next_unused; index++)
      if (handles.comms.entries[index].live && comm_key[index] == key && comm_decided[index] > votes[entry])
        votes[entry] = comm_decided[index];
  }
  uint64_t decided[SETTLE_SLOTS];
  if (LOWER_CALL(lower, reduce_scatter_block, votes, decided, SETTLE_SLOTS, uint64_type, max, private_world) != 0) {
    snprintf(error, error_size, "the library refused the collectives' agreement (reduce_scatter_block)");
    return -1;
  }
  if (unpublished) {
    snprintf(error, error_size, "%d collectives in flight on this rank, more than the %d a checkpoint can settle",
             count + unpublished, SETTLE_SLOTS);
    return -1;
  }
  /* Every collective up to the last a member passed is completed; the later ones no member
   * passed, and they stay posted. Only those are stepped: the others must stay as every member
   * found them. */
  int left = 0;
  for (int i = 0; i < count; i++)
    if (decided[i] >= in_flight[mine[i]].sequence) {
      in_flight[mine[i]].must_complete = 1;
      left++;
    }
  double started = LOWER_CALL(lower, wtime);
  while (left) {
    left = 0;
    for (int i = 0; i < count; i++) {
      Collective *c = &in_flight[mine[i]];
      if (!c->must_complete || c->done) continue;
      collective_step(c);
      if (c->done) *completed = collective_names[c->kind];
      else left++;
    }
    if (left && LOWER_CALL(lower, wtime) - started > SETTLE_PATIENCE_SECONDS) {
      snprintf(error, error_size, "%d collective%s did not complete in %d s though a member had passed %s point "
               "of no return", left, left == 1 ? "" : "s", SETTLE_PATIENCE_SECONDS, left == 1 ? "its" : "their");
      return -1;
    }
  }
  return 0;
}

int stasis_mpi_collectives_restarted(char *error, size_t error_size) {
  /* The drain completed every collective a member had got past its point of no return: what is
   * left is before it on every member, and is posted again from its start, in order. */
  for (int slot = 0; slot < in_flight_end; slot++) {
    Collective *c = &in_flight[slot];
    if (!c->active || c->done) continue;
    if (c->two_phase && !c->entry_barrier) {
      snprintf(error, error_size, "%s was past its entry barrier at the checkpoint but not completed",
               collective_names[c->kind]);
      return -1;
    }
    c->request = 0; /* the next step posts it in the fresh library */
    if (comm_posted[c->comm_index] >= c->sequence) comm_posted[c->comm_index] = c->sequence - 1;
  }
  return 0;
}
