/* mpi_split_pingpong: the osu-style loops bench/mpi_split_overhead.py times, built against a
 * library's own mpi.h and against Stasis's split-mode abi/mpi.h. Two ranks.
 * usage: mpirun -np 2 mpi_split_pingpong LATENCY_ITERS BANDWIDTH_ITERS [multiple]
 * ("multiple": MPI_Init_thread with MPI_THREAD_MULTIPLE, one thread still calling: the
 * uncontended cost of the split layer's region lock.)
 * Prints "latency_us X" (one way, 8-byte messages, half the round trip) and "bandwidth_MBps Y"
 * (1 MiB messages, a window of 16 Isends answered by one 8-byte acknowledgement), and
 * "call_ns Z": the cost of one MPI_Comm_rank, which does no communication (the layer's own cost
 * stands out from it, where the loops above are noisy on a loaded machine). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LARGE = 1 << 20, WINDOW = 16 };

int main(int argc, char **argv) {
  if (argc > 3 && strcmp(argv[3], "multiple") == 0) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
      fprintf(stderr, "mpi_split_pingpong: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
      return 1;
    }
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long latency_iters = argc > 1 ? atol(argv[1]) : 100000, bandwidth_iters = argc > 2 ? atol(argv[2]) : 200;
  char small[8] = {0};
  char *large = malloc((size_t)LARGE * WINDOW);
  memset(large, rank, (size_t)LARGE * WINDOW);
  int peer = 1 - rank;

  for (int warm = 0; warm < 2; warm++) {
    long iters = warm ? latency_iters : latency_iters / 10;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
      if (rank == 0) {
        MPI_Send(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
      }
    }
    double elapsed = MPI_Wtime() - start;
    if (warm && rank == 0) printf("latency_us %.3f\n", elapsed * 1e6 / (2.0 * (double)iters));
  }

  for (int warm = 0; warm < 2; warm++) {
    long iters = warm ? bandwidth_iters : bandwidth_iters / 10 + 1;
    MPI_Request requests[WINDOW];
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
      for (int w = 0; w < WINDOW; w++) {
        if (rank == 0) MPI_Isend(large + (size_t)w * LARGE, LARGE, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &requests[w]);
        else MPI_Irecv(large + (size_t)w * LARGE, LARGE, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &requests[w]);
      }
      MPI_Waitall(WINDOW, requests, MPI_STATUSES_IGNORE);
      if (rank == 0) MPI_Recv(small, 8, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else MPI_Send(small, 8, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
    }
    double elapsed = MPI_Wtime() - start;
    if (warm && rank == 0) printf("bandwidth_MBps %.1f\n", (double)LARGE * WINDOW * (double)iters / elapsed / 1e6);
  }
  enum { CALLS = 5000000 };
  int sink = 0;
  double start = MPI_Wtime();
  for (int i = 0; i < CALLS; i++) {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    sink += r;
  }
  double elapsed = MPI_Wtime() - start;
  if (rank == 0) printf("call_ns %.2f (%d)\n", elapsed * 1e9 / CALLS, sink);
  free(large);
  MPI_Finalize();
  return 0;
}
