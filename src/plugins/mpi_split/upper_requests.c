/* Point-to-point beyond send, receive and wait (README.md, Coverage): persistent requests,
 * probes, buffered sends. Part of libstasis_mpi.so.
 *
 * A persistent request is the upper half's alone: MPI_Send_init, _Ssend_init and MPI_Recv_init
 * keep the arguments under a request id, and each MPI_Start posts an ordinary MPI_Isend, _Issend or
 * MPI_Irecv with them, which the drain and a restart treat as they treat any (a receive posted
 * again in the fresh library, a send completed by the drain). The library never holds a persistent
 * object, so a restart has none to make again, under either library.
 *
 * A probe looks at the messages the drain kept first (a message drained at a checkpoint is no
 * longer in the library), then asks the library; MPI_Probe is that in the upper half's test loop,
 * a safe point. The buffer of MPI_Buffer_attach is the program's memory: attached again to the
 * fresh library after a restart; the messages MPI_Bsend left in it were drained at the checkpoint. */
#define _GNU_SOURCE
#include <stdio.h>

#include "lower_tls.h"
#include "upper_state.h"

enum PersistentKind { PERSISTENT_SEND = 1, PERSISTENT_SSEND, PERSISTENT_RECV };

static int persistent_init(const char *function, enum PersistentKind kind, const void *buf, int count,
                           MPI_Datatype datatype, int peer, int tag, MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER(function);
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_real(&handles.datatypes, datatype, &real) != 0)
    return not_live(function, "datatype", datatype, MPI_ERR_TYPE);
  if (stasis_mpi_ids_real(&handles.comms, comm, &real) != 0) return not_live(function, "communicator", comm, MPI_ERR_COMM);
  stasis_mpi_safe_point_enter(function);
  int rc = MPI_SUCCESS;
  if (stasis_mpi_ids_add(&handles.requests, 0, request) != 0) {
    complain(function, "too many requests for the split layer's table");
    rc = MPI_ERR_INTERN;
  } else {
    RequestSide side = {.comm_index = (uint32_t)stasis_mpi_ids_index(&handles.comms, comm), .buf = (void *)buf,
                        .count = count, .source = peer, .tag = tag, .comm = comm, .type = datatype,
                        .persistent = kind, .started = MPI_REQUEST_NULL};
    request_side[stasis_mpi_ids_index(&handles.requests, *request)] = side;
  }
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                      MPI_Request *request) {
  return persistent_init("MPI_Send_init", PERSISTENT_SEND, buf, count, datatype, dest, tag, comm, request);
}

API int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                       MPI_Request *request) {
  return persistent_init("MPI_Ssend_init", PERSISTENT_SSEND, buf, count, datatype, dest, tag, comm, request);
}

API int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                      MPI_Request *request) {
  return persistent_init("MPI_Recv_init", PERSISTENT_RECV, buf, count, datatype, source, tag, comm, request);
}

/* The inactive persistent request behind id `request`, or NULL (said: not one, or active). */
static RequestSide *inactive_persistent(const char *function, MPI_Request request) {
  int64_t index = stasis_mpi_ids_index(&handles.requests, request);
  if (index < (int64_t)handles.requests.predefined_count || !request_side[index].persistent) {
    not_live(function, "persistent request", request, MPI_ERR_REQUEST);
    return NULL;
  }
  if (request_side[index].started != MPI_REQUEST_NULL) {
    complain(function, "refused: the persistent request is active (complete it first)");
    return NULL;
  }
  return &request_side[index];
}

API int MPI_Start(MPI_Request *request) {
  NEED_LOWER("MPI_Start");
  RequestSide *side = inactive_persistent("MPI_Start", *request);
  if (!side) return MPI_ERR_REQUEST;
  MPI_Request started = MPI_REQUEST_NULL;
  int rc;
  switch (side->persistent) {
    case PERSISTENT_SEND:
      rc = MPI_Isend(side->buf, side->count, side->type, side->source, side->tag, side->comm, &started);
      break;
    case PERSISTENT_SSEND:
      rc = MPI_Issend(side->buf, side->count, side->type, side->source, side->tag, side->comm, &started);
      break;
    default: rc = MPI_Irecv(side->buf, side->count, side->type, side->source, side->tag, side->comm, &started); break;
  }
  if (rc == MPI_SUCCESS) side->started = started;
  return rc;
}

API int MPI_Startall(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; i++) {
    int rc = MPI_Start(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int stasis_mpi_persistent_complete(const char *function, int64_t index, MPI_Status *status, int *flag) {
  RequestSide *side = &request_side[index];
  if (side->started == MPI_REQUEST_NULL) { /* inactive: the standard's empty status at once */
    if (flag) *flag = 1;
    if (status) {
      MPI_Status empty = {MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, 0};
      *status = empty;
    }
    return MPI_SUCCESS;
  }
  /* The started request completes as any (the persistent one stays, inactive). */
  int rc = flag ? MPI_Test(&side->started, flag, status) : MPI_Wait(&side->started, status);
  if (rc != MPI_SUCCESS) complain(function, "the persistent request's operation failed");
  return rc;
}

API int MPI_Request_free(MPI_Request *request) {
  NEED_LOWER("MPI_Request_free");
  RequestSide *side = inactive_persistent("MPI_Request_free", *request);
  if (!side) return MPI_ERR_REQUEST;
  stasis_mpi_safe_point_enter("MPI_Request_free");
  side->persistent = 0;
  stasis_mpi_ids_remove(&handles.requests, *request);
  stasis_mpi_safe_point_leave();
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

/* One look for a message: the drained ones first, then the library. In a safe region. */
static int probe_in_region(int source, int tag, MPI_Comm comm, StasisMpiRealHandle real_comm, int *flag,
                           StasisMpiLowerStatus *status) {
  const StasisMpiDrained *kept = stasis_mpi_drain_find(&drained, comm, source, tag);
  if (kept) {
    StasisMpiLowerStatus found = {kept->source, kept->tag, 0, 0, kept->bytes};
    *status = found;
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (stasis_mpi_collectives_pending) stasis_mpi_collectives_progress();
  return library_error(LOWER_CALL_IN_REGION(lower, iprobe, source, tag, real_comm, flag, status));
}

API int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
  NEED_LOWER("MPI_Iprobe");
  StasisMpiRealHandle real_comm;
  if (stasis_mpi_ids_real(&handles.comms, comm, &real_comm) != 0)
    return not_live("MPI_Iprobe", "communicator", comm, MPI_ERR_COMM);
  StasisMpiLowerStatus found;
  *flag = 0;
  stasis_mpi_safe_point_enter("MPI_Iprobe");
  stasis_mpi_ids_real(&handles.comms, comm, &real_comm); /* of the moment: a restart may have come while held */
  int rc = probe_in_region(source, tag, comm, real_comm, flag, &found);
  stasis_mpi_safe_point_leave();
  if (rc == MPI_SUCCESS && *flag) status_up(&found, status);
  return rc;
}

API int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
  NEED_LOWER("MPI_Probe");
  StasisMpiRealHandle real_comm;
  if (stasis_mpi_ids_real(&handles.comms, comm, &real_comm) != 0)
    return not_live("MPI_Probe", "communicator", comm, MPI_ERR_COMM);
  StasisMpiLowerStatus found;
  int flag = 0, rc = MPI_SUCCESS;
  for (unsigned turn = 0; !flag && rc == MPI_SUCCESS; turn++) {
    stasis_mpi_safe_point_enter("MPI_Probe");
    /* The communicator's handle of the moment: a restart may have made it again while this
     * thread was held. */
    rc = stasis_mpi_ids_real(&handles.comms, comm, &real_comm) != 0
             ? MPI_ERR_COMM
             : probe_in_region(source, tag, comm, real_comm, &flag, &found);
    stasis_mpi_blocked_in = flag || rc != MPI_SUCCESS ? NULL : "MPI_Probe";
    stasis_mpi_safe_point_leave();
    if (!flag && rc == MPI_SUCCESS) stasis_mpi_wait_turn(turn);
  }
  if (rc == MPI_SUCCESS) status_up(&found, status);
  return rc;
}

/* The buffer of MPI_Buffer_attach, attached again after a restart. */
static void *attached;
static int attached_size;

API int MPI_Buffer_attach(void *buffer, int size) {
  NEED_LOWER("MPI_Buffer_attach");
  stasis_mpi_safe_point_enter("MPI_Buffer_attach"); /* attached and recorded together */
  int rc = library_error(LOWER_CALL_IN_REGION(lower, buffer_attach, buffer, size));
  if (rc == MPI_SUCCESS) {
    attached = buffer;
    attached_size = size;
  }
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Buffer_detach(void *buffer_address, int *size) {
  NEED_LOWER("MPI_Buffer_detach");
  void *library_buffer = NULL;
  stasis_mpi_safe_point_enter("MPI_Buffer_detach");
  int rc = library_error(LOWER_CALL_IN_REGION(lower, buffer_detach, &library_buffer, size));
  if (rc == MPI_SUCCESS) {
    *(void **)buffer_address = attached;
    *size = attached_size;
    attached = NULL;
    attached_size = 0;
  }
  stasis_mpi_safe_point_leave();
  return rc;
}

/* Complete at once (the library copies the message into the attached buffer); counted as sent,
 * in the same region, so a drain expects it. */
API int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  NEED_LOWER("MPI_Bsend");
  StasisMpiRealHandle real_type, real_comm;
  if (stasis_mpi_ids_real(&handles.datatypes, datatype, &real_type) != 0)
    return not_live("MPI_Bsend", "datatype", datatype, MPI_ERR_TYPE);
  if (stasis_mpi_ids_real(&handles.comms, comm, &real_comm) != 0)
    return not_live("MPI_Bsend", "communicator", comm, MPI_ERR_COMM);
  stasis_mpi_safe_point_enter("MPI_Bsend");
  stasis_mpi_ids_real(&handles.datatypes, datatype, &real_type); /* of the moment (as in MPI_Iprobe) */
  stasis_mpi_ids_real(&handles.comms, comm, &real_comm);
  int rc = library_error(LOWER_CALL_IN_REGION(lower, bsend, buf, count, real_type, dest, tag, real_comm));
  if (rc == MPI_SUCCESS) stasis_mpi_count_sent(comm, dest);
  stasis_mpi_safe_point_leave();
  return rc;
}

int stasis_mpi_requests_restarted(char *error, size_t error_size) {
  if (attached && LOWER_CALL(lower, buffer_attach, attached, attached_size) != 0) {
    snprintf(error, error_size, "the fresh library refused the buffer of MPI_Buffer_attach (%d bytes)", attached_size);
    return -1;
  }
  return 0;
}
