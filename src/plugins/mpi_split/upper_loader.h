/* Starting the upper half inside the lower-half program (upper_loader.c). */
#ifndef STASIS_MPI_UPPER_LOADER_H
#define STASIS_MPI_UPPER_LOADER_H

#include <stddef.h>

/* Maps `argv[0]`, a dynamically linked program, and its ELF interpreter (the program's own
 * ld.so, a second one in this process) at free addresses, gives the interpreter a new stack of
 * its own with argv, `envp` and an auxiliary vector describing the program, and jumps to it: the
 * program then starts as it would from execve, with its own libc. Returns only on failure, -1
 * with a message naming the file and the fault in `error`. */
int stasis_mpi_start_upper_half(char **argv, char **envp, char *error, size_t error_size);

#endif
