/* Error handlers and the thread level (part "mpinfo" of issue 17; README.md). The predefined
 * error handlers only (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN): setting one on a communicator
 * sets the library's own on the communicator's handle of the moment and logs it
 * (STASIS_MPI_REPLAY_COMM_SET_ERRHANDLER), so a restart sets it again, in order, on the
 * communicator made again (a dup made after it inherits it there as here). */
#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

int stasis_mpi_provided_thread_level;

API int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  const char *name = "MPI_Comm_set_errhandler";
  NEED_LOWER(name);
  if (stasis_mpi_ids_index(&handles.comms, comm) < 0) return not_live(name, "communicator", comm, MPI_ERR_COMM);
  if (errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_RETURN) {
    complain(name, "only the predefined MPI_ERRORS_ARE_FATAL and MPI_ERRORS_RETURN are offered");
    return MPI_ERR_ARG;
  }
  int errors_return = errhandler == MPI_ERRORS_RETURN;
  stasis_mpi_safe_point_enter(name); /* the library's handler and its record together */
  int rc = library_error(
      LOWER_CALL_IN_REGION(lower, comm_set_errhandler, REAL_NOW(handles.comms, comm), errors_return));
  if (rc == MPI_SUCCESS &&
      stasis_mpi_replay_append(&replay, STASIS_MPI_REPLAY_COMM_SET_ERRHANDLER, 0, comm, errors_return, 0, 0) != 0) {
    complain(name, "the replay log is full");
    rc = MPI_ERR_INTERN;
  }
  stasis_mpi_safe_point_leave();
  return rc;
}

/* The level MPI_Init_thread gave the program (upper_half.c), which a restart keeps. */
API int MPI_Query_thread(int *provided) {
  NEED_LOWER("MPI_Query_thread");
  if (!provided) return MPI_ERR_ARG;
  *provided = stasis_mpi_provided_thread_level;
  return MPI_SUCCESS;
}
