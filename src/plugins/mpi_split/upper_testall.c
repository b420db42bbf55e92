/* MPI_Testall (part "mpiops"): all of the requests complete, or none of them changes (the
 * standard's rule). One pass in one safe region tests every request not known complete; each one
 * found complete is kept as done in the upper half (request_side: its status, no collective slot
 * any more), still the program's request, so the drain neither takes it back nor posts it again
 * and a restart does not post it in the fresh library. Once all are done they are released
 * together. Persistent requests are refused by name (not offered here yet). */
#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

API int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  const char *name = "MPI_Testall";
  NEED_LOWER(name);
  if (count < 0 || !flag) return MPI_ERR_ARG;
  for (int i = 0; i < count; i++) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    int64_t index = stasis_mpi_ids_index(&handles.requests, requests[i]);
    if (index < (int64_t)handles.requests.predefined_count) return not_live(name, "request", requests[i], MPI_ERR_REQUEST);
    if (request_side[index].persistent) {
      complain(name, "refused: a persistent request (use MPI_Wait or MPI_Test on it)");
      return MPI_ERR_REQUEST;
    }
  }
  int rc = 0, failed = 0, all = 1;
  stasis_mpi_safe_point_enter(name);
  for (int i = 0; i < count && !failed; i++) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    int64_t index = stasis_mpi_ids_index(&handles.requests, requests[i]);
    RequestSide *side = &request_side[index];
    if (side->done) continue;
    StasisMpiLowerStatus status;
    int complete = test_request_in_region(index, &status, &rc);
    if (complete < 0) failed = 1;
    if (complete <= 0) {
      all = 0;
      continue;
    }
    side->done = 1;
    side->done_status = status;
    side->collective = 0; /* its slot is free already: the status is all that is left */
  }
  if (!failed && all) {
    for (int i = 0; i < count; i++) {
      MPI_Status *status = statuses ? &statuses[i] : MPI_STATUS_IGNORE;
      if (requests[i] == MPI_REQUEST_NULL) {
        if (status) *status = (MPI_Status){MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, 0};
        continue;
      }
      status_up(&request_side[stasis_mpi_ids_index(&handles.requests, requests[i])].done_status, status);
      stasis_mpi_ids_remove(&handles.requests, requests[i]);
      requests[i] = MPI_REQUEST_NULL;
    }
  }
  stasis_mpi_safe_point_leave();
  *flag = !failed && all;
  return failed ? library_error(rc) : MPI_SUCCESS;
}
