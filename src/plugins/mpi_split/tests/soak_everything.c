/* soak_everything: the issue's held-in program for split mode (README.md, Tests): every kind of
 * MPI state the split layer keeps across a checkpoint, in use at once, in every step:
 *   - communicators from splits (a row split of a duplicate of the world, made once; a pair
 *     communicator split again every 8 steps and freed),
 *   - derived datatypes (a vector of a contiguous pair: a strided column),
 *   - nonblocking point-to-point with messages IN FLIGHT between steps (the ring's Isend of
 *     step N is received in step N+1: a checkpoint between steps finds it on the wire),
 *   - a nonblocking collective in flight between steps (Iallreduce started in step N, waited
 *     for in step N+1),
 *   - persistent requests (Send_init/Recv_init, Startall/Waitall every step),
 *   - MPI_Ssend (paired with a receive, even ranks first),
 *   - RMA: a fence epoch (Put to the next rank's window) and passive-target epochs (an exclusive
 *     Lock/Accumulate/Unlock on rank 0's counter, Lock_all/Fetch_and_op/Flush/Unlock_all),
 *   - MPI_THREAD_MULTIPLE: a second thread in every rank runs its own ring on its own
 *     communicator while the main thread does the rest.
 * usage: mpirun -np R soak_everything STEPS DELAY_MS [FAST_FILE]
 * Rank 0 prints "step N ..." with checksums of everything received, then "done ranks R"; the
 * output depends only on STEPS and R. Each step sleeps DELAY_MS unless FAST_FILE exists (a
 * restart from an early checkpoint can then run to the end quickly; the output does not
 * change). */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "split_test_common.h"

enum { WORDS = 512, ROWS = 16, COLUMNS = 8, THREAD_TAG = 7000 };

/* The second thread: one ring exchange per step on its own communicator, between the two
 * barriers the main thread meets it at. */
struct side_ring {
  MPI_Comm comm;
  int rank, size;
  long steps;
  pthread_barrier_t start, end;
  uint64_t value, sum;
};

static void *side_ring_thread(void *arg) {
  struct side_ring *s = arg;
  for (long step = 1; step <= s->steps; step++) {
    pthread_barrier_wait(&s->start);
    uint64_t received = 0;
    MPI_Request requests[2];
    MPI_OK(MPI_Irecv(&received, 1, MPI_UINT64_T, (s->rank + s->size - 1) % s->size, THREAD_TAG, s->comm,
                     &requests[0]));
    MPI_OK(MPI_Isend(&s->value, 1, MPI_UINT64_T, (s->rank + 1) % s->size, THREAD_TAG, s->comm, &requests[1]));
    MPI_OK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
    s->value = mix(s->value ^ received);
    uint64_t total = 0;
    MPI_OK(MPI_Allreduce(&s->value, &total, 1, MPI_UINT64_T, MPI_BXOR, s->comm));
    s->sum = total;
    pthread_barrier_wait(&s->end);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK(provided == MPI_THREAD_MULTIPLE);
  setvbuf(stdout, NULL, _IOLBF, 0);
  long steps = argc > 1 ? atol(argv[1]) : 20, delay = argc > 2 ? atol(argv[2]) : 0;
  const char *fast_file = argc > 3 ? argv[3] : NULL;
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size >= 2);
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;

  MPI_Comm world, row, threads;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  MPI_OK(MPI_Comm_split(world, rank % 2, -rank, &row));
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &threads));
  int row_rank = 0;
  MPI_OK(MPI_Comm_rank(row, &row_rank));

  MPI_Datatype pair, column;
  MPI_OK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
  MPI_OK(MPI_Type_vector(ROWS, 1, COLUMNS / 2, pair, &column));
  MPI_OK(MPI_Type_commit(&column));
  MPI_OK(MPI_Type_free(&pair));

  /* The ring in flight between steps: posted at the end of a step, completed in the next. */
  uint64_t *mine = calloc(WORDS, sizeof *mine), *theirs = calloc(WORDS, sizeof *theirs),
           *outgoing = calloc(WORDS, sizeof *outgoing);
  CHECK(mine && theirs && outgoing);
  for (int i = 0; i < WORDS; i++) mine[i] = mix((uint64_t)rank * WORDS + i);
  MPI_Request ring[2];
  memcpy(outgoing, mine, WORDS * sizeof *mine);
  MPI_OK(MPI_Irecv(theirs, WORDS, MPI_UINT64_T, previous, 1, world, &ring[0]));
  MPI_OK(MPI_Isend(outgoing, WORDS, MPI_UINT64_T, next, 1, world, &ring[1]));
  /* The collective in flight between steps. */
  uint64_t reduce_in = mine[0], reduce_out = 0;
  MPI_Request pending_reduce;
  MPI_OK(MPI_Iallreduce(&reduce_in, &reduce_out, 1, MPI_UINT64_T, MPI_BXOR, world, &pending_reduce));

  /* Persistent requests: a word to the previous rank, every step. */
  uint64_t persistent_out = 0, persistent_in = 0;
  MPI_Request persistent[2];
  MPI_OK(MPI_Recv_init(&persistent_in, 1, MPI_UINT64_T, next, 77, MPI_COMM_WORLD, &persistent[0]));
  MPI_OK(MPI_Send_init(&persistent_out, 1, MPI_UINT64_T, previous, 77, MPI_COMM_WORLD, &persistent[1]));

  /* RMA: a window of one word per rank for the fence epoch, one counter per rank for the passive
   * epochs (rank 0's is the shared one). */
  uint64_t *fenced = NULL, *counters = NULL;
  MPI_Win fence_window, passive_window;
  MPI_OK(MPI_Alloc_mem(sizeof(uint64_t), MPI_INFO_NULL, &fenced));
  *fenced = 0;
  MPI_OK(MPI_Win_create(fenced, sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &fence_window));
  MPI_OK(MPI_Win_allocate(2 * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &counters,
                          &passive_window));
  counters[0] = counters[1] = 0;
  MPI_OK(MPI_Barrier(MPI_COMM_WORLD));

  struct side_ring side = {.comm = threads, .rank = rank, .size = size, .steps = steps, .value = mix(rank + 1)};
  pthread_barrier_init(&side.start, NULL, 2);
  pthread_barrier_init(&side.end, NULL, 2);
  pthread_t side_thread;
  CHECK(pthread_create(&side_thread, NULL, side_ring_thread, &side) == 0);

  double matrix[ROWS][COLUMNS], received[ROWS][COLUMNS];
  for (long step = 1; step <= steps; step++) {
    pthread_barrier_wait(&side.start); /* the side ring runs beside everything below */

    /* The ring and the reduction of the step before. */
    MPI_Status statuses[2];
    MPI_OK(MPI_Waitall(2, ring, statuses));
    int count = 0;
    MPI_OK(MPI_Get_count(&statuses[0], MPI_UINT64_T, &count));
    CHECK(count == WORDS && statuses[0].MPI_SOURCE == previous && statuses[0].MPI_TAG == (int)step);
    MPI_OK(MPI_Wait(&pending_reduce, MPI_STATUS_IGNORE));
    uint64_t ring_sum = reduce_out;
    for (int i = 0; i < WORDS; i++) {
      mine[i] = mix(mine[i] ^ theirs[(i + step) % WORDS]);
      ring_sum += theirs[i] >> 4;
    }

    /* A strided column to the next rank (vector type), sent synchronously. */
    for (int r = 0; r < ROWS; r++)
      for (int c = 0; c < COLUMNS; c++) matrix[r][c] = (double)(mine[(r * COLUMNS + c) % WORDS] % 1000003) / 7.0;
    memset(received, 0, sizeof received);
    int pair_column = (int)(step % (COLUMNS / 2)) * 2;
    if (rank % 2 == 0) {
      MPI_OK(MPI_Ssend(&matrix[0][pair_column], 1, column, next, 99, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv(&received[0][pair_column], 1, column, previous, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
      MPI_OK(MPI_Recv(&received[0][pair_column], 1, column, previous, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      MPI_OK(MPI_Ssend(&matrix[0][pair_column], 1, column, next, 99, MPI_COMM_WORLD));
    }
    double column_sum = 0;
    for (int r = 0; r < ROWS; r++) column_sum += received[r][pair_column] + 2 * received[r][pair_column + 1];

    /* Persistent requests. */
    persistent_out = mine[step % WORDS];
    MPI_OK(MPI_Startall(2, persistent));
    MPI_OK(MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE));

    /* The row (made once) and a pair communicator (made and freed every 8 steps). */
    uint64_t word = row_rank == 0 ? mine[(step * 3) % WORDS] : 0;
    MPI_OK(MPI_Bcast(&word, 1, MPI_UINT64_T, 0, row));
    uint64_t pair_total = 0;
    if (step % 8 == 0) {
      MPI_Comm pair_comm;
      MPI_OK(MPI_Comm_split(world, rank / 2, rank, &pair_comm));
      MPI_OK(MPI_Allreduce(&mine[1], &pair_total, 1, MPI_UINT64_T, MPI_BXOR, pair_comm));
      MPI_OK(MPI_Comm_free(&pair_comm));
    }

    /* RMA, fence: each rank puts a word into the next rank's window. */
    uint64_t put_value = mine[2] ^ (uint64_t)step;
    MPI_OK(MPI_Win_fence(0, fence_window));
    MPI_OK(MPI_Put(&put_value, 1, MPI_UINT64_T, next, 0, 1, MPI_UINT64_T, fence_window));
    MPI_OK(MPI_Win_fence(0, fence_window));
    uint64_t fenced_value = *fenced;

    /* RMA, passive target: rank 0's counter[0] gains every rank's (step + rank) under an exclusive
     * lock; counter[1] of the next rank counts fetch-and-ops under a shared lock on all. */
    uint64_t addend = (uint64_t)step + (uint64_t)rank, one = 1, fetched = 0;
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, passive_window));
    MPI_OK(MPI_Accumulate(&addend, 1, MPI_UINT64_T, 0, 0, 1, MPI_UINT64_T, MPI_SUM, passive_window));
    MPI_OK(MPI_Win_unlock(0, passive_window));
    MPI_OK(MPI_Win_lock_all(0, passive_window));
    MPI_OK(MPI_Fetch_and_op(&one, &fetched, MPI_UINT64_T, next, 1, MPI_SUM, passive_window));
    MPI_OK(MPI_Win_flush(next, passive_window));
    MPI_OK(MPI_Win_unlock_all(passive_window));
    CHECK(fetched == (uint64_t)(step - 1)); /* only the previous rank adds to this counter */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));     /* every rank's accumulate is in */
    uint64_t counter = 0;
    if (rank == 0) {
      MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, passive_window));
      MPI_OK(MPI_Get(&counter, 1, MPI_UINT64_T, 0, 0, 1, MPI_UINT64_T, passive_window));
      MPI_OK(MPI_Win_unlock(0, passive_window));
    }

    pthread_barrier_wait(&side.end);

    /* Everything to rank 0, and the next step's ring and reduction set in flight. */
    uint64_t local[4] = {ring_sum ^ word, persistent_in ^ pair_total, fenced_value,
                         side.value ^ (rank == 0 ? side.sum : 0)};
    uint64_t global[4] = {0};
    MPI_OK(MPI_Reduce(local, global, 4, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD));
    double column_total = 0;
    MPI_OK(MPI_Reduce(&column_sum, &column_total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0)
      printf("step %ld ring %016llx p2p %016llx rma %016llx/%llu threads %016llx column %.3f\n", step,
             (unsigned long long)global[0], (unsigned long long)global[1], (unsigned long long)global[2],
             (unsigned long long)counter, (unsigned long long)global[3], column_total);
    if (step < steps) {
      memcpy(outgoing, mine, WORDS * sizeof *mine);
      MPI_OK(MPI_Irecv(theirs, WORDS, MPI_UINT64_T, previous, (int)step + 1, world, &ring[0]));
      MPI_OK(MPI_Isend(outgoing, WORDS, MPI_UINT64_T, next, (int)step + 1, world, &ring[1]));
      reduce_in = mine[3];
      MPI_OK(MPI_Iallreduce(&reduce_in, &reduce_out, 1, MPI_UINT64_T, MPI_BXOR, world, &pending_reduce));
    }
    if (!(fast_file && access(fast_file, F_OK) == 0)) sleep_ms(delay);
  }

  CHECK(pthread_join(side_thread, NULL) == 0);
  MPI_OK(MPI_Win_free(&passive_window));
  MPI_OK(MPI_Win_free(&fence_window));
  MPI_OK(MPI_Free_mem(fenced));
  MPI_OK(MPI_Request_free(&persistent[0]));
  MPI_OK(MPI_Request_free(&persistent[1]));
  MPI_OK(MPI_Type_free(&column));
  MPI_OK(MPI_Comm_free(&threads));
  MPI_OK(MPI_Comm_free(&row));
  MPI_OK(MPI_Comm_free(&world));
  if (rank == 0) printf("done ranks %d\n", size);
  free(mine);
  free(theirs);
  free(outgoing);
  MPI_OK(MPI_Finalize());
  return 0;
}
