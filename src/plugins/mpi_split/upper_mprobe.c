/* Matched probes (README.md, Matched probes): MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv.
 * Part of libstasis_mpi.so.
 *
 * A message the program matches is taken out of the library at once, the way the drain takes
 * one (probed, then received as MPI_PACKED into upper-half memory), and the MPI_Message handle
 * names that copy: a slot of this file's table. So a matched message is upper-half state from
 * the moment it is matched: a checkpoint saves it, the drain neither waits for it nor sees it in
 * the library (it is counted received when matched), and MPI_Mrecv after a restart, under any
 * library, unpacks it with the receive's datatype. A message the drain took before the program
 * matched it is matched from the drained queue first, in MPI's order. The cost is one copy of the
 * message more than the library's own MPI_Mrecv. */
#include <stdio.h>

#include "lower_tls.h"
#include "upper_state.h"

/* The matched messages, by slot; slots 0 and 1 are MPI_MESSAGE_NULL and MPI_MESSAGE_NO_PROC.
 * Upper-half memory: saved with the program. Written in safe regions only. */
static StasisMpiDrained *matched[STASIS_MPI_MESSAGE_SLOTS];

static int message_slot(MPI_Message message) {
  uint32_t bits = (uint32_t)message, slot = bits & 0xffffu;
  if ((bits & 0xffff0000u) != (uint32_t)STASIS_MPI_MESSAGE_TAG || slot < 2 || slot >= STASIS_MPI_MESSAGE_SLOTS ||
      !matched[slot])
    return -1;
  return (int)slot;
}

/* One attempt to match a message on `comm` (a safe region): *message its handle, or *flag 0. */
static int match_in_region(const char *function, int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                           StasisMpiLowerStatus *status) {
  *flag = 0;
  int slot = 2; /* a free slot first: nothing is taken that could not be handed out */
  while (slot < STASIS_MPI_MESSAGE_SLOTS && matched[slot]) slot++;
  if (slot == STASIS_MPI_MESSAGE_SLOTS) {
    complain(function, "too many matched messages not yet received for the split layer's table (1024)");
    return MPI_ERR_INTERN;
  }
  StasisMpiDrained *taken = stasis_mpi_drain_take(&drained, comm, source, tag);
  if (!taken) {
    StasisMpiRealHandle real_comm = handles.comms.entries[stasis_mpi_ids_index(&handles.comms, comm)].real;
    StasisMpiLowerStatus probed;
    int found = 0;
    if (stasis_mpi_collectives_pending) stasis_mpi_collectives_progress();
    int rc = LOWER_CALL_IN_REGION(lower, iprobe, source, tag, real_comm, &found, &probed);
    if (rc != 0) return library_error(rc);
    if (!found) return MPI_SUCCESS;
    taken = stasis_mpi_drained_new(comm, probed.source, probed.tag, (int)probed.bytes);
    if (!taken) {
      complain(function, "out of memory for a matched message");
      return MPI_ERR_INTERN;
    }
    rc = LOWER_CALL_IN_REGION(lower, recv_packed, taken->data, taken->bytes, probed.source, probed.tag, real_comm,
                              &probed);
    if (rc != 0) {
      stasis_mpi_drained_free(taken);
      return library_error(rc);
    }
    stasis_mpi_peers_received(&peers, (uint32_t)stasis_mpi_ids_index(&handles.comms, comm), probed.source);
  }
  matched[slot] = taken;
  StasisMpiLowerStatus got = {taken->source, taken->tag, 0, 0, taken->bytes};
  *status = got;
  *message = (MPI_Message)(STASIS_MPI_MESSAGE_TAG | slot);
  *flag = 1;
  return MPI_SUCCESS;
}

static int matched_probe(const char *function, int source, int tag, MPI_Comm comm, int blocking, int *flag,
                         MPI_Message *message, MPI_Status *status) {
  NEED_LOWER(function);
  StasisMpiRealHandle real_comm;
  if (stasis_mpi_ids_real(&handles.comms, comm, &real_comm) != 0)
    return not_live(function, "communicator", comm, MPI_ERR_COMM);
  if (source == MPI_PROC_NULL) { /* the standard's answer: a message from nobody, empty */
    StasisMpiLowerStatus none = {MPI_PROC_NULL, MPI_ANY_TAG, 0, 0, 0};
    status_up(&none, status);
    *message = MPI_MESSAGE_NO_PROC;
    *flag = 1;
    return MPI_SUCCESS;
  }
  StasisMpiLowerStatus found;
  int rc = MPI_SUCCESS;
  *flag = 0;
  for (unsigned turn = 0; !*flag && rc == MPI_SUCCESS; turn++) {
    stasis_mpi_safe_point_enter(function);
    rc = match_in_region(function, source, tag, comm, flag, message, &found);
    stasis_mpi_blocked_in = *flag || !blocking ? NULL : function;
    stasis_mpi_safe_point_leave();
    if (!blocking) break;
    if (!*flag) stasis_mpi_wait_turn(turn);
  }
  if (rc == MPI_SUCCESS && *flag) status_up(&found, status);
  return rc;
}

API int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
  int flag;
  return matched_probe("MPI_Mprobe", source, tag, comm, 1, &flag, message, status);
}

API int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status) {
  return matched_probe("MPI_Improbe", source, tag, comm, 0, flag, message, status);
}

/* Unpacks matched message `message` into the receive's buffer and frees it: *status filled. */
static int receive_matched(const char *function, void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                           StasisMpiLowerStatus *status) {
  NEED_LOWER(function);
  StasisMpiRealHandle real_type;
  if (stasis_mpi_ids_real(&handles.datatypes, datatype, &real_type) != 0)
    return not_live(function, "datatype", datatype, MPI_ERR_TYPE);
  if (*message == MPI_MESSAGE_NO_PROC) {
    StasisMpiLowerStatus none = {MPI_PROC_NULL, MPI_ANY_TAG, 0, 0, 0};
    *status = none;
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
  }
  stasis_mpi_safe_point_enter(function);
  int slot = message_slot(*message), rc = MPI_SUCCESS;
  if (slot < 0) {
    stasis_mpi_safe_point_leave();
    char text[96];
    snprintf(text, sizeof text, "0x%x is not a matched message not yet received", (unsigned)*message);
    complain(function, text);
    return MPI_ERR_ARG;
  }
  StasisMpiDrained *taken = matched[slot];
  matched[slot] = NULL;
  real_type = handles.datatypes.entries[stasis_mpi_ids_index(&handles.datatypes, datatype)].real; /* of the moment */
  rc = LOWER_CALL_IN_REGION(lower, unpack, taken->data, taken->bytes, buf, count, real_type,
                            handles.comms.entries[STASIS_MPI_INDEX_COMM_WORLD].real);
  StasisMpiLowerStatus got = {taken->source, taken->tag, 0, 0, taken->bytes};
  *status = got;
  stasis_mpi_safe_point_leave();
  stasis_mpi_drained_free(taken);
  *message = MPI_MESSAGE_NULL;
  if (rc != 0) complain(function, "the matched message does not fit the receive (truncated, or another type)");
  return library_error(rc);
}

API int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status) {
  StasisMpiLowerStatus got;
  int rc = receive_matched("MPI_Mrecv", buf, count, datatype, message, &got);
  if (rc == MPI_SUCCESS) status_up(&got, status);
  return rc;
}

/* The message is in the upper half already: the receive completes at once, and its request only
 * hands the status to MPI_Wait or MPI_Test (a request done from the start, as one served from the
 * drained messages). */
API int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request) {
  StasisMpiLowerStatus got;
  int rc = receive_matched("MPI_Imrecv", buf, count, datatype, message, &got);
  if (rc != MPI_SUCCESS) return rc;
  stasis_mpi_safe_point_enter("MPI_Imrecv");
  if (stasis_mpi_ids_add(&handles.requests, 0, request) != 0) {
    complain("MPI_Imrecv", "too many requests in flight for the split layer's table");
    rc = MPI_ERR_INTERN;
  } else {
    RequestSide side = {.recv_type = handles.datatypes.entries[stasis_mpi_ids_index(&handles.datatypes, datatype)].real,
                        .comm = MPI_COMM_WORLD, .done = 1, .done_status = got};
    request_side[stasis_mpi_ids_index(&handles.requests, *request)] = side;
  }
  stasis_mpi_safe_point_leave();
  return rc;
}
