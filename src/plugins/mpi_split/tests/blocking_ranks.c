/* blocking_ranks STEPS GATED_STEPS GATE_DIR: ranks that wait in blocking calls while the last rank
 * computes. Every step has four phases, in each of which the last rank computes first while the
 * others wait: in MPI_Recv (rank 0 for a message from the last rank), in MPI_Wait (rank 0, on an
 * MPI_Irecv of a 16 KiB message: above the eager limits), in MPI_Barrier and in MPI_Allreduce
 * (every rank but the last). Then an MPI_Bcast from the last rank and an MPI_Reduce to rank 0,
 * which prints the step's figures. The first two steps and every tenth have three phases more, in
 * MPI_Comm_dup, MPI_Comm_split (by rank parity) and MPI_Comm_create (the world's group), each
 * communicator then used by an MPI_Allreduce and freed. Every step then waits in MPI_Allgather
 * (phase 7) and runs the other gathers, scatters, all-to-alls, reduce-scatters and scans, some in
 * place, rank 0 printing a sum of what they gave. Then (phase 8) every rank starts an
 * MPI_Iallreduce, the last rank computes, and all start an MPI_Ibcast from it, an MPI_Igather, an
 * MPI_Iscan and an MPI_Ibarrier and wait for the five (the others wait in MPI_Wait with all five in
 * flight). Then (phase 9) rank 0 starts a persistent receive (made once, before the first step)
 * and waits in MPI_Probe while the last rank computes with an MPI_Bsend to rank 0 in flight; then
 * the last rank starts its persistent send and an MPI_Ssend, which rank 0 receives with the
 * probed count, finds the buffered message with MPI_Iprobe and completes the persistent receive.
 * After the last step the others wait in MPI_Finalize while the last rank computes.
 *
 * In the first GATED_STEPS steps the last rank's computing lasts until a test opens its gate: at
 * phase K (step * 10 + phase; GATED_STEPS * 10 for MPI_Finalize) each waiting rank R creates
 * GATE_DIR/in-K-R just before its blocking call and the last rank GATE_DIR/at-K, and the last rank
 * computes until GATE_DIR/go-K exists. So a test can checkpoint while the others wait, at every
 * phase. GATE_DIR "-": no gate (a 2 ms computation), the uninterrupted reference. Built against
 * Stasis's abi/mpi.h and a library's own mpi.h: both print the same lines. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WORDS = 2048, PHASES = 10, MAX_RANKS = 16 };
static const char *gate_dir;
static int rank, size, gated_steps;

static void touch(const char *name, int phase, int who) {
  char path[4096];
  if (who >= 0) snprintf(path, sizeof path, "%s/%s-%d-%d", gate_dir, name, phase, who);
  else snprintf(path, sizeof path, "%s/%s-%d", gate_dir, name, phase);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  close(fd);
}

/* Phase K of (step, phase), and whether it is gated; step -1: MPI_Finalize's, after the last step. */
static int phase_number(int step, int phase) { return step < 0 ? gated_steps * PHASES : step * PHASES + phase; }
static int gated(int step) { return strcmp(gate_dir, "-") != 0 && (step < 0 ? gated_steps > 0 : step < gated_steps); }

/* The last rank's computing at phase K: until the gate opens, or 2 ms. */
static void compute(int step, int phase) {
  int k = phase_number(step, phase);
  struct timespec pause = {0, 2 * 1000 * 1000};
  if (!gated(step)) {
    nanosleep(&pause, NULL);
    return;
  }
  touch("at", k, -1);
  char path[4096];
  snprintf(path, sizeof path, "%s/go-%d", gate_dir, k);
  while (access(path, F_OK) != 0) nanosleep(&pause, NULL);
}

/* A waiting rank says it is about to block at phase K. */
static void about_to_wait(int step, int phase) {
  if (gated(step)) touch("in", phase_number(step, phase), rank);
}

/* Phases 4 to 6: communicators made while the last rank computes, each used once and freed. */
static void made_communicators(int step, double mine) {
  int last = size - 1;
  MPI_Comm dup, half, created;
  MPI_Group world_group;
  if (rank == last) compute(step, 4);
  else about_to_wait(step, 4);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  if (rank == last) compute(step, 5);
  else about_to_wait(step, 5);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  if (rank == last) compute(step, 6);
  else about_to_wait(step, 6);
  MPI_Comm_create(MPI_COMM_WORLD, world_group, &created);
  double on_dup = 0, on_half = 0, on_created = 0, value = mine * 2 + rank;
  int half_rank = -1;
  MPI_Allreduce(&value, &on_dup, 1, MPI_DOUBLE, MPI_SUM, dup);
  MPI_Allreduce(&value, &on_half, 1, MPI_DOUBLE, MPI_MAX, half);
  MPI_Allreduce(&on_half, &on_created, 1, MPI_DOUBLE, MPI_SUM, created);
  MPI_Comm_rank(half, &half_rank);
  if (rank == 0) {
    printf("step %d made dup %.2f half %.2f (rank %d there) created %.2f\n", step, on_dup, on_half, half_rank,
           on_created);
    fflush(stdout);
  }
  MPI_Comm_free(&created);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
}

/* Phase 7 and the other collectives of the standard's chapter 5, each result folded into one sum. */
static void gathered(int step, double mine) {
  int last = size - 1, counts[MAX_RANKS], displs[MAX_RANKS], ones[MAX_RANKS];
  double all[2 * MAX_RANKS], send[2 * MAX_RANKS], from_all[2 * MAX_RANKS], part[2] = {0, 0}, sum = 0;
  for (int r = 0; r < size; r++) {
    counts[r] = r % 2 + 1; /* rank r gives (and gets) 1 or 2 values */
    displs[r] = 2 * r;
    ones[r] = 1;
    send[2 * r] = mine * (r + 1);
    send[2 * r + 1] = mine - r;
  }
  double pair[2] = {mine, mine * 0.5};
  if (rank == last) compute(step, 7);
  else about_to_wait(step, 7);
  MPI_Allgather(pair, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < 2 * size; i++) sum += all[i] * (i + 1);
  memset(all, 0, sizeof all);
  all[2 * rank] = mine + 3;
  all[2 * rank + 1] = mine + 4;
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < 2 * size; i++) sum += all[i] * (i + 2);
  memset(all, 0, sizeof all);
  MPI_Gather(pair, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, last, MPI_COMM_WORLD);
  MPI_Bcast(all, 2 * size, MPI_DOUBLE, last, MPI_COMM_WORLD);
  for (int i = 0; i < 2 * size; i++) sum += all[i] * (i + 3);
  memset(all, 0, sizeof all);
  MPI_Gatherv(pair, counts[rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  for (int i = 0; rank == 0 && i < 2 * size; i++) sum += all[i] * (i + 4);
  MPI_Scatter(send, 2, MPI_DOUBLE, part, 2, MPI_DOUBLE, last, MPI_COMM_WORLD);
  sum += part[0] * 5 + part[1] * 7;
  part[0] = part[1] = 0;
  MPI_Scatterv(send, counts, displs, MPI_DOUBLE, part, counts[rank], MPI_DOUBLE, 0, MPI_COMM_WORLD);
  sum += part[0] * 11 + part[1] * 13;
  MPI_Allgatherv(pair, counts[rank], MPI_DOUBLE, from_all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 0; r < size; r++)
    for (int i = 0; i < counts[r]; i++) sum += from_all[2 * r + i] * (r + 17);
  MPI_Alltoall(send, 2, MPI_DOUBLE, from_all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < 2 * size; i++) sum += from_all[i] * (i + 19);
  int sendcounts[MAX_RANKS], recvcounts[MAX_RANKS];
  for (int r = 0; r < size; r++) {
    sendcounts[r] = (rank + r) % 3;
    recvcounts[r] = (r + rank) % 3; /* what rank r sends here */
  }
  memset(from_all, 0, sizeof from_all);
  MPI_Alltoallv(send, sendcounts, displs, MPI_DOUBLE, from_all, recvcounts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < 2 * size; i++) sum += from_all[i] * (i + 23);
  MPI_Reduce_scatter(send, part, ones, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  sum += part[0] * 29;
  MPI_Reduce_scatter_block(send, part, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  sum += part[0] * 31 + part[1] * 37;
  double scanned = 0, before = 0;
  MPI_Scan(&mine, &scanned, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Exscan(&mine, &before, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  sum += scanned * 41 + (rank > 0 ? before * 43 : 0);
  double total = 0;
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("step %d gathered %.2f\n", step, total);
    fflush(stdout);
  }
}

/* Phase 8: nonblocking collectives in flight while the last rank computes. */
static void in_flight_collectives(int step, double mine) {
  int last = size - 1;
  double pair[2] = {mine, 2 * mine}, reduced[2] = {0, 0}, from_last[3] = {0, 0, 0}, gathered[2 * MAX_RANKS],
         scanned = 0;
  MPI_Request requests[5];
  MPI_Iallreduce(pair, reduced, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &requests[0]);
  if (rank == last) {
    compute(step, 8);
    for (int i = 0; i < 3; i++) from_last[i] = mine * (i + 1);
  } else {
    about_to_wait(step, 8);
  }
  MPI_Ibcast(from_last, 3, MPI_DOUBLE, last, MPI_COMM_WORLD, &requests[1]);
  MPI_Igather(pair, 2, MPI_DOUBLE, gathered, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, &requests[2]);
  MPI_Iscan(&mine, &scanned, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &requests[3]);
  MPI_Ibarrier(MPI_COMM_WORLD, &requests[4]);
  MPI_Status statuses[5];
  MPI_Waitall(5, requests, statuses);
  double sum = reduced[0] + 3 * reduced[1] + 5 * from_last[0] + 7 * from_last[1] + 11 * from_last[2] + 13 * scanned,
         total = 0;
  for (int i = 0; rank == 0 && i < 2 * size; i++) sum += gathered[i] * (i + 17);
  MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("step %d in flight %.2f\n", step, total);
    fflush(stdout);
  }
}

/* Phase 9: persistent requests, a probe, a buffered and a synchronous send. */
static double persistent_out, persistent_in;
static void point_to_point_kinds(int step, double mine, MPI_Request *persistent) {
  int last = size - 1;
  if (rank == last) {
    double told = mine * 11, out[3] = {mine, mine + 1, mine + 2};
    MPI_Bsend(&told, 1, MPI_DOUBLE, 0, 51, MPI_COMM_WORLD); /* in flight while this rank computes */
    compute(step, 9);
    persistent_out = mine * 13;
    MPI_Start(persistent);
    MPI_Ssend(out, 3, MPI_DOUBLE, 0, 52, MPI_COMM_WORLD);
    MPI_Wait(persistent, MPI_STATUS_IGNORE);
  } else if (rank == 0) {
    double probed[4] = {0, 0, 0, 0}, told = 0;
    MPI_Status status;
    int count = 0, flag = 0;
    MPI_Start(persistent);
    about_to_wait(step, 9);
    MPI_Probe(last, 52, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, MPI_DOUBLE, &count);
    MPI_Recv(probed, count, MPI_DOUBLE, last, 52, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, &flag, &status);
    MPI_Recv(&told, 1, MPI_DOUBLE, status.MPI_SOURCE, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(persistent, MPI_STATUS_IGNORE);
    printf("step %d probed %d: %.2f %.2f %.2f buffered %.2f persistent %.2f\n", step, count, probed[0], probed[1],
           probed[2], told, persistent_in);
    fflush(stdout);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int steps = argc > 1 ? atoi(argv[1]) : 6;
  gated_steps = argc > 2 ? atoi(argv[2]) : 0;
  gate_dir = argc > 3 ? argv[3] : "-";
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int last = size - 1;
  static double block[WORDS];
  static char bsend_buffer[4 * (sizeof(double) + MPI_BSEND_OVERHEAD)];
  MPI_Request persistent = MPI_REQUEST_NULL;
  if (rank == last) {
    MPI_Buffer_attach(bsend_buffer, (int)sizeof bsend_buffer);
    MPI_Send_init(&persistent_out, 1, MPI_DOUBLE, 0, 50, MPI_COMM_WORLD, &persistent);
  } else if (rank == 0) {
    MPI_Recv_init(&persistent_in, 1, MPI_DOUBLE, last, 50, MPI_COMM_WORLD, &persistent);
  }
  for (int step = 0; step < steps; step++) {
    double mine = (rank + 1) * 1.25 + step, got = 0, sum = 0, max[2] = {0, 0}, reduced = 0;
    /* MPI_Recv */
    if (rank == last) {
      compute(step, 0);
      double value = mine * 3;
      MPI_Send(&value, 1, MPI_DOUBLE, 0, 10 + step, MPI_COMM_WORLD);
    } else if (rank == 0) {
      about_to_wait(step, 0);
      MPI_Recv(&got, 1, MPI_DOUBLE, last, 10 + step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    /* MPI_Wait on a receive above the eager limits */
    if (rank == last) {
      compute(step, 1);
      for (int i = 0; i < WORDS; i++) block[i] = (double)((i * 7 + step) % 101);
      MPI_Send(block, WORDS, MPI_DOUBLE, 0, 20 + step, MPI_COMM_WORLD);
    } else if (rank == 0) {
      MPI_Request request;
      MPI_Irecv(block, WORDS, MPI_DOUBLE, last, 20 + step, MPI_COMM_WORLD, &request);
      about_to_wait(step, 1);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    /* MPI_Barrier */
    if (rank == last) compute(step, 2);
    else about_to_wait(step, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    /* MPI_Allreduce, and one in place */
    if (rank == last) compute(step, 3);
    else about_to_wait(step, 3);
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    max[0] = mine;
    max[1] = -mine;
    MPI_Allreduce(MPI_IN_PLACE, max, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* Rooted: a broadcast from the last rank, a reduction to rank 0 */
    double from_last = rank == last ? mine * 7 : 0;
    MPI_Bcast(&from_last, 1, MPI_DOUBLE, last, MPI_COMM_WORLD);
    double local = from_last + got;
    for (int i = 0; rank == 0 && i < WORDS; i++) local += block[i] * (i % 5 + 1);
    MPI_Reduce(&local, &reduced, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      printf("step %d got %.2f sum %.2f max %.2f %.2f reduced %.2f\n", step, got, sum, max[0], max[1], reduced);
      fflush(stdout);
    }
    if (step < 2 || step % 10 == 0) made_communicators(step, mine);
    gathered(step, mine);
    in_flight_collectives(step, mine);
    point_to_point_kinds(step, mine, &persistent);
  }
  if (persistent != MPI_REQUEST_NULL) MPI_Request_free(&persistent);
  if (rank == last) {
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* MPI_Finalize, waited in while the last rank computes (phase GATED_STEPS * 7) */
  if (rank == last) compute(-1, 0);
  else about_to_wait(-1, 0);
  MPI_Finalize();
  if (rank == 0) printf("done ranks %d\n", size);
  return 0;
}
