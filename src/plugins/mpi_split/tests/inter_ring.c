/* inter_ring STEPS DELAY_MS: messages over an intercommunicator received through matched probes
 * (README.md, Intercommunicators; Matched probes).
 * At start the world is split in two groups (even and odd ranks) and MPI_Intercomm_create joins
 * them (leaders: each group's rank 0, peer MPI_COMM_WORLD); MPI_Intercomm_merge makes one
 * intracommunicator of both (odd ranks high) and MPI_Comm_remote_group keeps the other group;
 * before them an intercommunicator is made, merged and freed again (its ids are given out again).
 * Every step each rank sends a 16 KiB block to the rank of its own group rank in the other group
 * over the intercommunicator, waits with it in flight (DELAY_MS on even steps: a checkpoint's drain
 * takes it), matches the other group's block (MPI_Mprobe on odd steps, MPI_Improbe on even ones),
 * waits with it matched and not received (DELAY_MS on odd steps: a checkpoint keeps it; a restart,
 * under any library, receives it), receives it (MPI_Mrecv; MPI_Imrecv and MPI_Wait), sums over the merged
 * communicator, and rank 0 prints the
 * step's figures with what MPI_Comm_test_inter, MPI_Comm_remote_size, the remote group's size and
 * the merged ranks answer: a restart under another library must answer the same. Needs an even
 * number of ranks. The waits poll with MPI_Iprobe, and a second thread of every rank calls MPI at
 * the same time (MPI_THREAD_MULTIPLE, helper_main: an exchange, a burst of small messages to
 * itself, a reduction); its figures are in each line. Built against Stasis's abi/mpi.h and each library's
 * own mpi.h: all print the same lines. */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "split_test_common.h"

enum { WORDS = 2048, HELPER_WORDS = 512, MAX_STEPS = 4096, BURST = 200 };

/* The second thread of every rank (MPI_THREAD_MULTIPLE): each step, on its own duplicate of the
 * world, a receive from the left posted, a third of DELAY_MS, a send to the right, both waited
 * for while the main thread probes, and an MPI_Allreduce; its sum for the main thread's line. */
static struct {
  MPI_Comm twin;
  int rank, size, steps, delay;
  double total[MAX_STEPS];
  pthread_barrier_t step_done;
} helper;

/* Waits `ms` calling MPI all the while (an MPI_Iprobe for a message nobody sends, every 100 us):
 * the main thread's calls meet the helper's. */
static void poll_for(int ms) {
  double until = MPI_Wtime() + ms / 1000.0;
  struct timespec moment = {0, 100000};
  while (MPI_Wtime() < until) {
    int flag = 1;
    MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, MAX_STEPS - 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag);
    nanosleep(&moment, NULL);
  }
}

static void *helper_main(void *unused) {
  (void)unused;
  static double out[HELPER_WORDS], in[HELPER_WORDS];
  for (int step = 0; step < helper.steps; step++) {
    for (int i = 0; i < HELPER_WORDS; i++) out[i] = (double)((helper.rank + 3) * (i + step) % 61);
    MPI_Request requests[2];
    int left = (helper.rank + helper.size - 1) % helper.size, right = (helper.rank + 1) % helper.size;
    MPI_OK(MPI_Irecv(in, HELPER_WORDS, MPI_DOUBLE, left, step, helper.twin, &requests[0]));
    struct timespec pause = {0, (long)(helper.delay / 3) * 1000000L};
    nanosleep(&pause, NULL);
    MPI_OK(MPI_Isend(out, HELPER_WORDS, MPI_DOUBLE, right, step, helper.twin, &requests[1]));
    MPI_Status statuses[2];
    MPI_OK(MPI_Waitall(2, requests, statuses));
    /* A burst of small messages to itself while the main thread polls: requests made and freed
     * by both threads at once, none waiting for another rank (cheap on a loaded machine). */
    for (int k = 0; k < BURST; k++) {
      int token = step * BURST + k, got = -1;
      MPI_OK(MPI_Irecv(&got, 1, MPI_INT, 0, MAX_STEPS + k, MPI_COMM_SELF, &requests[0]));
      MPI_OK(MPI_Isend(&token, 1, MPI_INT, 0, MAX_STEPS + k, MPI_COMM_SELF, &requests[1]));
      MPI_OK(MPI_Waitall(2, requests, statuses));
      CHECK(got == token);
    }
    double mine = 0;
    for (int i = 0; i < HELPER_WORDS; i++) mine += in[i] * (i % 5 + 1);
    MPI_OK(MPI_Allreduce(&mine, &helper.total[step], 1, MPI_DOUBLE, MPI_SUM, helper.twin));
    pthread_barrier_wait(&helper.step_done);
  }
  return NULL;
}

/* An intercommunicator between the even and the odd ranks of MPI_COMM_WORLD, on `local`. */
static void join_groups(MPI_Comm local, int rank, int tag, MPI_Comm *inter) {
  MPI_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, tag, inter));
}

int main(int argc, char **argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK(provided == MPI_THREAD_MULTIPLE);
  int steps = argc > 1 ? atoi(argv[1]) : 16, delay = argc > 2 ? atoi(argv[2]) : 100, rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size % 2 == 0 && steps <= MAX_STEPS);
  MPI_Comm local, inter, merged, spare, spare_merged;
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local));
  /* Made, merged and freed first: the ids of the ones kept may be these again. */
  join_groups(local, rank, 7, &spare);
  MPI_OK(MPI_Intercomm_merge(spare, rank % 2 == 0, &spare_merged));
  MPI_OK(MPI_Comm_free(&spare_merged));
  MPI_OK(MPI_Comm_free(&spare));
  join_groups(local, rank, 8, &inter);
  MPI_OK(MPI_Intercomm_merge(inter, rank % 2, &merged));
  MPI_Group remote;
  MPI_OK(MPI_Comm_remote_group(inter, &remote));
  int local_rank;
  MPI_OK(MPI_Comm_rank(local, &local_rank));
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &helper.twin));
  helper.rank = rank;
  helper.size = size;
  helper.steps = steps;
  helper.delay = delay;
  pthread_barrier_init(&helper.step_done, NULL, 2);
  pthread_t helper_thread;
  CHECK(pthread_create(&helper_thread, NULL, helper_main, NULL) == 0);
  static double out[WORDS], in[WORDS];
  for (int step = 0; step < steps; step++) {
    int is_inter, is_inter_local, remote_size, remote_group_size, merged_rank, merged_size, inter_rank;
    MPI_OK(MPI_Comm_test_inter(inter, &is_inter));
    MPI_OK(MPI_Comm_test_inter(merged, &is_inter_local));
    MPI_OK(MPI_Comm_remote_size(inter, &remote_size));
    MPI_OK(MPI_Group_size(remote, &remote_group_size));
    MPI_OK(MPI_Comm_rank(merged, &merged_rank));
    MPI_OK(MPI_Comm_size(merged, &merged_size));
    MPI_OK(MPI_Comm_rank(inter, &inter_rank));
    CHECK(inter_rank == local_rank && merged_size == size);
    for (int i = 0; i < WORDS; i++) out[i] = (double)((rank + 1) * (i + 1) % 89) + step * 0.25;
    MPI_Request sent, received;
    MPI_Status status;
    MPI_OK(MPI_Isend(out, WORDS, MPI_DOUBLE, local_rank, step, inter, &sent));
    /* Even steps wait with the block in flight, odd ones with it matched: a checkpoint taken
     * soon after a line finds the one or the other. */
    poll_for(step % 2 ? 1 : delay); /* the block in flight: a checkpoint now must drain it */
    MPI_Message message;
    int count, flag = 0;
    if (step % 2) {
      MPI_OK(MPI_Mprobe(MPI_ANY_SOURCE, step, inter, &message, &status));
    } else {
      while (!flag) MPI_OK(MPI_Improbe(local_rank, MPI_ANY_TAG, inter, &flag, &message, &status));
    }
    MPI_OK(MPI_Get_count(&status, MPI_DOUBLE, &count));
    CHECK(status.MPI_SOURCE == local_rank && status.MPI_TAG == step && count == WORDS);
    poll_for(step % 2 ? delay : 1); /* matched, not received: a checkpoint now must keep it */
    if (step % 2) {
      MPI_OK(MPI_Mrecv(in, WORDS, MPI_DOUBLE, &message, &status));
    } else {
      MPI_OK(MPI_Imrecv(in, WORDS, MPI_DOUBLE, &message, &received));
      MPI_OK(MPI_Wait(&received, &status));
    }
    CHECK(message == MPI_MESSAGE_NULL);
    MPI_OK(MPI_Wait(&sent, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Get_count(&status, MPI_DOUBLE, &count));
    CHECK(status.MPI_SOURCE == local_rank && status.MPI_TAG == step && count == WORDS);
    double mine = 0, total = 0;
    for (int i = 0; i < WORDS; i++) mine += in[i] * (i % 7 + 1);
    MPI_OK(MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, merged));
    pthread_barrier_wait(&helper.step_done);
    if (rank == 0)
      printf("step %d inter %d intra %d remote %d/%d merged %d/%d sum %.2f thread %.2f\n", step, is_inter != 0,
             is_inter_local != 0, remote_size, remote_group_size, merged_rank, merged_size, total, helper.total[step]);
    fflush(stdout);
  }
  CHECK(pthread_join(helper_thread, NULL) == 0);
  MPI_OK(MPI_Comm_free(&helper.twin));
  MPI_OK(MPI_Group_free(&remote));
  MPI_OK(MPI_Comm_free(&merged));
  MPI_OK(MPI_Comm_free(&inter));
  MPI_OK(MPI_Comm_free(&local));
  if (rank == 0) printf("done ranks %d\n", size);
  MPI_Finalize();
  return 0;
}
