/* An ELF loader for a second program in a running process (program_loader.c): the lower-half
 * program starts the program as the upper half with it, and the upper half starts a fresh
 * lower-half program with it (lower_program_start.c). */
#ifndef STASIS_MPI_PROGRAM_LOADER_H
#define STASIS_MPI_PROGRAM_LOADER_H

#include <stddef.h>
#include <stdint.h>

/* Where a loaded program starts: its interpreter's entry, the stack pointer to give it (at argc,
 * as from execve) and the stack's mapping [stack_start, stack_end). */
typedef struct StasisMpiLoadedProgram {
  uintptr_t entry, stack_pointer, stack_start, stack_end;
} StasisMpiLoadedProgram;

/* Maps `argv[0]`, a dynamically linked program, and its ELF interpreter (the program's own
 * ld.so, a second one in this process) at free addresses, with stasis_mpi_loader_mmap, and gives
 * the interpreter a new stack of its own with argv, `envp` and an auxiliary vector describing
 * the program. 0, or -1 with a message naming the file and the fault in `error`. */
int stasis_mpi_load_program(char **argv, char **envp, StasisMpiLoadedProgram *loaded, char *error, size_t error_size);

/* Loads as above and jumps to it: the program then starts as it would from execve, with its own
 * libc. Returns only on failure, -1 with the message in `error`. */
int stasis_mpi_start_upper_half(char **argv, char **envp, char *error, size_t error_size);

/* The mmap the loader maps with: in the lower-half program one its inventory does not count
 * (lower_inventory.c: the upper half's memory is never the lower half's), in the upper half its
 * libc's (lower_program_start.c). */
void *stasis_mpi_loader_mmap(void *address, size_t length, int prot, int flags, int fd, long offset);

/* The sockets open in this process beyond the standard streams, in order, up to `capacity`: at
 * start-up, those the launcher left open (both halves count them as the lower half's). */
int stasis_mpi_inherited_sockets(int *fds, int capacity);

#endif
