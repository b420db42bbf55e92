/* Fortran handles in split mode (README.md): what a Fortran program holds for an MPI object is
 * either Open MPI's number for a predefined object (mpif.h's parameters, compiled into the
 * program: MPI_COMM_WORLD is 0, MPI_DOUBLE_PRECISION 17) or the virtual id itself for an object
 * the program made. Both stay the same across a restart, under any library. */
#ifndef STASIS_OMPI_ABI_FORTRAN_HANDLES_H
#define STASIS_OMPI_ABI_FORTRAN_HANDLES_H

/* The virtual id of Fortran handle `handle`, which must be of `kind` (enum StasisMpiKind). A
 * number of Open MPI's without an equivalent, or a handle of another kind or of none, ends the
 * job through `fatal` with a line naming `function` and the handle: never a wrong object. */
int ompi_fortran_vid(const char *function, int handle, int kind, void (*fatal)(const char *, const char *))
    __attribute__((visibility("hidden")));
/* The Fortran handle for a virtual id the split layer handed out: Open MPI's number for a
 * predefined object (MPI_COMM_NULL after a free is 2, MPI_REQUEST_NULL after a wait 0), else the id. */
int ompi_fortran_handle(int vid) __attribute__((visibility("hidden")));

#endif
