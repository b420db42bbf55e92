/* Messages taken out of the library by the drain (README.md, Draining), kept in the upper half
 * until the program receives them. Kept in arrival order; a receive takes the first one that
 * matches its communicator, source and tag (wildcards included), which keeps MPI's order
 * between each pair. The data are as the library packs them (MPI_PACKED, received so), and a
 * receive unpacks them with its own datatype. */
#ifndef STASIS_MPI_DRAIN_QUEUE_H
#define STASIS_MPI_DRAIN_QUEUE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct StasisMpiDrained {
  struct StasisMpiDrained *next;
  int comm;   /* virtual id */
  int source; /* rank in comm */
  int tag;
  int bytes;
  unsigned char data[];
} StasisMpiDrained;

typedef struct StasisMpiDrainQueue {
  StasisMpiDrained *head, *tail;
  uint64_t count;
} StasisMpiDrainQueue;

/* A message of `bytes` bytes whose data the caller then fills; NULL when out of memory. */
StasisMpiDrained *stasis_mpi_drained_new(int comm, int source, int tag, int bytes);
void stasis_mpi_drained_free(StasisMpiDrained *message);

/* Appends `message` (from stasis_mpi_drained_new) at the end. */
void stasis_mpi_drain_keep(StasisMpiDrainQueue *queue, StasisMpiDrained *message);

/* Unlinks and returns the first message on `comm` from `source` (or MPI_ANY_SOURCE, -1) with
 * `tag` (or MPI_ANY_TAG, -1); NULL when none. The caller frees it (stasis_mpi_drained_free). */
StasisMpiDrained *stasis_mpi_drain_take(StasisMpiDrainQueue *queue, int comm, int source, int tag);

/* Whether a take with the same arguments would find a message (nothing is unlinked). */
int stasis_mpi_drain_has(const StasisMpiDrainQueue *queue, int comm, int source, int tag);
/* The message such a take would return, left in place (a probe); NULL when none. */
const StasisMpiDrained *stasis_mpi_drain_find(const StasisMpiDrainQueue *queue, int comm, int source, int tag);

#ifdef __cplusplus
}
#endif
#endif
