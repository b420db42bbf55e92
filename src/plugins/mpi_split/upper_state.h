/* What the upper half's files share (upper_half.c: the MPI functions; upper_drain.c: the
 * drain): the tables, the log, the lower half's interface and the per-request state. Internal to
 * libstasis_mpi.so (hidden: the library exports only MPI_* and STASIS_MPI_*). */
#ifndef STASIS_MPI_UPPER_STATE_H
#define STASIS_MPI_UPPER_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/mpi.h"
#include "drain_queue.h"
#include "lower_half_api.h"
#include "peer_counts.h"
#include "replay_log.h"
#include "virtual_ids.h"

enum {
  COMM_CAPACITY = 4096,
  DATATYPE_CAPACITY = 4096,
  GROUP_CAPACITY = 1024,
  REQUEST_CAPACITY = 65536,
  REPLAY_CAPACITY = 65536,
  WINDOW_CAPACITY = 256, /* mpirma (upper_rma.c) */
  INFO_CAPACITY = 64,    /* mpinfo (upper_info.c) */
};

/* What a request's completion needs, by request index. */
typedef struct RequestSide {
  StasisMpiRealHandle recv_type; /* a receive's datatype (its status counts bytes with it); 0: a send */
  uint32_t comm_index;           /* a receive's communicator: its source is counted by world rank */
  int done;                      /* complete (served from the drained messages, or before a cancel took) */
  StasisMpiLowerStatus done_status;
  /* A receive's arguments, to post it again after the drain took it back from the library. */
  int parked;      /* taken back, not posted again yet */
  uint64_t posted; /* order of posting: receives are posted again in it */
  void *buf;
  int count, source, tag, comm;
  int type; /* a posted receive's datatype id: a restart posts it again in a fresh library */
  int collective; /* a nonblocking collective's: its slot in upper_collectives.c + 1; 0 for point-to-point */
  /* A persistent request's kind (upper_requests.c; 0: none), and the request its MPI_Start made
   * (MPI_REQUEST_NULL while inactive); its arguments are buf, count, type, source (the peer), tag,
   * comm above. */
  int persistent;
  int started;
} RequestSide;
extern RequestSide request_side[REQUEST_CAPACITY];

extern StasisMpiHandles handles;
extern StasisMpiReplayLog replay;
extern const StasisMpiLower *lower;
extern StasisMpiPeerCounts peers;
/* A duplicate of MPI_COMM_WORLD the program never sees: the drain's reductions run on it, so they
 * never match the program's own messages or collectives. Made again by every replay. */
extern StasisMpiRealHandle private_world;
/* Messages the drain took out of the library, until the program receives them. */
extern StasisMpiDrainQueue drained;
extern int finalized;
/* The thread level asked of the library (MPI_Init_thread's, at most MPI_THREAD_SERIALIZED: the
 * program's threads take turns in the regions), asked again of a fresh one at a restart. */
extern int stasis_mpi_lower_thread_level;
/* What MPI_Wtime adds to the library's clock (upper_checkpoint.c): each library counts from its own
 * origin (Open MPI from its MPI_Init, MPICH from another), so a restart sets it to carry on from
 * the checkpoint's MPI_Wtime; a program's deadline taken before keeps its meaning. */
extern double stasis_mpi_wtime_offset;

/* Binds the predefined ids to the running lower half's objects, makes every object of the replay
 * log again under its id and the private world again (STASIS_MPI_Remake_objects, and a restart).
 * 0, or -1 with a message. */
int stasis_mpi_remake_objects(char *error, size_t error_size);

/* STASIS_MPI_Drain's work (upper_drain.c), also run by the split checkpoint at its "drain". */
int stasis_mpi_drain_all(long long *taken);

/* Registers the split checkpoint's plugin with the runtime, when there is one and the lower half
 * lists what it owns (upper_checkpoint.c). After the lower half is loaded, before MPI_Init. */
void stasis_mpi_join_checkpoints(void);

/* The blocking calls' loops (README.md, Safe points inside blocking calls): after this many
 * tests a turn gives the core away (sched_yield). */
enum { SPINS_BEFORE_YIELD = 64 };
void stasis_mpi_wait_turn(unsigned turn);
/* The blocking call the program's thread waits in (its name), NULL when none: what a checkpoint
 * reports it found. Written in safe regions. */
extern const char *stasis_mpi_blocked_in;

/* The collectives (upper_collectives.c). _init at MPI_Init (world rank and size); _comm_made
 * after a communicator is made from `parent` (made is MPI_COMM_NULL where this rank got none;
 * color 0 for a dup): its key, the same on every member. */
int stasis_mpi_collectives_init(int world_rank, int world_size);
extern int stasis_mpi_own_world_rank; /* this rank in MPI_COMM_WORLD */
void stasis_mpi_collectives_comm_made(int parent, int made, int color);
/* At the checkpoint's drain, every rank at once: a collective that some member has got past its
 * point of no return is completed on every member (*completed: its name, else NULL); the others
 * are left posted. 0, or -1 with a message. */
int stasis_mpi_collectives_settle(const char **completed, char *error, size_t error_size);
/* The communicator creations (MPI_Comm_dup, _split, _create: replay_op says which; color and key
 * for a split, group for a create) wait at an MPI_Ibarrier on comm first, a safe point; *newcomm
 * is the id made, MPI_COMM_NULL where this rank got none. */
int stasis_mpi_create_comm(uint32_t replay_op, MPI_Comm comm, int color, int key, MPI_Group group, MPI_Comm *newcomm);
/* Records a communicator a creation made (upper_half.c); in a safe region, allocates nothing. */
int stasis_mpi_record_comm(const char *function, uint32_t op, StasisMpiRealHandle made, int parent, int color,
                           int arg0, int arg1, int *newcomm);
/* MPI_Finalize's wait for every rank (an MPI_Ibarrier on the world, a safe point); once it is
 * complete stasis_mpi_finalizing is set and no checkpoint is taken any more. */
int stasis_mpi_finalize_entry(void);
extern _Atomic int stasis_mpi_finalizing;
/* At the safe point, by the checkpoint thread once the program's threads are out of the library:
 * a creation whose program thread is held at its entry barrier is driven for up to patience_ms;
 * if the barrier completes, the communicator is made here (a member may be inside the blocking
 * creation, waiting for this one). 1 when it made one, else 0 (left posted). */
int stasis_mpi_collectives_drive(int patience_ms);
/* Active collectives (blocking and nonblocking) on this rank; a step of each (in a safe region):
 * every test of the program's drives them, as a library's progress would. */
extern int stasis_mpi_collectives_pending;
void stasis_mpi_collectives_progress(void);
/* Whether the nonblocking collective in `slot` is complete (1, *rc its result, the slot freed) or
 * not (0), after a step of every collective. In a safe region. */
int stasis_mpi_collective_test(int slot, int *rc);
/* After a restart: the collectives left posted are posted again in the fresh library. */
int stasis_mpi_collectives_restarted(char *error, size_t error_size);

/* A message posted to `dest` of the live communicator `comm`, counted for the drain. */
void stasis_mpi_count_sent(MPI_Comm comm, int dest);
/* MPI_Wait (flag NULL) or MPI_Test of persistent request `index` (upper_requests.c). */
int stasis_mpi_persistent_complete(const char *function, int64_t index, MPI_Status *status, int *flag);
/* After a restart: the buffer MPI_Buffer_attach gave is attached to the fresh library. 0, or -1
 * with a message. */
int stasis_mpi_requests_restarted(char *error, size_t error_size);

/* mpirma: one-sided communication (upper_rma.c). The function that made a live window a
 * checkpoint cannot save (MPI_Win_allocate_shared, MPI_Win_create_dynamic), else NULL. At the
 * checkpoint's drain, every rank at once: every RMA operation in flight completed (an open fence
 * epoch fenced, a passive one flushed; *completed: windows so treated). After a restart: every
 * window made again over its memory, its epochs opened again (*remade: windows). 0, or -1 with a
 * message. */
const char *stasis_mpi_rma_refusal(void);
int stasis_mpi_rma_complete(int *completed, char *error, size_t error_size);
int stasis_mpi_rma_restarted(int *remade, char *error, size_t error_size);

/* Cartesian topologies (upper_topology.c): a dup keeps its parent's grid (MPI_SUCCESS, or
 * MPI_ERR_INTERN when the grid table is full), a free forgets it (the id may be given out again). */
int stasis_mpi_topology_comm_dup(int from, int made);
void stasis_mpi_topology_comm_freed(int comm);

/* One test of live request `index` (upper_half.c), in a safe region: 1 when complete (*status
 * filled, a receive counted), 0 when not, -1 with *rc the library's error. */
int test_request_in_region(int64_t index, StasisMpiLowerStatus *status, int *rc);

/* An id's handle of the moment, for the arguments of LOWER_CALL, which are evaluated inside its
 * safe region: a thread held at the region's entry by a checkpoint may find the objects made again
 * in a fresh library when it goes on (a restart), so a handle read before the entry may be stale. */
#define REAL_NOW(table, id) ((table).entries[stasis_mpi_ids_index(&(table), (id))].real)
/* Gives `real`, just made by the library, a virtual id in `table` and logs how it was made
 * (upper_half.c); MPI_ERR_INTERN, saying so, on a full table or log. */
int remember(const char *function, StasisMpiIdTable *table, StasisMpiRealHandle real, uint32_t op, int from, int arg0,
             int arg1, int arg2, int *id);
/* After a communicator creation that returned rc: the new communicator's ranks (remote: an
 * intercommunicator's remote group) mapped to world ranks for the drain's counts. Outside any
 * region (it allocates). */
int map_comm_ranks(const char *function, int comm, int remote);
int comm_created(const char *function, int rc, MPI_Comm *newcomm);
/* Part "mpiops" (upper_ops_types.c): the replay log's array storage, at MPI_Init. */
void stasis_mpi_ops_types_init(void);
/* Gives `made`, an object the library just made (lower call's result rc), an id in `table` and a
 * record `op` whose array is `array` (n values); in a safe region (upper_ops_types.c). */
int made_with_array(const char *function, StasisMpiIdTable *table, uint32_t op, int from, int count,
                    const int64_t *array, uint32_t n, StasisMpiRealHandle made, int rc, int *id);
/* Part "mpinfo": the thread level MPI_Init_thread gave the program (MPI_Query_thread's answer). */
extern int stasis_mpi_provided_thread_level;

/* One line on stderr, "stasis mpi_split: FUNCTION: what". */
void complain(const char *function, const char *what);
int not_initialized(const char *function);
/* Says that `id` is not a live `what`; returns error_class. */
int not_live(const char *function, const char *what, int id, int error_class);
/* MPI_SUCCESS for the library's success, MPI_ERR_OTHER for any of its errors. */
int library_error(int rc);
/* The lower half's status as the program's. */
void status_up(const StasisMpiLowerStatus *lower_status, MPI_Status *status);
/* Serves a receive from the drained messages: MPI_SUCCESS (status filled) or an error when one
 * matched, -1 when none did (the library is asked as usual). In a safe region (lower_tls.h). */
int receive_drained(const char *function, void *buf, int count, StasisMpiRealHandle real_type, int source, int tag,
                    MPI_Comm comm, StasisMpiRealHandle real_comm, StasisMpiLowerStatus *status);

/* What libstasis_mpi.so exports: the MPI_* and STASIS_MPI_* functions, nothing else. */
#define API __attribute__((visibility("default")))

/* Attributes (upper_attributes.c): the copy functions of `from`'s attributes run for its dup `to`
 * (MPI_Comm_dup); the delete functions of every attribute on `object`, last set first, before it
 * is freed (MPI_Comm_free, MPI_Type_free, MPI_Win_free; MPI_COMM_SELF at MPI_Finalize). Outside
 * any region (the program's functions may call MPI). MPI_SUCCESS, or the first function's error. */
int stasis_mpi_attributes_copy(int from, int to);
int stasis_mpi_attributes_delete_all(int object);
/* MPI_Win_get_attr of a keyval the program made (upper_rma.c answers the predefined ones). */
int stasis_mpi_window_attribute(MPI_Win win, int keyval, void *value, int *flag);

#define NEED_LOWER(function)                                                                                    \
  do {                                                                                                          \
    if (!lower || finalized) return not_initialized(function);                                                  \
  } while (0)
#endif
