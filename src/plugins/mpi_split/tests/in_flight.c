/* in_flight: the drain's aggregated count (STASIS_MPI_In_flight) against messages this program
 * knows are in flight. Built against Stasis's abi/mpi.h only.
 * usage: mpirun -np R in_flight [ROUNDS=3] [TIMED_CALLS=200] [DRAIN=0] [COMMS=0]
 * Each round every rank posts, without receiving: rank+1 messages to the next world rank, one on
 * a communicator whose ranks run in reverse (to its next rank there: the previous world rank),
 * one to itself on MPI_COMM_SELF, and a matrix column (a vector datatype) to the next world rank.
 * Two receives (on the reversed communicator) are posted before all that, one whose message is
 * sent then, one whose message is sent only after the count and the drain. With COMMS > 0 the program
 * also holds COMMS duplicates of MPI_COMM_WORLD, each a communicator the drain has to look at, and
 * sends one message to the next rank on the last one made (bench/mpi_split_drain.py: the drain
 * against the number of communicators). Each rank must then hear that previous+4 messages (+1 with
 * COMMS) are in flight to it. With DRAIN=1 it drains them (STASIS_MPI_Drain:
 * all of them taken, but the one the posted receive may have matched; none in flight after). Then it receives them (the
 * world ones with MPI_ANY_SOURCE and MPI_ANY_TAG) and checks their contents, sources, tags and
 * counts; none is in flight after. Between rounds the objects are made
 * again from the replay log (the private communicator of the count too). Rank 0 prints
 * "round N in flight T then 0" (T summed over ranks) and "in_flight ok"; on stderr, the median
 * time of one count over TIMED_CALLS calls, and with DRAIN=1 of one drain over the rounds. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "split_test_common.h"

enum { MAX_RANKS = 256 };

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_OK(MPI_Init(&argc, &argv));
  setvbuf(stdout, NULL, _IOLBF, 0);
  int rounds = argc > 1 ? atoi(argv[1]) : 3, timed_calls = argc > 2 ? atoi(argv[2]) : 200;
  int drain = argc > 3 ? atoi(argv[3]) : 0, comms = argc > 4 ? atoi(argv[4]) : 0;
  int rank = 0, size = 1;
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size <= MAX_RANKS);
  enum { MAX_COMMS = 4000 };
  CHECK(comms >= 0 && comms <= MAX_COMMS);
  static MPI_Comm duplicates[MAX_COMMS];
  for (int i = 0; i < comms; i++) MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &duplicates[i]));
  MPI_Comm reversed;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed));
  int reversed_rank = 0;
  MPI_OK(MPI_Comm_rank(reversed, &reversed_rank));
  CHECK(reversed_rank == size - 1 - rank);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  enum { ROWS = 8, COLUMNS = 4 };
  MPI_Datatype column;
  MPI_OK(MPI_Type_vector(ROWS, 1, COLUMNS, MPI_DOUBLE, &column));
  MPI_OK(MPI_Type_commit(&column));

  static double drain_seconds[1000];
  CHECK(rounds > 0 && rounds <= 1000);
  for (int round = 1; round <= rounds; round++) {
    static int out[MAX_RANKS + 2][MAX_RANKS + 1], in[MAX_RANKS + 2][MAX_RANKS + 1];
    MPI_Request sends[MAX_RANKS + 4];
    int posted = 0;
    /* Posted before anything is sent to them: the drain must take them back and post them again.
     * Tag 7's message is sent before the drain (the library matches it on arrival), tag 8's only
     * after (its receive is cancelled, and posted again to the library). */
    MPI_Request reversed_receive, late_receive;
    MPI_OK(MPI_Irecv(in[MAX_RANKS], 1, MPI_INT, MPI_ANY_SOURCE, 7, reversed, &reversed_receive));
    int late = -1;
    MPI_OK(MPI_Irecv(&late, 1, MPI_INT, MPI_ANY_SOURCE, 8, reversed, &late_receive));
    for (int i = 0; i <= rank; i++) {
      for (int j = 0; j <= i; j++) out[posted][j] = round * 1000 + rank * 10 + j;
      MPI_OK(MPI_Isend(out[posted], i + 1, MPI_INT, next, 100 + i, MPI_COMM_WORLD, &sends[posted]));
      posted++;
    }
    out[posted][0] = -rank;
    MPI_OK(MPI_Isend(out[posted], 1, MPI_INT, (reversed_rank + 1) % size, 7, reversed, &sends[posted]));
    posted++;
    out[posted][0] = round;
    MPI_OK(MPI_Isend(out[posted], 1, MPI_INT, 0, 5, MPI_COMM_SELF, &sends[posted]));
    posted++;
    double matrix_out[ROWS][COLUMNS], matrix_in[ROWS][COLUMNS];
    for (int r = 0; r < ROWS; r++)
      for (int c = 0; c < COLUMNS; c++) matrix_out[r][c] = round * 100 + rank + r * 0.5 + c * 0.25;
    MPI_OK(MPI_Isend(&matrix_out[0][1], 1, column, next, 42, MPI_COMM_WORLD, &sends[posted]));
    posted++;
    int last_comm_out = round * 3 + rank, last_comm_in = -1;
    if (comms > 0) {
      MPI_OK(MPI_Isend(&last_comm_out, 1, MPI_INT, next, 9, duplicates[comms - 1], &sends[posted]));
      posted++;
    }

    long long to_me = -1, total = 0;
    MPI_OK(STASIS_MPI_In_flight(&to_me));
    CHECK(to_me == previous + 4 + (comms > 0));
    if (drain) {
      long long taken = -1, left = -1;
      double start = MPI_Wtime();
      MPI_OK(STASIS_MPI_Drain(&taken));
      drain_seconds[round - 1] = MPI_Wtime() - start;
      /* All of them, less the one the posted receive may have matched inside the library. */
      CHECK(taken == to_me || taken == to_me - 1);
      MPI_OK(STASIS_MPI_In_flight(&left));
      CHECK(left == 0);
    }
    MPI_OK(MPI_Reduce(&to_me, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));

    int late_out = round * 7 + rank;
    MPI_OK(MPI_Send(&late_out, 1, MPI_INT, (reversed_rank + 1) % size, 8, reversed));
    MPI_OK(MPI_Wait(&late_receive, MPI_STATUS_IGNORE));
    CHECK(late == round * 7 + next);
    for (int i = 0; i <= previous; i++) {
      MPI_Status status;
      int count = 0;
      MPI_OK(MPI_Recv(in[i], MAX_RANKS + 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
      MPI_OK(MPI_Get_count(&status, MPI_INT, &count));
      CHECK(status.MPI_SOURCE == previous && count == status.MPI_TAG - 100 + 1);
      CHECK(in[i][count - 1] == round * 1000 + previous * 10 + count - 1);
    }
    MPI_Status status;
    MPI_OK(MPI_Wait(&reversed_receive, &status));
    CHECK(in[MAX_RANKS][0] == -next && status.MPI_SOURCE == (reversed_rank + size - 1) % size);
    MPI_OK(MPI_Recv(in[MAX_RANKS + 1], 1, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    CHECK(in[MAX_RANKS + 1][0] == round);
    if (comms > 0) {
      MPI_OK(MPI_Recv(&last_comm_in, 1, MPI_INT, previous, 9, duplicates[comms - 1], MPI_STATUS_IGNORE));
      CHECK(last_comm_in == round * 3 + previous);
    }
    memset(matrix_in, 0, sizeof matrix_in);
    MPI_OK(MPI_Recv(&matrix_in[0][2], 1, column, previous, 42, MPI_COMM_WORLD, &status));
    int count = 0;
    MPI_OK(MPI_Get_count(&status, column, &count));
    CHECK(count == 1 && status.MPI_SOURCE == previous && status.MPI_TAG == 42);
    MPI_OK(MPI_Get_count(&status, MPI_DOUBLE, &count));
    CHECK(count == ROWS);
    for (int r = 0; r < ROWS; r++)
      CHECK(matrix_in[r][2] == round * 100 + previous + r * 0.5 + 0.25 && matrix_in[r][1] == 0 && matrix_in[r][3] == 0);
    MPI_OK(MPI_Waitall(posted, sends, MPI_STATUSES_IGNORE));

    long long after = -1;
    MPI_OK(STASIS_MPI_In_flight(&after));
    CHECK(after == 0);
    if (rank == 0) printf("round %d in flight %lld then %lld%s\n", round, total, after, drain ? " (drained)" : "");
    int remade = 0;
    MPI_OK(STASIS_MPI_Remake_objects(&remade));
    CHECK(remade == 2 + comms);
  }

  static double seconds[100000];
  CHECK(timed_calls > 0 && timed_calls <= 100000);
  for (int i = 0; i < timed_calls; i++) {
    long long to_me = -1;
    double start = MPI_Wtime();
    MPI_OK(STASIS_MPI_In_flight(&to_me));
    seconds[i] = MPI_Wtime() - start;
    CHECK(to_me == 0);
  }
  qsort(seconds, (size_t)timed_calls, sizeof seconds[0], compare_doubles);
  if (drain) qsort(drain_seconds, (size_t)rounds, sizeof drain_seconds[0], compare_doubles);
  if (rank == 0) {
    fprintf(stderr, "in_flight count: %d ranks, %d communicators more, median %.1f us over %d calls\n", size,
            comms, seconds[timed_calls / 2] * 1e6, timed_calls);
    if (drain)
      fprintf(stderr, "drain: %d ranks, median %.1f us over %d rounds (rank 0)\n", size,
              drain_seconds[rounds / 2] * 1e6, rounds);
    printf("in_flight ok\n");
  }
  MPI_OK(MPI_Type_free(&column));
  MPI_OK(MPI_Comm_free(&reversed));
  for (int i = 0; i < comms; i++) MPI_OK(MPI_Comm_free(&duplicates[i]));
  MPI_OK(MPI_Finalize());
  return 0;
}
