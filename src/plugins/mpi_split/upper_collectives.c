/* The collectives, made safe points (README.md, Safe points inside blocking calls). A blocking
 * collective is the library's nonblocking one and a test loop in the upper half, each test in a
 * safe region, so a checkpoint holds a rank between two tests. Every communicator counts the
 * collectives this rank started on it (its sequence number) and those it got past the point of
 * no return: for MPI_Barrier and MPI_Allreduce, completion (no member completes one before every
 * member started it); for the rooted MPI_Bcast and MPI_Reduce (a root may finish a broadcast
 * before the others start it), an MPI_Ibarrier first, whose completion is that point (MANA's
 * two phases). At the checkpoint's drain every rank publishes its collective in progress
 * (communicator key, sequence number) and learns from every member whether one has got past that
 * point: then every member completes it before the image is taken; otherwise no member has, and
 * each leaves it posted (a restart posts it again in the fresh library). Two reductions over the
 * private world, whatever the number of communicators.
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
#include "upper_state.h"

enum CollectiveKind {
  COLLECTIVE_BARRIER,
  COLLECTIVE_ALLREDUCE,
  COLLECTIVE_BCAST,
  COLLECTIVE_REDUCE,
  COLLECTIVE_COMM_DUP,
  COLLECTIVE_COMM_SPLIT,
  COLLECTIVE_COMM_CREATE,
  COLLECTIVE_FINALIZE,
  /* The rest, in the order of enum StasisMpiLowerCollectiveKind: posted with lower->icollective. */
  COLLECTIVE_GATHER,
  COLLECTIVE_GATHERV,
  COLLECTIVE_SCATTER,
  COLLECTIVE_SCATTERV,
  COLLECTIVE_ALLGATHER,
  COLLECTIVE_ALLGATHERV,
  COLLECTIVE_ALLTOALL,
  COLLECTIVE_ALLTOALLV,
  COLLECTIVE_REDUCE_SCATTER,
  COLLECTIVE_REDUCE_SCATTER_BLOCK,
  COLLECTIVE_SCAN,
  COLLECTIVE_EXSCAN,
};
static const char *const collective_names[] = {
    "MPI_Barrier",   "MPI_Allreduce",  "MPI_Bcast",     "MPI_Reduce",         "MPI_Comm_dup",
    "MPI_Comm_split", "MPI_Comm_create", "MPI_Finalize", "MPI_Gather",         "MPI_Gatherv",
    "MPI_Scatter",   "MPI_Scatterv",   "MPI_Allgather", "MPI_Allgatherv",     "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan"};
_Static_assert(sizeof collective_names / sizeof collective_names[0] == COLLECTIVE_EXSCAN + 1, "a name for each");
_Static_assert(COLLECTIVE_EXSCAN - COLLECTIVE_GATHER == STASIS_MPI_LOWER_EXSCAN, "the lower half's order");
static int is_reduction(enum CollectiveKind kind) {
  return kind == COLLECTIVE_ALLREDUCE || kind == COLLECTIVE_REDUCE || kind == COLLECTIVE_REDUCE_SCATTER ||
         kind == COLLECTIVE_REDUCE_SCATTER_BLOCK || kind == COLLECTIVE_SCAN || kind == COLLECTIVE_EXSCAN;
}
static int is_creation(enum CollectiveKind kind) {
  return kind == COLLECTIVE_COMM_DUP || kind == COLLECTIVE_COMM_SPLIT || kind == COLLECTIVE_COMM_CREATE;
}
/* Only an MPI_Ibarrier: the barrier, a creation's entry and MPI_Finalize's. */
static int barrier_only(enum CollectiveKind kind) {
  return kind == COLLECTIVE_BARRIER || kind == COLLECTIVE_FINALIZE || is_creation(kind);
}
_Atomic int stasis_mpi_finalizing;

/* The collective in progress: one at most (threads up to MPI_THREAD_SERIALIZED). Read and
 * written only in safe regions, by the program's thread or, at the drain, the checkpoint's. */
typedef struct Collective {
  int active, done, result;
  enum CollectiveKind kind;
  int comm;                    /* the program's id */
  uint32_t comm_index;
  uint64_t sequence;           /* its number among the collectives this rank started on comm, from 1 */
  int two_phase;               /* an MPI_Ibarrier first: the rooted kinds, and MPI_IN_PLACE (below) */
  int entry_barrier;           /* still in that MPI_Ibarrier */
  StasisMpiRealHandle request; /* the library's request of the current phase; 0: not posted in this library */
  const void *sendbuf;
  void *recvbuf;
  int count, datatype, op, root;
  int recvcount, recvtype; /* the gathers', scatters' and all-to-alls' receive side (count, datatype: the send side) */
  const int *sendcounts, *sdispls, *recvcounts, *rdispls; /* the v kinds' */
  int color, key, group; /* a creation's arguments */
  int made;              /* the communicator a creation made (its id), MPI_COMM_NULL where none */
} Collective;
static Collective current;

/* Per communicator index: its key (the same on every member), the collectives started and
 * those past the point of no return, and the communicators made from it (for its children's keys). */
static uint64_t comm_key[COMM_CAPACITY], comm_started[COMM_CAPACITY], comm_decided[COMM_CAPACITY],
    comm_children[COMM_CAPACITY];
/* The drain's agreement: every rank's (key, sequence) and its votes, one slot per world rank;
 * allocated at MPI_Init (the drain may not allocate: the program's threads may be stopped in malloc). */
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
  published = calloc(2 * (size_t)world_size, sizeof *published);
  votes = calloc((size_t)world_size, sizeof *votes);
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
  comm_started[index] = comm_decided[index] = comm_children[index] = 0;
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
  else rc = LOWER_CALL_IN_REGION(lower, comm_create, real_parent, real_group, &made);
  if (rc != 0) return library_error(rc);
  uint32_t op = replay_ops[c->kind - COLLECTIVE_COMM_DUP];
  if (c->kind == COLLECTIVE_COMM_CREATE) return stasis_mpi_record_comm(name, op, made, c->comm, 0, c->group, 0, &c->made);
  return stasis_mpi_record_comm(name, op, made, c->comm, c->color, c->color, c->key, &c->made);
}

/* One step of the collective in progress: posts its phase where none is posted, else tests it;
 * the entry barrier's completion, or a single-phase collective's, is the point of no return. In a
 * safe region. */
static void collective_step(Collective *c) {
  int rc = MPI_SUCCESS, flag = 0;
  if (!c->request) {
    rc = post_phase(c);
  } else {
    rc = library_error(LOWER_CALL_IN_REGION(lower, test, &c->request, 0, &flag, NULL));
    if (rc == MPI_SUCCESS && flag) {
      c->request = 0;
      if (c->entry_barrier || !c->two_phase) comm_decided[c->comm_index] = c->sequence;
      if (c->kind == COLLECTIVE_FINALIZE) atomic_store(&stasis_mpi_finalizing, 1); /* every rank has reached it */
      if (is_creation(c->kind)) {
        rc = make_communicator(c); /* in this region: every member has arrived */
        c->entry_barrier = 0;
        c->done = 1;
        c->result = rc;
        return;
      }
      if (c->entry_barrier) c->entry_barrier = 0; /* the next step posts the collective itself */
      else c->done = 1;
    }
  }
  if (rc != MPI_SUCCESS) {
    c->done = 1;
    c->result = rc;
  }
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

static int run_collective(Collective *asked) {
  const char *name = collective_names[asked->kind];
  stasis_mpi_safe_point_enter(name);
  current = *asked;
  current.active = 1;
  current.comm_index = (uint32_t)stasis_mpi_ids_index(&handles.comms, asked->comm);
  current.sequence = ++comm_started[current.comm_index];
  current.two_phase = needs_entry_barrier(asked);
  current.entry_barrier = current.two_phase;
  stasis_mpi_safe_point_leave();
  for (unsigned turn = 0;; turn++) {
    stasis_mpi_safe_point_enter(name);
    if (!current.done) collective_step(&current);
    int done = current.done, result = current.result;
    if (done) {
      current.active = 0;
      asked->made = current.made;
    }
    stasis_mpi_blocked_in = done ? NULL : name;
    stasis_mpi_safe_point_leave();
    if (done) return result;
    stasis_mpi_wait_turn(turn);
  }
}

API int MPI_Barrier(MPI_Comm comm) {
  NEED_LOWER("MPI_Barrier");
  if (stasis_mpi_ids_index(&handles.comms, comm) <= STASIS_MPI_INDEX_COMM_NULL)
    return not_live("MPI_Barrier", "communicator", comm, MPI_ERR_COMM);
  Collective asked = {.kind = COLLECTIVE_BARRIER, .comm = comm};
  return run_collective(&asked);
}

/* The ids are checked here, so that a bad one is refused before anything is posted. */
static int check_ids(const char *function, MPI_Comm comm, MPI_Datatype datatype, MPI_Op op, int has_op) {
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_index(&handles.comms, comm) <= STASIS_MPI_INDEX_COMM_NULL ||
      stasis_mpi_ids_real(&handles.comms, comm, &real) != 0)
    return not_live(function, "communicator", comm, MPI_ERR_COMM);
  if (stasis_mpi_ids_real(&handles.datatypes, datatype, &real) != 0)
    return not_live(function, "datatype", datatype, MPI_ERR_TYPE);
  if (has_op && stasis_mpi_ids_real(&handles.ops, op, &real) != 0)
    return not_live(function, "operation", op, MPI_ERR_OP);
  return MPI_SUCCESS;
}

API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  NEED_LOWER("MPI_Bcast");
  int rc = check_ids("MPI_Bcast", comm, datatype, 0, 0);
  if (rc != MPI_SUCCESS) return rc;
  Collective asked = {.kind = COLLECTIVE_BCAST, .comm = comm, .recvbuf = buffer, .count = count,
                      .datatype = datatype, .root = root};
  return run_collective(&asked);
}

/* MPI_IN_PLACE and the lower half's stand-in for it are the same value. */
_Static_assert(MPI_IN_PLACE == STASIS_MPI_LOWER_IN_PLACE, "MPI_IN_PLACE must pass through unchanged");

API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm) {
  NEED_LOWER("MPI_Allreduce");
  int rc = check_ids("MPI_Allreduce", comm, datatype, op, 1);
  if (rc != MPI_SUCCESS) return rc;
  Collective asked = {.kind = COLLECTIVE_ALLREDUCE, .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .count = count, .datatype = datatype, .op = op};
  return run_collective(&asked);
}

API int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                   MPI_Comm comm) {
  NEED_LOWER("MPI_Reduce");
  int rc = check_ids("MPI_Reduce", comm, datatype, op, 1);
  if (rc != MPI_SUCCESS) return rc;
  Collective asked = {.kind = COLLECTIVE_REDUCE, .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .count = count, .datatype = datatype, .op = op, .root = root};
  return run_collective(&asked);
}

/* The gathers, scatters, all-to-alls, reduce-scatters and scans: the communicator and the
 * significant ids checked before anything is posted. */
static int run_checked(Collective *asked) {
  const char *name = collective_names[asked->kind];
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_index(&handles.comms, asked->comm) <= STASIS_MPI_INDEX_COMM_NULL ||
      stasis_mpi_ids_real(&handles.comms, asked->comm, &real) != 0)
    return not_live(name, "communicator", asked->comm, MPI_ERR_COMM);
  if (is_reduction(asked->kind) && stasis_mpi_ids_real(&handles.ops, asked->op, &real) != 0)
    return not_live(name, "operation", asked->op, MPI_ERR_OP);
  return run_collective(asked);
}

API int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm) {
  NEED_LOWER("MPI_Gather");
  Collective asked = {.kind = COLLECTIVE_GATHER, .comm = comm, .sendbuf = sendbuf, .count = sendcount,
                      .datatype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount, .recvtype = recvtype,
                      .root = root};
  return run_checked(&asked);
}

API int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  NEED_LOWER("MPI_Gatherv");
  Collective asked = {.kind = COLLECTIVE_GATHERV, .comm = comm, .sendbuf = sendbuf, .count = sendcount,
                      .datatype = sendtype, .recvbuf = recvbuf, .recvcounts = recvcounts, .rdispls = displs,
                      .recvtype = recvtype, .root = root};
  return run_checked(&asked);
}

API int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm) {
  NEED_LOWER("MPI_Scatter");
  Collective asked = {.kind = COLLECTIVE_SCATTER, .comm = comm, .sendbuf = sendbuf, .count = sendcount,
                      .datatype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount, .recvtype = recvtype,
                      .root = root};
  return run_checked(&asked);
}

API int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  NEED_LOWER("MPI_Scatterv");
  Collective asked = {.kind = COLLECTIVE_SCATTERV, .comm = comm, .sendbuf = sendbuf, .sendcounts = sendcounts,
                      .sdispls = displs, .datatype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount,
                      .recvtype = recvtype, .root = root};
  return run_checked(&asked);
}

API int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm) {
  NEED_LOWER("MPI_Allgather");
  Collective asked = {.kind = COLLECTIVE_ALLGATHER, .comm = comm, .sendbuf = sendbuf, .count = sendcount,
                      .datatype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount, .recvtype = recvtype};
  return run_checked(&asked);
}

API int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  NEED_LOWER("MPI_Allgatherv");
  Collective asked = {.kind = COLLECTIVE_ALLGATHERV, .comm = comm, .sendbuf = sendbuf, .count = sendcount,
                      .datatype = sendtype, .recvbuf = recvbuf, .recvcounts = recvcounts, .rdispls = displs,
                      .recvtype = recvtype};
  return run_checked(&asked);
}

API int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm) {
  NEED_LOWER("MPI_Alltoall");
  Collective asked = {.kind = COLLECTIVE_ALLTOALL, .comm = comm, .sendbuf = sendbuf, .count = sendcount,
                      .datatype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount, .recvtype = recvtype};
  return run_checked(&asked);
}

API int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                      void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                      MPI_Comm comm) {
  NEED_LOWER("MPI_Alltoallv");
  Collective asked = {.kind = COLLECTIVE_ALLTOALLV, .comm = comm, .sendbuf = sendbuf, .sendcounts = sendcounts,
                      .sdispls = sdispls, .datatype = sendtype, .recvbuf = recvbuf, .recvcounts = recvcounts,
                      .rdispls = rdispls, .recvtype = recvtype};
  return run_checked(&asked);
}

API int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm) {
  NEED_LOWER("MPI_Reduce_scatter");
  Collective asked = {.kind = COLLECTIVE_REDUCE_SCATTER, .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .recvcounts = recvcounts, .datatype = datatype, .op = op};
  return run_checked(&asked);
}

API int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                 MPI_Op op, MPI_Comm comm) {
  NEED_LOWER("MPI_Reduce_scatter_block");
  Collective asked = {.kind = COLLECTIVE_REDUCE_SCATTER_BLOCK, .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .recvcount = recvcount, .datatype = datatype, .op = op};
  return run_checked(&asked);
}

API int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  NEED_LOWER("MPI_Scan");
  Collective asked = {.kind = COLLECTIVE_SCAN, .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                      .datatype = datatype, .op = op};
  return run_checked(&asked);
}

API int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  NEED_LOWER("MPI_Exscan");
  Collective asked = {.kind = COLLECTIVE_EXSCAN, .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .count = count, .datatype = datatype, .op = op};
  return run_checked(&asked);
}

int stasis_mpi_create_comm(uint32_t replay_op, MPI_Comm comm, int color, int key, MPI_Group group, MPI_Comm *newcomm) {
  enum CollectiveKind kind = replay_op == STASIS_MPI_REPLAY_COMM_DUP     ? COLLECTIVE_COMM_DUP
                             : replay_op == STASIS_MPI_REPLAY_COMM_SPLIT ? COLLECTIVE_COMM_SPLIT
                                                                         : COLLECTIVE_COMM_CREATE;
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_index(&handles.comms, comm) <= STASIS_MPI_INDEX_COMM_NULL ||
      stasis_mpi_ids_real(&handles.comms, comm, &real) != 0)
    return not_live(collective_names[kind], "communicator", comm, MPI_ERR_COMM);
  Collective asked = {.kind = kind, .comm = comm, .color = color, .key = key, .group = group, .made = MPI_COMM_NULL};
  int rc = run_collective(&asked);
  if (rc == MPI_SUCCESS) *newcomm = asked.made;
  return rc;
}

int stasis_mpi_finalize_entry(void) {
  Collective asked = {.kind = COLLECTIVE_FINALIZE, .comm = MPI_COMM_WORLD};
  return run_collective(&asked);
}

int stasis_mpi_collectives_drive(int patience_ms) {
  if (!current.active || current.done || !is_creation(current.kind) || !current.request) return 0;
  double started = LOWER_CALL_IN_REGION(lower, wtime);
  while (!current.done) {
    collective_step(&current);
    if (!current.done && (LOWER_CALL_IN_REGION(lower, wtime) - started) * 1000 > patience_ms) return 0;
  }
  return 1;
}

/* How long the drain drives a collective that some member got past its point of no return
 * before it gives up: every member then completes it, unless one is lost. */
enum { SETTLE_PATIENCE_SECONDS = 30 };

int stasis_mpi_collectives_settle(const char **completed, char *error, size_t error_size) {
  *completed = NULL;
  int in_progress = current.active && !current.done;
  memset(published, 0, 2 * (size_t)world_ranks * sizeof *published);
  if (in_progress) {
    published[2 * stasis_mpi_own_world_rank] = comm_key[current.comm_index];
    published[2 * stasis_mpi_own_world_rank + 1] = current.sequence;
  }
  StasisMpiRealHandle uint64_type = handles.datatypes.entries[STASIS_MPI_INDEX_UINT64_T].real;
  StasisMpiRealHandle sum = handles.ops.entries[STASIS_MPI_INDEX_SUM].real;
  if (LOWER_CALL(lower, allreduce, STASIS_MPI_LOWER_IN_PLACE, published, 2 * world_ranks, uint64_type, sum,
                 private_world) != 0) {
    snprintf(error, error_size, "the library refused the collectives' agreement (allreduce)");
    return -1;
  }
  /* A vote for each rank whose collective in progress is on a communicator of this rank's that
   * this rank got past that collective's point of no return on. */
  memset(votes, 0, (size_t)world_ranks * sizeof *votes);
  for (int rank = 0; rank < world_ranks; rank++) {
    uint64_t key = published[2 * rank], sequence = published[2 * rank + 1];
    if (!key) continue;
    for (uint32_t index = STASIS_MPI_INDEX_COMM_NULL + 1; index < handles.comms.next_unused; index++)
      if (handles.comms.entries[index].live && comm_key[index] == key && comm_decided[index] >= sequence)
        votes[rank] = 1;
  }
  uint64_t past_no_return = 0;
  if (LOWER_CALL(lower, reduce_scatter_block, votes, &past_no_return, 1, uint64_type, sum, private_world) != 0) {
    snprintf(error, error_size, "the library refused the collectives' agreement (reduce_scatter_block)");
    return -1;
  }
  if (!in_progress || !past_no_return) return 0; /* left posted: no member has completed it */
  double started = LOWER_CALL(lower, wtime);
  while (!current.done) {
    collective_step(&current);
    if (LOWER_CALL(lower, wtime) - started > SETTLE_PATIENCE_SECONDS) {
      snprintf(error, error_size, "%s on a communicator (collective %llu on it) did not complete in %d s though a "
               "member had completed it", collective_names[current.kind], (unsigned long long)current.sequence,
               SETTLE_PATIENCE_SECONDS);
      return -1;
    }
  }
  *completed = collective_names[current.kind];
  return 0;
}

int stasis_mpi_collectives_restarted(char *error, size_t error_size) {
  if (!current.active || current.done) return 0;
  /* The drain completed every collective a member had got past its point of no return: what is
   * left is before it on every member, and is posted again from its start. */
  if (current.two_phase && !current.entry_barrier) {
    snprintf(error, error_size, "%s was past its entry barrier at the checkpoint but not completed",
             collective_names[current.kind]);
    return -1;
  }
  current.request = 0; /* the next step posts it in the fresh library */
  return 0;
}
