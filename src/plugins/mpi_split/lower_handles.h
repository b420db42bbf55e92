/* What the lower half's files (lower_half.c, lower_rma.c) share: a library's handle to the
 * neutral StasisMpiRealHandle and back, and a peer rank of the standard's values (abi/mpi.h) to
 * the library's. Included after the library's mpi.h, only by the lower half. */
#ifndef STASIS_MPI_LOWER_HANDLES_H
#define STASIS_MPI_LOWER_HANDLES_H

#include <string.h>

#include "lower_half_api.h"

/* Handles are pointers in Open MPI and ints in MPICH: copy their bytes, whatever their type. */
_Static_assert(sizeof(MPI_Comm) <= sizeof(StasisMpiRealHandle), "an MPI handle wider than 64 bits");
static inline StasisMpiRealHandle real_of(const void *handle, size_t size) {
  StasisMpiRealHandle real = 0;
  memcpy(&real, handle, size);
  return real;
}
#define REAL(handle) real_of(&(handle), sizeof(handle))
#define AS(type, real)                                                                                          \
  ({                                                                                                            \
    type as_value_;                                                                                             \
    StasisMpiRealHandle as_real_ = (real);                                                                      \
    memcpy(&as_value_, &as_real_, sizeof as_value_);                                                           \
    as_value_;                                                                                                  \
  })

/* The standard's values (abi/mpi.h) against this library's. */
static inline int peer_down(int rank) {
  if (rank == -1) return MPI_ANY_SOURCE;
  if (rank == -2) return MPI_PROC_NULL;
  return rank;
}
#endif
