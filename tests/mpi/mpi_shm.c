/* mpi_shm: an MPI job that keeps messages in flight most of the time, so that a checkpoint finds
 * them inside the MPI library's transport (on one host: its shared-memory segments in /dev/shm).
 * usage: mpirun -np R mpi_shm [STEPS=60] [DELAY_MS=50] [BURST=12] [FINALIZE=1]
 * Per step each rank starts BURST sends to the next rank (MPI_Isend; sizes from 40 bytes, inside
 * the transport's small-message boxes, to 24 KiB, sent in rendezvous through single-copy), then
 * sleeps DELAY_MS with them unreceived, then receives the previous rank's burst in tag order and
 * folds every byte into its checksum; rank 0 prints "step N xor X" with the ranks' checksums
 * combined (MPI_Allreduce, xor) and "done ..." at the end. Payloads come from per-rank
 * generators: the output depends only on the arguments and the number of ranks.
 * FINALIZE=0: the ranks leave after a barrier without MPI_Finalize (MPICH 4.0 over UCX's TCP
 * hangs in MPI_Finalize in about one run in ten, without Stasis too; mpi_common.h). */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include "mpi_common.h"

enum { kMaxBurst = 64, kLargest = 24 * 1024 };

static int message_length(long step, int m, int burst) {
  if (m == burst - 1) return kLargest - (int)(step % 7) * 8;      /* rendezvous */
  if (m == burst - 2) return 3000 + (int)(step % 5) * 100;       /* eager, beyond a small box */
  return 40 + (int)((step * 131 + m * 97) % 600);                /* small */
}

int main(int argc, char **argv) {
  int rank = 0, size = 1;
  mpi_start(&argc, &argv, &rank, &size);
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int burst = (int)arg_long(argc, argv, 3, 12);
  int finalize = (int)arg_long(argc, argv, 4, 1);
  CHECK(burst >= 2 && burst <= kMaxBurst);

  unsigned char *outgoing = malloc((size_t)burst * kLargest), *incoming = malloc(kLargest);
  CHECK(outgoing && incoming);
  MPI_Request requests[kMaxBurst];
  MPI_Status sent[kMaxBurst];
  uint64_t seed = 77 + (uint64_t)rank, checksum = FNV_INIT;
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;

  for (long step = 1; step <= steps; step++) {
    for (int m = 0; m < burst; m++) {
      unsigned char *message = outgoing + (size_t)m * kLargest;
      int len = message_length(step, m, burst);
      for (int i = 0; i < len; i += 8) {
        uint64_t word = splitmix64(&seed);
        memcpy(message + i, &word, (size_t)(len - i < 8 ? len - i : 8));
      }
      MPI_Isend(message, len, MPI_BYTE, next, m, MPI_COMM_WORLD, &requests[m]);
    }
    sleep_ms(delay);
    for (int m = 0; m < burst; m++) {
      MPI_Status status;
      int len = 0;
      MPI_Recv(incoming, kLargest, MPI_BYTE, previous, m, MPI_COMM_WORLD, &status);
      MPI_Get_count(&status, MPI_BYTE, &len);
      CHECK(len == message_length(step, m, burst));
      checksum = fnv1a(checksum, incoming, (size_t)len);
    }
    MPI_Waitall(burst, requests, sent);
    uint64_t combined = 0;
    MPI_Allreduce(&checksum, &combined, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    if (rank == 0) printf("step %ld xor %016llx\n", step, (unsigned long long)combined);
  }
  uint64_t combined = 0;
  MPI_Reduce(&checksum, &combined, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("done ranks %d checksum %016llx\n", size, (unsigned long long)combined);
  free(outgoing);
  free(incoming);
  if (!finalize) leave_without_mpi_finalize();
  MPI_Finalize();
  return 0;
}
