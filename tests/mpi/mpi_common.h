/* What the MPI test targets share; include after target_common.h. */
#ifndef STASIS_TEST_MPI_COMMON_H
#define STASIS_TEST_MPI_COMMON_H
#include <mpi.h>

/* MPI_Init, stdout line-buffered (rank 0 prints a progress line per step), this rank's number and
 * the number of ranks. */
static inline void mpi_start(int *argc, char ***argv, int *rank, int *size) {
  MPI_Init(argc, argv);
  line_buffered_stdout();
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

#endif
