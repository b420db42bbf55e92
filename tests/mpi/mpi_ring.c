/* mpi_ring: an MPI job whose ranks pass data around a ring and reduce it every step.
 * usage: mpirun -np R mpi_ring [STEPS=60] [DELAY_MS=50] [WORDS=4096]
 * Each rank keeps WORDS 64-bit words (heap) it updates from a per-rank generator; per step it
 * sends its block to the next rank and receives the previous rank's (MPI_Sendrecv), folds that
 * in, then all ranks combine a checksum with MPI_Allreduce (sum and xor). Rank 0 prints
 * "step N sum S xor X" per step and "done ..." at the end. The output depends only on the
 * arguments and the number of ranks (integer arithmetic, fixed reduction order irrelevant for
 * sum/xor of integers), never on timing. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include "mpi_common.h"

int main(int argc, char **argv) {
  int rank = 0, size = 1;
  mpi_start(&argc, &argv, &rank, &size);
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  long words = arg_long(argc, argv, 3, 4096);
  CHECK(words > 0);

  uint64_t *mine = malloc((size_t)words * sizeof *mine);
  uint64_t *theirs = malloc((size_t)words * sizeof *theirs);
  CHECK(mine && theirs);
  uint64_t seed = 1000 + (uint64_t)rank;
  for (long i = 0; i < words; i++) mine[i] = splitmix64(&seed);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;

  for (long step = 1; step <= steps; step++) {
    MPI_Sendrecv(mine, (int)words, MPI_UINT64_T, next, (int)(step & 0x7fff), theirs, (int)words, MPI_UINT64_T,
                 previous, (int)(step & 0x7fff), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    uint64_t local[2] = {0, 0};
    for (long i = 0; i < words; i++) {
      mine[i] = mine[i] * 6364136223846793005ULL + (theirs[(i + step) % words] ^ splitmix64(&seed));
      local[0] += mine[i] >> 8;
      local[1] ^= mine[i];
    }
    uint64_t sum = 0, xor_all = 0;
    MPI_Allreduce(&local[0], &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&local[1], &xor_all, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    if (rank == 0) printf("step %ld sum %016llx xor %016llx\n", step, (unsigned long long)sum, (unsigned long long)xor_all);
    sleep_ms(delay);
  }
  uint64_t checksum = fnv1a(FNV_INIT, mine, (size_t)words * sizeof *mine), total = 0;
  MPI_Reduce(&checksum, &total, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("done ranks %d checksum %016llx\n", size, (unsigned long long)total);
  free(mine);
  free(theirs);
  MPI_Finalize();
  return 0;
}
