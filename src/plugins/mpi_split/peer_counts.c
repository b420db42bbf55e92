/* Point-to-point messages counted per peer (peer_counts.h). */
#include "peer_counts.h"

#include <stdlib.h>
#include <string.h>

int stasis_mpi_peers_init(StasisMpiPeerCounts *peers, int world_size, uint32_t comm_capacity) {
  memset(peers, 0, sizeof *peers);
  if (world_size <= 0 || comm_capacity == 0) return -1;
  peers->world_size = world_size;
  peers->sent_to = calloc((size_t)world_size, sizeof *peers->sent_to);
  peers->received_from = calloc((size_t)world_size, sizeof *peers->received_from);
  peers->comms = calloc(comm_capacity, sizeof *peers->comms);
  peers->comm_capacity = comm_capacity;
  return peers->sent_to && peers->received_from && peers->comms ? 0 : -1;
}

int stasis_mpi_peers_map_comm(StasisMpiPeerCounts *peers, uint32_t index, const int *world_rank, int size) {
  if (index >= peers->comm_capacity || size < 0) return -1;
  int *copy = NULL;
  if (world_rank) {
    copy = malloc((size_t)(size ? size : 1) * sizeof *copy);
    if (!copy) return -1;
    for (int i = 0; i < size; i++) {
      if (world_rank[i] < 0 || world_rank[i] >= peers->world_size) {
        free(copy);
        return -1;
      }
      copy[i] = world_rank[i];
    }
  }
  free(peers->comms[index].world_rank);
  peers->comms[index].world_rank = copy;
  peers->comms[index].size = size;
  return 0;
}
