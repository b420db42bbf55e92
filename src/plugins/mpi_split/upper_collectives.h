/* The collectives' engine and the MPI_* functions made of it share this (upper_collectives.c,
 * upper_collective_calls.c): a collective as the program asked for it, and the two ways to run
 * one. Internal to libstasis_mpi.so. */
#ifndef STASIS_MPI_UPPER_COLLECTIVES_H
#define STASIS_MPI_UPPER_COLLECTIVES_H

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
  COLLECTIVE_INTERCOMM_MERGE, /* a creation (mpiinter): its entry barrier spans both groups */
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

/* A collective in progress. Read and written only in safe regions, by the program's thread or, at
 * a checkpoint, the checkpoint's. */
typedef struct Collective {
  int active, done, result;
  enum CollectiveKind kind;
  int comm; /* the program's id */
  uint32_t comm_index;
  uint64_t sequence;           /* its number among the collectives this rank started on comm, from 1 */
  int two_phase;               /* an MPI_Ibarrier first (needs_entry_barrier) */
  int entry_barrier;           /* still in that MPI_Ibarrier */
  int must_complete;           /* the checkpoint's agreement: a member got past its point of no return */
  StasisMpiRealHandle request; /* the library's request of the current phase; 0: not posted in this library */
  const void *sendbuf;
  void *recvbuf;
  int count, datatype, op, root; /* count and datatype: the send side where there are two */
  int recvcount, recvtype;       /* the gathers', scatters' and all-to-alls' receive side */
  const int *sendcounts, *sdispls, *recvcounts, *rdispls; /* the v kinds' */
  int color, key, group;                                  /* a creation's arguments */
  int made; /* the communicator a creation made (its id), MPI_COMM_NULL where none */
} Collective;

/* The communicator and operation checked (a bad id refused before anything is posted), then
 * the collective run to its end in the upper half's test loop, a safe point (a creation's
 * communicator in asked->made). */
int stasis_mpi_collective_run(Collective *asked);
/* The same checks, then the collective started: *request completes it (MPI_Wait). */
int stasis_mpi_collective_start(Collective *asked, MPI_Request *request);

/* Intercommunicators (mpiinter, upper_intercomm.c): the key of the next communicator made from
 * `parent` (counted among its children, as a creation is), and the key of an intercommunicator
 * just made, which both groups derive from the two local keys their leaders exchanged. */
uint64_t stasis_mpi_collectives_child_key(int parent);
void stasis_mpi_collectives_set_key(int comm, uint64_t mine, uint64_t theirs);

#endif
