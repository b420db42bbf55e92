/* Point-to-point messages counted per peer, for the drain (README.md, Draining): how many this
 * rank sent to each rank of MPI_COMM_WORLD and how many it received from each. Peers are counted
 * by world rank whatever communicator carried the message, so one reduction over the world
 * tells every rank how many messages were sent to it in all, and no key per communicator is
 * needed. A send counts when it is posted, a receive when it completes.
 *
 * The per-communicator maps (its ranks to world ranks) are made when the communicator is, in the
 * program's own call (malloc is allowed there); counting allocates nothing. */
#ifndef STASIS_MPI_PEER_COUNTS_H
#define STASIS_MPI_PEER_COUNTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct StasisMpiCommRanks {
  int size;
  int *world_rank; /* [size]; NULL: the communicator's ranks are the world's */
} StasisMpiCommRanks;

typedef struct StasisMpiPeerCounts {
  int world_size;
  uint64_t *sent_to;       /* [world_size] */
  uint64_t *received_from; /* [world_size] */
  uint64_t received_total;
  uint64_t uncounted;      /* peers a map did not know: each one makes the drain's answer wrong */
  uint32_t comm_capacity;
  StasisMpiCommRanks *comms; /* [comm_capacity], by communicator index */
} StasisMpiPeerCounts;

/* Zero counts for world_size ranks, every communicator index unmapped; -1 when out of memory. */
int stasis_mpi_peers_init(StasisMpiPeerCounts *peers, int world_size, uint32_t comm_capacity);

/* Communicator `index` has `size` ranks whose world ranks are `world_rank` (copied; NULL: the
 * identity, for MPI_COMM_WORLD). Replaces a previous map at that index. -1 when out of memory
 * or out of range. */
int stasis_mpi_peers_map_comm(StasisMpiPeerCounts *peers, uint32_t index, const int *world_rank, int size);

static inline int stasis_mpi_peers_world_rank(const StasisMpiPeerCounts *peers, uint32_t index, int rank) {
  if (index >= peers->comm_capacity) return -1;
  const StasisMpiCommRanks *comm = &peers->comms[index];
  if (rank < 0 || rank >= comm->size) return -1;
  return comm->world_rank ? comm->world_rank[rank] : rank;
}

static inline void stasis_mpi_peers_sent(StasisMpiPeerCounts *peers, uint32_t index, int rank) {
  int world = stasis_mpi_peers_world_rank(peers, index, rank);
  if (world < 0) peers->uncounted++;
  else peers->sent_to[world]++;
}

static inline void stasis_mpi_peers_received(StasisMpiPeerCounts *peers, uint32_t index, int rank) {
  int world = stasis_mpi_peers_world_rank(peers, index, rank);
  if (world < 0) {
    peers->uncounted++;
    return;
  }
  peers->received_from[world]++;
  peers->received_total++;
}

#ifdef __cplusplus
}
#endif
#endif
