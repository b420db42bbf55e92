/* Completion of one of several requests, and cancelling a receive (README.md, Requests):
 * MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome, MPI_Cancel, MPI_Test_cancelled.
 *
 * Each pass tests every active request once inside one safe region (test_request_in_region, as
 * MPI_Wait's loop does), so a checkpoint holds the caller between passes, never inside the
 * library, and the waiting calls are passes in a loop. A cancelled receive is completed at once
 * (the library's cancel and wait, both local for a receive) and kept as done in the upper half:
 * the drain then neither takes it back nor posts it again, and a restart does not post it in the
 * fresh library. */
#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

/* Tests each non-null request of requests[0..count) once, stopping after the first complete one
 * when `first_only`. Each complete one is released: its status goes to statuses[k] (k: its order
 * among the complete ones; statuses may be MPI_STATUSES_IGNORE), its index to indices[k], and the
 * program's handle becomes MPI_REQUEST_NULL. *active: how many were not null. A `waiting` pass
 * that completes none leaves `function` as the call the thread waits in (stasis_mpi_blocked_in). */
static int test_pass(const char *function, int count, MPI_Request requests[], int first_only, int waiting,
                     int *active, int *completed, int indices[], MPI_Status statuses[]) {
  NEED_LOWER(function);
  *active = 0;
  *completed = 0;
  for (int i = 0; i < count; i++) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    if (stasis_mpi_ids_index(&handles.requests, requests[i]) < (int64_t)handles.requests.predefined_count)
      return not_live(function, "request", requests[i], MPI_ERR_REQUEST);
    ++*active;
  }
  if (*active == 0) return MPI_SUCCESS;
  int rc = 0, failed = 0;
  stasis_mpi_safe_point_enter(function);
  for (int i = 0; i < count && !failed && !(first_only && *completed); i++) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    StasisMpiLowerStatus status;
    int complete = test_request_in_region(stasis_mpi_ids_index(&handles.requests, requests[i]), &status, &rc);
    if (complete < 0) failed = 1;
    if (complete <= 0) continue;
    status_up(&status, statuses ? &statuses[*completed] : MPI_STATUS_IGNORE);
    stasis_mpi_ids_remove(&handles.requests, requests[i]);
    requests[i] = MPI_REQUEST_NULL;
    indices[(*completed)++] = i;
  }
  stasis_mpi_blocked_in = *completed || failed || !waiting ? NULL : function;
  stasis_mpi_safe_point_leave();
  return failed ? library_error(rc) : MPI_SUCCESS;
}

static void empty_status(MPI_Status *status) {
  if (!status) return;
  MPI_Status empty = {MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, 0};
  *status = empty;
}

/* Testany and Waitany: `waiting` loops until one completes or none is active. */
static int any(const char *function, int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status,
               int waiting) {
  int active = 0, completed = 0;
  for (unsigned turn = 0;; turn++) {
    int rc = test_pass(function, count, requests, 1, waiting, &active, &completed, index, status);
    if (rc != MPI_SUCCESS) return rc;
    if (completed || active == 0 || !waiting) break;
    stasis_mpi_wait_turn(turn);
  }
  if (!completed) *index = MPI_UNDEFINED;
  if (active == 0) empty_status(status);
  if (flag) *flag = completed || active == 0;
  return MPI_SUCCESS;
}

API int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  return any("MPI_Testany", count, requests, index, flag, status, 0);
}

API int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  return any("MPI_Waitany", count, requests, index, NULL, status, 1);
}

/* Testsome and Waitsome: *outcount MPI_UNDEFINED when none was active. */
static int some(const char *function, int incount, MPI_Request requests[], int *outcount, int indices[],
                MPI_Status statuses[], int waiting) {
  int active = 0;
  for (unsigned turn = 0;; turn++) {
    int rc = test_pass(function, incount, requests, 0, waiting, &active, outcount, indices, statuses);
    if (rc != MPI_SUCCESS) return rc;
    if (*outcount || active == 0 || !waiting) break;
    stasis_mpi_wait_turn(turn);
  }
  if (active == 0) *outcount = MPI_UNDEFINED;
  return MPI_SUCCESS;
}

API int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  return some("MPI_Testsome", incount, requests, outcount, indices, statuses, 0);
}

API int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  return some("MPI_Waitsome", incount, requests, outcount, indices, statuses, 1);
}

/* In a safe region: a receive not complete yet is cancelled and completed now (done, with the
 * library's status: cancelled, or received when the message had matched first). */
static int cancel_in_region(int64_t index) {
  RequestSide *side = &request_side[index];
  if (side->done) return MPI_SUCCESS; /* complete already: nothing left to cancel */
  if (!side->recv_type) {
    complain("MPI_Cancel", "cancelling a send is not offered in split mode (deprecated since MPI 4.0)");
    return MPI_ERR_UNSUPPORTED_OPERATION;
  }
  StasisMpiRealHandle *real = &handles.requests.entries[index].real;
  StasisMpiLowerStatus status;
  int rc = LOWER_CALL_IN_REGION(lower, cancel, real);
  if (rc == 0) rc = LOWER_CALL_IN_REGION(lower, wait, real, side->recv_type, &status);
  if (rc != 0) return library_error(rc);
  *real = 0;
  side->done = 1;
  side->done_status = status;
  if (!status.cancelled && status.source != MPI_PROC_NULL)
    stasis_mpi_peers_received(&peers, side->comm_index, status.source);
  return MPI_SUCCESS;
}

API int MPI_Cancel(MPI_Request *request) {
  NEED_LOWER("MPI_Cancel");
  int64_t index = stasis_mpi_ids_index(&handles.requests, *request);
  if (index < (int64_t)handles.requests.predefined_count)
    return not_live("MPI_Cancel", "request", *request, MPI_ERR_REQUEST);
  stasis_mpi_safe_point_enter("MPI_Cancel");
  int rc = cancel_in_region(index);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Test_cancelled(const MPI_Status *status, int *flag) {
  *flag = status->stasis_cancelled != 0;
  return MPI_SUCCESS;
}
