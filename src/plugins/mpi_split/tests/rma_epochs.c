/* rma_epochs STEPS DELAY_MS: one-sided communication as Global Arrays over MPI (ARMCI-MPI) uses it
 * (README.md, One-sided communication), with a third of DELAY_MS slept inside each kind of epoch
 * while its operations are not complete, so a checkpoint finds them in flight:
 * - a fence epoch on a window of MPI_Win_allocate: each rank puts a block into its right
 *   neighbour and accumulates into rank 0, sleeps, fences;
 * - a passive epoch held for the whole run (MPI_Win_lock_all, as ARMCI-MPI does) on a window of
 *   MPI_Win_create over MPI_Alloc_mem memory: MPI_Fetch_and_op on a ticket counter of rank 0,
 *   MPI_Accumulate and MPI_Get_accumulate on the left neighbour, a sleep, MPI_Win_flush_all;
 * - an exclusive lock on the right neighbour of a window over static memory: MPI_Compare_and_swap
 *   and MPI_Put, a sleep, MPI_Win_unlock; MPI_Get under a shared lock after.
 * Rank 0 prints each step's figures (sums that do not depend on the order in which the ranks'
 * operations arrived). With a third argument "shared", a window of MPI_Win_allocate_shared is
 * live all along too (each rank writes its rank into it; the split mode refuses checkpoints). Built against Stasis's abi/mpi.h and each library's own mpi.h: all print
 * the same lines. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "split_test_common.h"

enum { BLOCK = 512 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int steps = argc > 1 ? atoi(argv[1]) : 12, delay = argc > 2 ? atoi(argv[2]) : 150, rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Win shared_win = MPI_WIN_NULL;
  if (argc > 3 && strcmp(argv[3], "shared") == 0) {
    int *mine = NULL;
    MPI_OK(MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &shared_win));
    *mine = rank;
  }

  /* Fence window: [0, BLOCK) the left neighbour's block, [BLOCK] a counter rank 0 sums into. Its
   * size a whole number of pages: MPICH 4.0's ch4 misplaces a neighbour's part of a window of
   * MPI_Win_allocate otherwise (seen natively with 4104 bytes: every put to rank 1 one element
   * off). */
  long long *fenced = NULL;
  MPI_Win fence_win, passive_win, lock_win;
  MPI_OK(MPI_Win_allocate((MPI_Aint)(2 * BLOCK * sizeof(long long)), sizeof(long long), MPI_INFO_NULL,
                          MPI_COMM_WORLD, &fenced, &fence_win));
  /* Passive window: [0] rank 0's ticket counter, [1] what the right neighbour accumulates. */
  long long *passive = NULL;
  MPI_OK(MPI_Alloc_mem(2 * sizeof(long long), MPI_INFO_NULL, &passive));
  passive[0] = passive[1] = 0;
  MPI_OK(MPI_Win_create(passive, 2 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &passive_win));
  /* Lock window: [0] a compare-and-swap word, [1..BLOCK] a block the left neighbour puts. */
  static int locked[BLOCK + 1];
  MPI_OK(MPI_Win_create(locked, sizeof locked, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &lock_win));

  /* The attributes a Global Arrays window is asked for. */
  void *base = NULL;
  MPI_Aint *window_size = NULL;
  int *disp_unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
  MPI_OK(MPI_Win_get_attr(passive_win, MPI_WIN_BASE, &base, &flag));
  CHECK(flag && base == passive);
  MPI_OK(MPI_Win_get_attr(passive_win, MPI_WIN_SIZE, &window_size, &flag));
  CHECK(flag && *window_size == (MPI_Aint)(2 * sizeof(long long)));
  MPI_OK(MPI_Win_get_attr(fence_win, MPI_WIN_DISP_UNIT, &disp_unit, &flag));
  CHECK(flag && *disp_unit == (int)sizeof(long long));
  MPI_OK(MPI_Win_get_attr(fence_win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
  CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE);
  MPI_OK(MPI_Win_get_attr(lock_win, MPI_WIN_MODEL, &model, &flag));
  CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE));

  MPI_OK(MPI_Win_lock_all(0, passive_win));
  MPI_OK(MPI_Win_fence(0, fence_win));
  static long long out[BLOCK];
  long long fence_total = 0, tickets_total = 0, passive_total = 0, lock_total = 0;
  for (int step = 0; step < steps; step++) {
    /* Fence epoch: a put to the right, a sum into rank 0, in flight across the sleep. */
    for (int i = 0; i < BLOCK; i++) out[i] = (long long)(rank + 1) * (i + 1) + step;
    long long one = rank + step;
    MPI_OK(MPI_Put(out, BLOCK, MPI_LONG_LONG, right, 0, BLOCK, MPI_LONG_LONG, fence_win));
    MPI_OK(MPI_Accumulate(&one, 1, MPI_LONG_LONG, 0, BLOCK, 1, MPI_LONG_LONG, MPI_SUM, fence_win));
    sleep_ms(delay / 3);
    MPI_OK(MPI_Win_fence(0, fence_win));
    long long fence_sum = 0;
    for (int i = 0; i < BLOCK; i++) fence_sum += fenced[i] * (i % 7 + 1);
    CHECK(fenced[0] == (long long)(left + 1) + step);
    if (rank == 0) fence_sum += fenced[BLOCK];

    /* Passive epoch (lock_all held since the start): a ticket, an accumulate into the left
     * neighbour's word and a fetch of it (ordered after the accumulate: same origin, target and
     * location; no other rank writes it), in flight across the sleep. */
    long long ticket = -1, add = step + 1, fetched = -1;
    MPI_OK(MPI_Fetch_and_op(&add, &ticket, MPI_LONG_LONG, 0, 0, MPI_SUM, passive_win));
    MPI_OK(MPI_Accumulate(&add, 1, MPI_LONG_LONG, left, 1, 1, MPI_LONG_LONG, MPI_SUM, passive_win));
    MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_LONG_LONG, &fetched, 1, MPI_LONG_LONG, left, 1, 1, MPI_LONG_LONG,
                              MPI_NO_OP, passive_win));
    sleep_ms(delay / 3);
    MPI_OK(MPI_Win_flush_all(passive_win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD)); /* every rank's operations complete at their targets */
    MPI_OK(MPI_Win_sync(passive_win));
    CHECK(ticket >= 0 && fetched >= 0);
    long long passive_sum = ticket + fetched + passive[1] * 3;

    /* An exclusive lock on the right neighbour: compare-and-swap and a put, in flight across
     * the sleep; then its block read back under a shared lock. */
    int expected = step, swapped = step + 1, previous = -1;
    static int block[BLOCK], back[BLOCK];
    for (int i = 0; i < BLOCK; i++) block[i] = rank * 1000 + i + step;
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, lock_win));
    MPI_OK(MPI_Compare_and_swap(&swapped, &expected, &previous, MPI_INT, right, 0, lock_win));
    MPI_OK(MPI_Put(block, BLOCK, MPI_INT, right, 1, BLOCK, MPI_INT, lock_win));
    sleep_ms(delay - 2 * (delay / 3));
    MPI_OK(MPI_Win_unlock(right, lock_win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, lock_win));
    MPI_OK(MPI_Get(back, BLOCK, MPI_INT, right, 1, BLOCK, MPI_INT, lock_win));
    MPI_OK(MPI_Win_unlock(right, lock_win));
    CHECK(previous == step && locked[0] == step + 1 && locked[1] == left * 1000 + step);
    long long lock_sum = previous;
    for (int i = 0; i < BLOCK; i++) lock_sum += (long long)back[i] * (i % 5 + 1);

    long long mine[4] = {fence_sum, ticket, passive_sum, lock_sum}, sums[4];
    MPI_OK(MPI_Reduce(mine, sums, 4, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_OK(MPI_Win_fence(0, fence_win)); /* the next step's puts go into a fresh fence epoch */
    if (rank == 0) {
      printf("step %d fence %lld tickets %lld passive %lld lock %lld\n", step, sums[0], sums[1], sums[2], sums[3]);
      fflush(stdout);
      fence_total += sums[0], tickets_total += sums[1], passive_total += sums[2], lock_total += sums[3];
    }
  }
  MPI_OK(MPI_Win_unlock_all(passive_win));
  MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, fence_win));
  MPI_OK(MPI_Win_free(&fence_win));
  MPI_OK(MPI_Win_free(&passive_win));
  MPI_OK(MPI_Win_free(&lock_win));
  if (shared_win != MPI_WIN_NULL) {
    MPI_Aint peer_size = 0;
    int unit = 0, *peer = NULL;
    MPI_OK(MPI_Win_shared_query(shared_win, right, &peer_size, &unit, &peer));
    CHECK(peer_size == sizeof(int) && unit == sizeof(int) && *peer == right);
    MPI_OK(MPI_Win_free(&shared_win));
  }
  CHECK(fence_win == MPI_WIN_NULL && passive_win == MPI_WIN_NULL);
  MPI_OK(MPI_Free_mem(passive));
  if (rank == 0)
    printf("done ranks %d fence %lld tickets %lld passive %lld lock %lld\n", size, fence_total, tickets_total,
           passive_total, lock_total);
  MPI_Finalize();
  return 0;
}
