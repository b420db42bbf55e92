/* What the MPI test targets share; include after target_common.h. */
#ifndef STASIS_TEST_MPI_COMMON_H
#define STASIS_TEST_MPI_COMMON_H
#include <mpi.h>
#include <poll.h>

/* MPI_Init, stdout line-buffered (rank 0 prints a progress line per step), this rank's number and
 * the number of ranks. */
static inline void mpi_start(int *argc, char ***argv, int *rank, int *size) {
  MPI_Init(argc, argv);
  line_buffered_stdout();
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* Leaves without MPI_Finalize (MPICH 4.0 over UCX's TCP deadlocks in it about one run in ten,
 * without Stasis too: one rank waits in UCX for its endpoints to close while the other waits in
 * the PMI barrier). Exiting right after a barrier is not enough under Hydra: a rank whose PMI
 * connection closes before it sent "finalize" counts as failed (exit code 1) and Hydra kills the
 * others, a race that a loaded machine loses now and then. So this rank tells its PMI server it
 * is done, in PMI-1's wire protocol on Hydra's PMI_FD, and waits for the acknowledgement, as
 * MPI_Finalize would, before it exits. */
static inline void leave_without_mpi_finalize(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  fflush(stdout);
  const char *pmi_fd_text = getenv("PMI_FD");
  if (pmi_fd_text) {
    int pmi_fd = atoi(pmi_fd_text);
    static const char kFinalize[] = "cmd=finalize\n";
    CHECK(write(pmi_fd, kFinalize, sizeof kFinalize - 1) == (ssize_t)(sizeof kFinalize - 1));
    char answer[256];
    size_t have = 0;
    while (!memchr(answer, '\n', have)) {
      CHECK(have < sizeof answer);
      ssize_t n = read(pmi_fd, answer + have, sizeof answer - have);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        struct pollfd readable = {.fd = pmi_fd, .events = POLLIN};
        poll(&readable, 1, -1);
        continue;
      }
      CHECK(n > 0);
      have += (size_t)n;
    }
    CHECK(have >= 17 && memcmp(answer, "cmd=finalize_ack\n", 17) == 0);
  }
  _exit(0);
}

#endif
