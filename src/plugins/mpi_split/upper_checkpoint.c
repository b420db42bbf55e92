/* What a split checkpoint needs from the upper half (README.md, Where the lower half lives):
 * the lower half's own inventory, asked through the interface. Part of libstasis_mpi.so. */
#define _GNU_SOURCE
#include "lower_tls.h"
#include "upper_state.h"

_Static_assert(sizeof(StasisMpiLowerRange) == 2 * sizeof(unsigned long long),
               "a range crosses as two unsigned long long");

API int STASIS_MPI_Lower_inventory(unsigned long long *ranges, int range_capacity, int *range_count, int *tids,
                                   int tid_capacity, int *tid_count) {
  static const char function[] = "STASIS_MPI_Lower_inventory";
  NEED_LOWER(function);
  if (!lower->inventory) {
    complain(function, "the lower half was loaded into the program (one libc): nothing of it can be told apart");
    return MPI_ERR_OTHER;
  }
  int rc = LOWER_CALL(lower, inventory, (StasisMpiLowerRange *)ranges, range_capacity, range_count, tids, tid_capacity,
                      tid_count);
  if (rc != 0) {
    complain(function, "the lower half's lists do not fit, or it lost track of its mappings");
    return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}
