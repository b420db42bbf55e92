/* What the lower-half program owns in the process (README.md, Where the lower half lives): the
 * address ranges its code mapped and the threads its libc started, so that a checkpoint can
 * leave them out and save only the upper half. Built into stasis-mpi-lower-IMPL only. */
#ifndef STASIS_MPI_LOWER_INVENTORY_H
#define STASIS_MPI_LOWER_INVENTORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lower_half_api.h"

/* At the top of main, before anything of the upper half exists: every mapping there is this
 * half's. From then on this half's mmap, munmap and mremap (defined in the executable, so glibc's
 * callers and every library of this half reach them) keep the ranges up to date. Returns 0, or
 * -1 (and an error line) when /proc/self/maps cannot be read. (So are shmat, shmdt and
 * syscall for the calls among those it makes.) */
int stasis_mpi_inventory_start(char *error, size_t error_size);


/* Every system call this half makes through the functions it defines (mmap, open, socket, close,
 * syscall...): the kernel's result (-errno on failure), each new mapping or descriptor noted. */
long stasis_mpi_lower_system_call(long number, long a1, long a2, long a3, long a4, long a5, long a6);
/* rc as libc returns it: -1 with errno set for -errno. */
long stasis_mpi_with_errno(long rc);
/* lower_descriptors.c: notes the descriptors a successful call made or closed. */
void stasis_mpi_note_descriptor_call(long number, long rc, long a1, long a4);

/* The StasisMpiLower entry (lower_half_api.h, `set_thread_hook`). */
void stasis_mpi_lower_set_thread_hook(int (*hook)(int tid, int exempt));

/* Notes the sockets the process inherited from the launcher as this half's (the launcher's
 * connections: MPICH's PMI_FD and its proxy's, Slurm's PMI-2; a restart has its own): those in
 * `list` ("5,6,7", the upper half's count when it started this half), or, when NULL, those open
 * now. At the top of main. */
void stasis_mpi_note_inherited_descriptors(const char *list);

/* The StasisMpiLower entry (lower_half_api.h, `descriptors`). */
int stasis_mpi_lower_descriptors(int *fds, int capacity, int *count);

/* Counts [start, end) as this half's: the stack the upper half made for it when the upper half
 * started this one (lower_program_start.c). */
void stasis_mpi_inventory_add(uint64_t start, uint64_t end);

/* The StasisMpiLower entry (lower_half_api.h, `inventory`). */
int stasis_mpi_lower_inventory(StasisMpiLowerRange *ranges, int range_capacity, int *range_count, int *tids,
                               int tid_capacity, int *tid_count);
#endif
