/* What the lower half's environment keeps of one of the upper half's variables
 * (lower_environment.c). */
#ifndef STASIS_MPI_OMPI_ABI_LOWER_ENVIRONMENT_H
#define STASIS_MPI_OMPI_ABI_LOWER_ENVIRONMENT_H

/* `variable` ("NAME=VALUE") as the lower half gets it: LD_LIBRARY_PATH without the Open MPI
 * front's folder ($STASIS_MPI_OMPI_ABI_DIR; the result in a static buffer), NULL when nothing
 * of it is left; any other variable unchanged. */
const char *stasis_mpi_lower_environment_variable(const char *variable) __attribute__((visibility("hidden")));

#endif
