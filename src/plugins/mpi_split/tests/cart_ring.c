/* cart_ring STEPS DELAY_MS: ring_in_flight on a Cartesian grid (README.md, Cartesian topologies).
 * At start the ranks make a 2-D grid (MPI_Dims_create, MPI_Cart_create, periodic in dimension 0
 * only), its row (MPI_Cart_sub), a duplicate of the grid and a grid they free again. Every step
 * each rank sends a 16 KiB block to its MPI_Cart_shift neighbour on the grid, sleeps DELAY_MS
 * with it in flight, receives its other neighbour's block, sums over the row and the grid, and
 * rank 0 prints the step's figures with what every query of the grid answered this step
 * (MPI_Cart_get, _coords, _rank, _shift in both dimensions and along the row, Cartdim_get, Topo_test on the grid,
 * its row, its duplicate and MPI_COMM_WORLD): a restart under another library must answer the
 * same. A receive no rank matches is posted across the sleep and cancelled after, and the
 * exchange completes through MPI_Waitany or MPI_Waitsome (MPI_Testany, _Testsome checked too).
 * The last line adds MPI_Dims_create's factorisations, which must be the libraries' own.
 * Built against Stasis's abi/mpi.h and each library's own mpi.h: all print the same lines. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "split_test_common.h"

enum { WORDS = 2048 };

/* "4x3" for dims {4, 3}. */
static void dims_text(int nnodes, int ndims, int first, char *out, size_t size) {
  int dims[3] = {0, first, 0};
  MPI_OK(MPI_Dims_create(nnodes, ndims, dims));
  int used = 0;
  for (int d = 0; d < ndims; d++) used += snprintf(out + used, size - (size_t)used, d ? "x%d" : "%d", dims[d]);
}

/* A neighbour's rank, or "null" (MPI_PROC_NULL's value differs between the libraries). */
static const char *peer(int rank, char *text) {
  if (rank == MPI_PROC_NULL) return "null";
  snprintf(text, 12, "%d", rank);
  return text;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int steps = argc > 1 ? atoi(argv[1]) : 16, delay = argc > 2 ? atoi(argv[2]) : 100, rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_OK(MPI_Dims_create(size, 2, dims));
  MPI_Comm grid, row, copy, freed;
  MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
  /* A grid made and freed before the others are used: its id may be given out again. */
  MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periods[1], 0, &freed)); /* not periodic */
  MPI_OK(MPI_Comm_free(&freed));
  int remain[2] = {1, 0};
  MPI_OK(MPI_Cart_sub(grid, remain, &row));
  MPI_OK(MPI_Comm_dup(grid, &copy));
  static double out[WORDS], in[WORDS];
  for (int step = 0; step < steps; step++) {
    int source, dest, up, down, got_dims[2], got_periods[2], coords[2], back, ndims, row_ndims;
    int kinds[4];
    MPI_OK(MPI_Cart_shift(grid, 0, 1, &source, &dest));
    MPI_OK(MPI_Cart_shift(copy, 1, 1, &up, &down));
    int left, right; /* along the row: periodic, unlike the freed grid whose id it may have */
    MPI_OK(MPI_Cart_shift(row, 0, 1, &left, &right));
    MPI_OK(MPI_Cart_get(grid, 2, got_dims, got_periods, coords));
    int queried[2];
    MPI_OK(MPI_Cart_coords(grid, rank, 2, queried));
    CHECK(queried[0] == coords[0] && queried[1] == coords[1]);
    MPI_OK(MPI_Cart_rank(grid, coords, &back));
    CHECK(back == rank);
    MPI_OK(MPI_Cartdim_get(grid, &ndims));
    MPI_OK(MPI_Cartdim_get(row, &row_ndims));
    MPI_OK(MPI_Topo_test(grid, &kinds[0]));
    MPI_OK(MPI_Topo_test(row, &kinds[1]));
    MPI_OK(MPI_Topo_test(copy, &kinds[2]));
    MPI_OK(MPI_Topo_test(MPI_COMM_WORLD, &kinds[3]));
    for (int i = 0; i < WORDS; i++) out[i] = (double)((rank + 1) * (i + 1) % 97) + step * 0.5;
    /* never: a receive no rank sends to, posted across the sleep (a checkpoint's drain takes it
     * back and posts it again), cancelled after. The exchange completes through MPI_Waitany on
     * even steps and MPI_Waitsome on odd ones, in whatever order the requests complete. */
    MPI_Request never, exchange[2];
    int never_buffer, completions = 0, index, outcount, indices[2], flag, cancelled;
    MPI_Status statuses[2];
    MPI_OK(MPI_Irecv(&never_buffer, 1, MPI_INT, source, 1000 + step, grid, &never));
    MPI_OK(MPI_Isend(out, WORDS, MPI_DOUBLE, dest, step, grid, &exchange[0]));
    struct timespec pause = {delay / 1000, (delay % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    MPI_OK(MPI_Irecv(in, WORDS, MPI_DOUBLE, source, step, grid, &exchange[1]));
    MPI_OK(MPI_Testany(1, &never, &index, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag && index == MPI_UNDEFINED);
    while (completions < 2) {
      if (step % 2 == 0) {
        MPI_OK(MPI_Waitany(2, exchange, &index, &statuses[0]));
        CHECK(index == 0 || index == 1);
        CHECK(index == 0 || (statuses[0].MPI_SOURCE == source && statuses[0].MPI_TAG == step));
        completions++;
      } else {
        MPI_OK(MPI_Waitsome(2, exchange, &outcount, indices, statuses));
        CHECK(outcount >= 1 && outcount <= 2);
        completions += outcount;
      }
    }
    CHECK(exchange[0] == MPI_REQUEST_NULL && exchange[1] == MPI_REQUEST_NULL);
    MPI_OK(MPI_Waitany(2, exchange, &index, MPI_STATUS_IGNORE));
    CHECK(index == MPI_UNDEFINED);
    MPI_OK(MPI_Testsome(2, exchange, &outcount, indices, statuses));
    CHECK(outcount == MPI_UNDEFINED);
    MPI_OK(MPI_Cancel(&never));
    MPI_OK(MPI_Wait(&never, &statuses[0]));
    MPI_OK(MPI_Test_cancelled(&statuses[0], &cancelled));
    CHECK(cancelled && never == MPI_REQUEST_NULL);
    double local = 0, row_total = 0, total = 0;
    for (int i = 0; i < WORDS; i++) local += in[i] * (i % 7 + 1);
    MPI_OK(MPI_Allreduce(&local, &row_total, 1, MPI_DOUBLE, MPI_SUM, row));
    MPI_OK(MPI_Reduce(&row_total, &total, 1, MPI_DOUBLE, MPI_SUM, 0, copy));
    if (rank == 0) {
      char text[6][12];
      printf("step %d total %.3f grid %dx%d periods %d%d at %d,%d shift0 %s>%s shift1 %s>%s row %s>%s ndims %d/%d "
             "topo %d %d %d %s cancelled %d\n",
             step, total, got_dims[0], got_dims[1], got_periods[0], got_periods[1], coords[0], coords[1], peer(source, text[0]),
             peer(dest, text[1]), peer(up, text[2]), peer(down, text[3]), peer(left, text[4]), peer(right, text[5]), ndims, row_ndims, kinds[0] == MPI_CART, kinds[1] == MPI_CART, kinds[2] == MPI_CART,
             kinds[3] == MPI_UNDEFINED ? "none" : "wrong", cancelled);
      fflush(stdout);
    }
  }
  MPI_OK(MPI_Comm_free(&copy));
  MPI_OK(MPI_Comm_free(&row));
  MPI_OK(MPI_Comm_free(&grid));
  char factors[6][32];
  dims_text(12, 2, 0, factors[0], sizeof factors[0]);
  dims_text(12, 3, 0, factors[1], sizeof factors[1]);
  dims_text(30, 2, 0, factors[2], sizeof factors[2]);
  dims_text(7, 2, 0, factors[3], sizeof factors[3]);
  dims_text(16, 3, 2, factors[4], sizeof factors[4]);
  dims_text(24, 3, 0, factors[5], sizeof factors[5]);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  if (rank == 0)
    printf("done ranks %d dims %s %s %s %s %s %s\n", size, factors[0], factors[1], factors[2], factors[3], factors[4],
           factors[5]);
  return 0;
}
