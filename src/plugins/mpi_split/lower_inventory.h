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


/* Counts [start, end) as this half's: the stack the upper half made for it when the upper half
 * started this one (lower_program_start.c). */
void stasis_mpi_inventory_add(uint64_t start, uint64_t end);

/* The StasisMpiLower entry (lower_half_api.h, `inventory`). */
int stasis_mpi_lower_inventory(StasisMpiLowerRange *ranges, int range_capacity, int *range_count, int *tids,
                               int tid_capacity, int *tid_count);
#endif
