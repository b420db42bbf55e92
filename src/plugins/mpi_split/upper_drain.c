/* The drain (README.md, Draining): how many messages are in flight to this rank, taking them
 * out of the library into the upper half, and serving later receives from there. Part of
 * libstasis_mpi.so; its state is upper_state.h's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "lower_tls.h"
#include "upper_state.h"


int receive_drained(const char *function, void *buf, int count, StasisMpiRealHandle real_type, int source,
                           int tag, MPI_Comm comm, StasisMpiRealHandle real_comm, StasisMpiLowerStatus *status) {
  StasisMpiDrained *message = stasis_mpi_drain_take(&drained, comm, source, tag);
  if (!message) return -1;
  int rc = LOWER_CALL_IN_REGION(lower, unpack, message->data, message->bytes, buf, count, real_type, real_comm);
  StasisMpiLowerStatus served = {message->source, message->tag, 0, 0, message->bytes};
  *status = served;
  stasis_mpi_drained_free(message);
  if (rc != 0) complain(function, "a drained message does not fit the receive (truncated, or another type)");
  return library_error(rc);
}

/* The messages sent to this rank and not received by it (README.md, Draining). */
static int count_in_flight(const char *function, long long *to_me) {
  if (peers.uncounted != 0) {
    complain(function, "some messages went to or came from ranks no communicator map knew");
    return MPI_ERR_INTERN;
  }
  uint64_t sent_to_me = 0;
  int rc = LOWER_CALL(lower, reduce_scatter_block, peers.sent_to, &sent_to_me, 1,
                                       handles.datatypes.entries[STASIS_MPI_INDEX_UINT64_T].real,
                                       handles.ops.entries[STASIS_MPI_INDEX_SUM].real, private_world);
  if (rc != 0) return library_error(rc);
  *to_me = (long long)(sent_to_me - peers.received_total);
  return MPI_SUCCESS;
}

API int STASIS_MPI_In_flight(long long *to_me) {
  NEED_LOWER("STASIS_MPI_In_flight");
  return count_in_flight("STASIS_MPI_In_flight", to_me);
}

/* How long the drain waits for a message it knows is in flight before it gives up: it was sent
 * on a communicator the program freed since (its messages cannot be probed), or it is lost. */
enum { DRAIN_PATIENCE_SECONDS = 30 };

/* Takes every posted receive back from the library before the drain counts: a cancelled one is
 * parked (posted again after), one the library had already matched is complete now. */
static int park_posted_receives(void) {
  for (uint32_t index = handles.requests.predefined_count; index < handles.requests.next_unused; index++) {
    RequestSide *side = &request_side[index];
    if (!handles.requests.entries[index].live || !side->recv_type || side->done || side->parked) continue;
    StasisMpiRealHandle real = handles.requests.entries[index].real;
    StasisMpiLowerStatus status;
    int rc = LOWER_CALL(lower, cancel, &real);
    if (rc == 0) rc = LOWER_CALL(lower, wait, &real, side->recv_type, &status);
    if (rc != 0) return library_error(rc);
    handles.requests.entries[index].real = 0;
    if (status.cancelled) {
      side->parked = 1;
    } else {
      side->done = 1;
      side->done_status = status;
      if (status.source != MPI_PROC_NULL) stasis_mpi_peers_received(&peers, side->comm_index, status.source);
    }
  }
  return MPI_SUCCESS;
}

/* Completes every send the program started and has not waited for: once every message in
 * flight is drained, each was received, so each completes. Its request then holds its status in
 * the upper half alone (a library that a restart replaces knows nothing of it). */
static int complete_sends(void) {
  for (uint32_t index = handles.requests.predefined_count; index < handles.requests.next_unused; index++) {
    RequestSide *side = &request_side[index];
    if (!handles.requests.entries[index].live || side->recv_type || side->done || side->collective ||
        side->persistent)
      continue;
    StasisMpiRealHandle real = handles.requests.entries[index].real;
    StasisMpiLowerStatus status;
    int rc = LOWER_CALL(lower, wait, &real, 0, &status);
    if (rc != 0) return library_error(rc);
    handles.requests.entries[index].real = 0;
    side->done = 1;
    side->done_status = status;
  }
  return MPI_SUCCESS;
}

/* Posts the parked receives again, in the order the program posted them, each served from the
 * drained messages first. */
static int post_parked_receives(void) {
  for (;;) {
    uint32_t first = 0;
    for (uint32_t index = handles.requests.predefined_count; index < handles.requests.next_unused; index++)
      if (handles.requests.entries[index].live && request_side[index].parked &&
          (!first || request_side[index].posted < request_side[first].posted))
        first = index;
    if (!first) return MPI_SUCCESS;
    RequestSide *side = &request_side[first];
    StasisMpiRealHandle real_comm;
    if (stasis_mpi_ids_real(&handles.comms, side->comm, &real_comm) != 0)
      return not_live("STASIS_MPI_Drain", "communicator (a posted receive's, freed since)", side->comm, MPI_ERR_COMM);
    side->parked = 0;
    int rc = receive_drained("STASIS_MPI_Drain", side->buf, side->count, side->recv_type, side->source, side->tag,
                             side->comm, real_comm, &side->done_status);
    if (rc == MPI_SUCCESS) {
      side->done = 1;
      continue;
    }
    if (rc != -1) return rc;
    StasisMpiRealHandle made;
    rc = LOWER_CALL(lower, irecv, side->buf, side->count, side->recv_type, side->source, side->tag, real_comm, &made);
    if (rc != 0) return library_error(rc);
    handles.requests.entries[first].real = made;
  }
}

API int STASIS_MPI_Drain(long long *taken) {
  NEED_LOWER("STASIS_MPI_Drain");
  return stasis_mpi_drain_all(taken);
}

int stasis_mpi_drain_all(long long *taken) {
  int rc = park_posted_receives();
  if (rc != MPI_SUCCESS) return rc;
  long long to_me = 0, got = 0;
  rc = count_in_flight("STASIS_MPI_Drain", &to_me);
  if (rc != MPI_SUCCESS) return rc;
  double last_progress = LOWER_CALL(lower, wtime);
  while (got < to_me) {
    int progressed = 0;
    /* Each communicator is probed until it has nothing more, and the pass ends once every message
     * is found: a pass costs one probe per live communicator at most, however many messages one
     * of them carries (one message per communicator and pass made it messages times
     * communicators; bench/mpi_split_drain.py). */
    for (uint32_t index = STASIS_MPI_INDEX_COMM_NULL + 1; index < handles.comms.next_unused && got < to_me; index++) {
      if (!handles.comms.entries[index].live) continue;
      StasisMpiRealHandle real = handles.comms.entries[index].real;
      while (got < to_me) {
        StasisMpiLowerStatus status;
        int flag = 0;
        rc = LOWER_CALL(lower, iprobe, MPI_ANY_SOURCE, MPI_ANY_TAG, real, &flag, &status);
        if (rc != 0) return library_error(rc);
        if (!flag) break;
        StasisMpiDrained *message =
            stasis_mpi_drained_new(STASIS_MPI_VID(STASIS_MPI_KIND_COMM, (int)index), status.source, status.tag,
                                   (int)status.bytes);
        if (!message) {
          complain("STASIS_MPI_Drain", "out of memory for a drained message");
          return MPI_ERR_INTERN;
        }
        rc = LOWER_CALL(lower, recv_packed, message->data, message->bytes, status.source, status.tag, real, &status);
        if (rc != 0) {
          stasis_mpi_drained_free(message);
          return library_error(rc);
        }
        stasis_mpi_drain_keep(&drained, message);
        stasis_mpi_peers_received(&peers, index, status.source);
        got++;
        progressed = 1;
      }
    }
    if (progressed) {
      last_progress = LOWER_CALL(lower, wtime);
    } else if (LOWER_CALL(lower, wtime) - last_progress > DRAIN_PATIENCE_SECONDS) {
      char text[200];
      snprintf(text, sizeof text, "%lld of %lld messages in flight to this rank were found on no live communicator",
               to_me - got, to_me);
      complain("STASIS_MPI_Drain", text);
      return MPI_ERR_INTERN;
    }
  }
  *taken = got;
  rc = complete_sends();
  if (rc != MPI_SUCCESS) return rc;
  return post_parked_receives();
}
