/* Loading the lower half into the process (lower_half_loader.c). */
#ifndef STASIS_MPI_LOWER_HALF_LOADER_H
#define STASIS_MPI_LOWER_HALF_LOADER_H

#include <stddef.h>

#include "lower_half_api.h"

/* The lower half's interface, or NULL with a one-line message (naming the file and the fault). */
const StasisMpiLower *stasis_mpi_load_lower_half(char *error, size_t error_size);

#endif
