/* ring_in_flight STEPS DELAY_MS: every step, each rank starts sending a block of doubles to the
 * next rank (MPI_Isend: 16 KiB, above the eager limits, so it waits for its receive), sleeps
 * DELAY_MS with the message in flight, then receives the previous rank's block; rank 0 prints the
 * step's sum. A checkpoint during the sleep finds one message in flight to every rank, which the
 * split checkpoint's drain takes into the upper half. At the end every signal handler must lie in
 * an executable mapping. Built against Stasis's abi/mpi.h and a library's own mpi.h: both print
 * the same lines. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define STASIS_SPLIT_CHECK_SIGNALS
#include "split_test_common.h"

enum { WORDS = 2048 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int steps = argc > 1 ? atoi(argv[1]) : 20, delay = argc > 2 ? atoi(argv[2]) : 100, rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static double out[WORDS], in[WORDS];
  for (int step = 0; step < steps; step++) {
    for (int i = 0; i < WORDS; i++) out[i] = (double)((rank + 1) * (i + 1) % 97) + step * 0.5;
    MPI_Request sent;
    MPI_Isend(out, WORDS, MPI_DOUBLE, (rank + 1) % size, step, MPI_COMM_WORLD, &sent);
    struct timespec pause = {delay / 1000, (delay % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    MPI_Recv(in, WORDS, MPI_DOUBLE, (rank + size - 1) % size, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&sent, MPI_STATUS_IGNORE);
    double local = 0, total = 0;
    for (int i = 0; i < WORDS; i++) local += in[i] * (i % 7 + 1);
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      printf("step %d total %.3f\n", step, total);
      fflush(stdout);
    }
  }
  /* Every handler must be somewhere, restarted or not (after a restart under another library, the
   * old lower half's would be gone). */
  CHECK(stray_signal_handlers() == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0) printf("done ranks %d\n", size);
  return 0;
}
