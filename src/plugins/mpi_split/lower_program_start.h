/* Starting a fresh lower-half program inside the running program (lower_program_start.c): how the
 * upper half gets its MPI library at MPI_Init when STASIS_MPI_LOWER_MODE=program, and how a
 * restarted upper half will get a new one. */
#ifndef STASIS_MPI_LOWER_PROGRAM_START_H
#define STASIS_MPI_LOWER_PROGRAM_START_H

#include <stddef.h>

#include "lower_half_api.h"

/* Maps and starts `path` (stasis-mpi-lower-IMPL) on this thread until its main hands its
 * interface back; sets the lower half's thread pointer for LOWER_CALL. NULL with a one-line
 * message naming the file and the fault. */
const StasisMpiLower *stasis_mpi_start_lower_program(const char *path, char *error, size_t error_size);

#endif
