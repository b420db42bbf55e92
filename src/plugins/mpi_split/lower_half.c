/* The lower half of a split MPI process (README.md): the only code that includes a real MPI
 * library's mpi.h. Built once per library with its own compiler wrapper (mpicc.openmpi,
 * mpicc.mpich) into stasis_mpi_lower_<impl>.so, which the upper half loads (upper_half.c). It
 * converts between the library's handles and constants and the neutral ones of
 * lower_half_api.h, and nothing else: no state, no policy. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "abi/stasis_mpi_predefined.h"
#include "lower_half_api.h"
#include "lower_handles.h"

#ifndef STASIS_MPI_IMPLEMENTATION
#error "build with -DSTASIS_MPI_IMPLEMENTATION=\"openmpi\" (or mpich): the name of the library"
#endif

/* The standard's values (abi/mpi.h) against this library's (peer_down: lower_handles.h). */
static int peer_up(int rank) {
  if (rank == MPI_ANY_SOURCE) return -1;
  if (rank == MPI_PROC_NULL) return -2;
  return rank;
}
static int tag_down(int tag) { return tag == -1 ? MPI_ANY_TAG : tag; }
static int tag_up(int tag) { return tag == MPI_ANY_TAG ? -1 : tag; }
static int undefined_down(int value) { return value == -32766 ? MPI_UNDEFINED : value; }
static int undefined_up(int value) { return value == MPI_UNDEFINED ? -32766 : value; }
static const void *send_buffer(const void *buffer) {
  return buffer == STASIS_MPI_LOWER_IN_PLACE ? MPI_IN_PLACE : buffer;
}

static void status_up(const MPI_Status *real, MPI_Datatype type, StasisMpiLowerStatus *status) {
  if (!status) return;
  int count = 0, size = 0, flag = 0;
  status->source = peer_up(real->MPI_SOURCE);
  status->tag = tag_up(real->MPI_TAG);
  status->error = real->MPI_ERROR;
  MPI_Test_cancelled(real, &flag);
  status->cancelled = flag;
  status->bytes = 0;
  if (type != MPI_DATATYPE_NULL && MPI_Get_count(real, type, &count) == MPI_SUCCESS && count != MPI_UNDEFINED &&
      MPI_Type_size(type, &size) == MPI_SUCCESS)
    status->bytes = (long long)count * size;
}

/* Every predefined object is MPI_<its name in abi/stasis_mpi_predefined.h>. The arrays are built
 * on each call: in Open MPI they are addresses of globals, not constant expressions. */
#define LIBRARY_OBJECT(name) MPI_##name,
static StasisMpiRealHandle lower_predefined(int kind, int index) {
  MPI_Comm comms[] = {STASIS_MPI_PREDEFINED_COMMS(LIBRARY_OBJECT)};
  MPI_Datatype types[] = {STASIS_MPI_PREDEFINED_DATATYPES(LIBRARY_OBJECT)};
  MPI_Op ops[] = {STASIS_MPI_PREDEFINED_OPS(LIBRARY_OBJECT)};
  MPI_Group groups[] = {STASIS_MPI_PREDEFINED_GROUPS(LIBRARY_OBJECT)};
  MPI_Request requests[] = {STASIS_MPI_PREDEFINED_REQUESTS(LIBRARY_OBJECT)};
#define PICK(array) \
  return index >= 0 && (size_t)index < sizeof array / sizeof array[0] ? REAL(array[index]) : 0
  switch (kind) {
    case STASIS_MPI_KIND_COMM: PICK(comms);
    case STASIS_MPI_KIND_DATATYPE: PICK(types);
    case STASIS_MPI_KIND_OP: PICK(ops);
    case STASIS_MPI_KIND_GROUP: PICK(groups);
    case STASIS_MPI_KIND_REQUEST: PICK(requests);
    default: return 0;
  }
#undef PICK
}

static int lower_init_thread(int *argc, char ***argv, int required, int *provided) {
  int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
  int real_provided = MPI_THREAD_SINGLE;
  int rc = MPI_Init_thread(argc, argv, levels[required < 0 ? 0 : required > 3 ? 3 : required], &real_provided);
  *provided = 0;
  for (int i = 0; i < 4; i++)
    if (levels[i] == real_provided) *provided = i;
  return rc;
}
static int lower_finalize(void) { return MPI_Finalize(); }
static int lower_abort(StasisMpiRealHandle comm, int errorcode) { return MPI_Abort(AS(MPI_Comm, comm), errorcode); }
static double lower_wtime(void) { return MPI_Wtime(); }
static int lower_get_processor_name(char *name, int *length) { return MPI_Get_processor_name(name, length); }
static int lower_get_library_version(char *version, int *length) { return MPI_Get_library_version(version, length); }

static int lower_comm_rank(StasisMpiRealHandle comm, int *rank) { return MPI_Comm_rank(AS(MPI_Comm, comm), rank); }
static int lower_comm_size(StasisMpiRealHandle comm, int *size) { return MPI_Comm_size(AS(MPI_Comm, comm), size); }
static int lower_comm_dup(StasisMpiRealHandle comm, StasisMpiRealHandle *made) {
  MPI_Comm result = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(AS(MPI_Comm, comm), &result);
  *made = REAL(result);
  return rc;
}
static int lower_comm_split(StasisMpiRealHandle comm, int color, int key, StasisMpiRealHandle *made) {
  MPI_Comm result = MPI_COMM_NULL;
  int rc = MPI_Comm_split(AS(MPI_Comm, comm), undefined_down(color), key, &result);
  *made = REAL(result);
  return rc;
}
static int lower_comm_create(StasisMpiRealHandle comm, StasisMpiRealHandle group, StasisMpiRealHandle *made) {
  MPI_Comm result = MPI_COMM_NULL;
  int rc = MPI_Comm_create(AS(MPI_Comm, comm), AS(MPI_Group, group), &result);
  *made = REAL(result);
  return rc;
}
static int lower_comm_free(StasisMpiRealHandle comm) {
  MPI_Comm handle = AS(MPI_Comm, comm);
  return MPI_Comm_free(&handle);
}
static int lower_comm_group(StasisMpiRealHandle comm, StasisMpiRealHandle *made) {
  MPI_Group result = MPI_GROUP_NULL;
  int rc = MPI_Comm_group(AS(MPI_Comm, comm), &result);
  *made = REAL(result);
  return rc;
}
static int lower_group_size(StasisMpiRealHandle group, int *size) { return MPI_Group_size(AS(MPI_Group, group), size); }
static int lower_group_rank(StasisMpiRealHandle group, int *rank) {
  int rc = MPI_Group_rank(AS(MPI_Group, group), rank);
  *rank = undefined_up(*rank);
  return rc;
}
static int lower_group_free(StasisMpiRealHandle group) {
  MPI_Group handle = AS(MPI_Group, group);
  return MPI_Group_free(&handle);
}
/* ranks[i] = the rank in `world` of rank i of comm's group, or of its remote group (an
 * intercommunicator's, remote). */
static int ranks_in_world(StasisMpiRealHandle comm, int remote, StasisMpiRealHandle world, int *ranks, int size) {
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  int rc = remote ? MPI_Comm_remote_group(AS(MPI_Comm, comm), &group) : MPI_Comm_group(AS(MPI_Comm, comm), &group);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_group(AS(MPI_Comm, world), &world_group);
  for (int i = 0; rc == MPI_SUCCESS && i < size; i++)
    rc = MPI_Group_translate_ranks(group, 1, &i, world_group, &ranks[i]);
  if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  if (world_group != MPI_GROUP_NULL) MPI_Group_free(&world_group);
  return rc;
}
static int lower_comm_world_ranks(StasisMpiRealHandle comm, StasisMpiRealHandle world, int *ranks, int size) {
  return ranks_in_world(comm, 0, world, ranks, size);
}

static int lower_type_contiguous(int count, StasisMpiRealHandle old, StasisMpiRealHandle *made) {
  MPI_Datatype result = MPI_DATATYPE_NULL;
  int rc = MPI_Type_contiguous(count, AS(MPI_Datatype, old), &result);
  *made = REAL(result);
  return rc;
}
static int lower_type_vector(int count, int blocklength, int stride, StasisMpiRealHandle old,
                             StasisMpiRealHandle *made) {
  MPI_Datatype result = MPI_DATATYPE_NULL;
  int rc = MPI_Type_vector(count, blocklength, stride, AS(MPI_Datatype, old), &result);
  *made = REAL(result);
  return rc;
}
/* Commit and free take the handle by address and may change it; the upper half keeps the
 * library's handle it was given at creation, so both must leave it as it is (they do: Open MPI
 * and MPICH commit in place; a freed handle is forgotten). */
static int lower_type_commit(StasisMpiRealHandle type) {
  MPI_Datatype handle = AS(MPI_Datatype, type);
  int rc = MPI_Type_commit(&handle);
  return rc == MPI_SUCCESS && REAL(handle) != type ? MPI_ERR_TYPE : rc;
}
static int lower_type_free(StasisMpiRealHandle type) {
  MPI_Datatype handle = AS(MPI_Datatype, type);
  return MPI_Type_free(&handle);
}
static int lower_type_size(StasisMpiRealHandle type, int *size) { return MPI_Type_size(AS(MPI_Datatype, type), size); }

static int lower_send(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag,
                      StasisMpiRealHandle comm) {
  return MPI_Send(buf, count, AS(MPI_Datatype, type), peer_down(dest), tag, AS(MPI_Comm, comm));
}
static int lower_recv(void *buf, int count, StasisMpiRealHandle type, int source, int tag, StasisMpiRealHandle comm,
                      StasisMpiLowerStatus *status) {
  MPI_Status real;
  int rc = MPI_Recv(buf, count, AS(MPI_Datatype, type), peer_down(source), tag_down(tag), AS(MPI_Comm, comm), &real);
  if (rc == MPI_SUCCESS) status_up(&real, AS(MPI_Datatype, type), status);
  return rc;
}
static int lower_sendrecv(const void *sendbuf, int sendcount, StasisMpiRealHandle sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount, StasisMpiRealHandle recvtype, int source, int recvtag,
                          StasisMpiRealHandle comm, StasisMpiLowerStatus *status) {
  MPI_Status real;
  int rc = MPI_Sendrecv(sendbuf, sendcount, AS(MPI_Datatype, sendtype), peer_down(dest), sendtag, recvbuf, recvcount,
                        AS(MPI_Datatype, recvtype), peer_down(source), tag_down(recvtag), AS(MPI_Comm, comm), &real);
  if (rc == MPI_SUCCESS) status_up(&real, AS(MPI_Datatype, recvtype), status);
  return rc;
}
static int lower_isend(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag,
                       StasisMpiRealHandle comm, StasisMpiRealHandle *request) {
  MPI_Request result = MPI_REQUEST_NULL;
  int rc = MPI_Isend(buf, count, AS(MPI_Datatype, type), peer_down(dest), tag, AS(MPI_Comm, comm), &result);
  *request = REAL(result);
  return rc;
}
static int lower_issend(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag,
                        StasisMpiRealHandle comm, StasisMpiRealHandle *request) {
  MPI_Request result = MPI_REQUEST_NULL;
  int rc = MPI_Issend(buf, count, AS(MPI_Datatype, type), peer_down(dest), tag, AS(MPI_Comm, comm), &result);
  *request = REAL(result);
  return rc;
}
static int lower_bsend(const void *buf, int count, StasisMpiRealHandle type, int dest, int tag,
                       StasisMpiRealHandle comm) {
  return MPI_Bsend(buf, count, AS(MPI_Datatype, type), peer_down(dest), tag, AS(MPI_Comm, comm));
}
static int lower_buffer_attach(void *buffer, int size) { return MPI_Buffer_attach(buffer, size); }
static int lower_buffer_detach(void *buffer_address, int *size) { return MPI_Buffer_detach(buffer_address, size); }
static int lower_irecv(void *buf, int count, StasisMpiRealHandle type, int source, int tag,
                       StasisMpiRealHandle comm, StasisMpiRealHandle *request) {
  MPI_Request result = MPI_REQUEST_NULL;
  int rc = MPI_Irecv(buf, count, AS(MPI_Datatype, type), peer_down(source), tag_down(tag), AS(MPI_Comm, comm),
                     &result);
  *request = REAL(result);
  return rc;
}
static int lower_wait(StasisMpiRealHandle *request, StasisMpiRealHandle recv_type, StasisMpiLowerStatus *status) {
  MPI_Request handle = AS(MPI_Request, *request);
  MPI_Status real;
  int rc = MPI_Wait(&handle, &real);
  *request = REAL(handle);
  if (rc == MPI_SUCCESS) status_up(&real, recv_type ? AS(MPI_Datatype, recv_type) : MPI_DATATYPE_NULL, status);
  return rc;
}
static int lower_test(StasisMpiRealHandle *request, StasisMpiRealHandle recv_type, int *flag,
                      StasisMpiLowerStatus *status) {
  MPI_Request handle = AS(MPI_Request, *request);
  MPI_Status real;
  int rc = MPI_Test(&handle, flag, &real);
  *request = REAL(handle);
  if (rc == MPI_SUCCESS && *flag)
    status_up(&real, recv_type ? AS(MPI_Datatype, recv_type) : MPI_DATATYPE_NULL, status);
  return rc;
}
static int lower_iprobe(int source, int tag, StasisMpiRealHandle comm, int *flag, StasisMpiLowerStatus *status) {
  MPI_Status real;
  int rc = MPI_Iprobe(peer_down(source), tag_down(tag), AS(MPI_Comm, comm), flag, &real);
  if (rc == MPI_SUCCESS && *flag) status_up(&real, MPI_PACKED, status);
  return rc;
}
static int lower_recv_packed(void *buf, int bytes, int source, int tag, StasisMpiRealHandle comm,
                             StasisMpiLowerStatus *status) {
  MPI_Status real;
  int rc = MPI_Recv(buf, bytes, MPI_PACKED, peer_down(source), tag_down(tag), AS(MPI_Comm, comm), &real);
  if (rc == MPI_SUCCESS) status_up(&real, MPI_PACKED, status);
  return rc;
}
static int lower_unpack(const void *packed, int bytes, void *buf, int count, StasisMpiRealHandle type,
                        StasisMpiRealHandle comm) {
  int size = 0, position = 0;
  int rc = MPI_Type_size(AS(MPI_Datatype, type), &size);
  if (rc != MPI_SUCCESS || size == 0 || bytes == 0) return rc;
  if (bytes / size > count) return MPI_ERR_TRUNCATE;
  return MPI_Unpack(packed, bytes, &position, buf, bytes / size, AS(MPI_Datatype, type), AS(MPI_Comm, comm));
}
static int lower_cancel(StasisMpiRealHandle *request) {
  MPI_Request handle = AS(MPI_Request, *request);
  int rc = MPI_Cancel(&handle);
  *request = REAL(handle);
  return rc;
}

static int lower_barrier(StasisMpiRealHandle comm) { return MPI_Barrier(AS(MPI_Comm, comm)); }
static int lower_bcast(void *buf, int count, StasisMpiRealHandle type, int root, StasisMpiRealHandle comm) {
  return MPI_Bcast(buf, count, AS(MPI_Datatype, type), root, AS(MPI_Comm, comm));
}
static int lower_allreduce(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type,
                           StasisMpiRealHandle op, StasisMpiRealHandle comm) {
  return MPI_Allreduce(send_buffer(sendbuf), recvbuf, count, AS(MPI_Datatype, type), AS(MPI_Op, op),
                       AS(MPI_Comm, comm));
}
static int lower_reduce(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type,
                        StasisMpiRealHandle op, int root, StasisMpiRealHandle comm) {
  return MPI_Reduce(send_buffer(sendbuf), recvbuf, count, AS(MPI_Datatype, type), AS(MPI_Op, op), root,
                    AS(MPI_Comm, comm));
}
/* The nonblocking collectives: the library's request comes back widened. */
#define STARTED(call)                                                                                           \
  ({                                                                                                            \
    MPI_Request started_ = MPI_REQUEST_NULL;                                                                    \
    int started_rc_ = call;                                                                                     \
    *request = REAL(started_);                                                                                  \
    started_rc_;                                                                                                \
  })
static int lower_ibarrier(StasisMpiRealHandle comm, StasisMpiRealHandle *request) {
  return STARTED(MPI_Ibarrier(AS(MPI_Comm, comm), &started_));
}
static int lower_ibcast(void *buf, int count, StasisMpiRealHandle type, int root, StasisMpiRealHandle comm,
                        StasisMpiRealHandle *request) {
  return STARTED(MPI_Ibcast(buf, count, AS(MPI_Datatype, type), root, AS(MPI_Comm, comm), &started_));
}
static int lower_iallreduce(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type,
                            StasisMpiRealHandle op, StasisMpiRealHandle comm, StasisMpiRealHandle *request) {
  return STARTED(MPI_Iallreduce(send_buffer(sendbuf), recvbuf, count, AS(MPI_Datatype, type), AS(MPI_Op, op),
                                AS(MPI_Comm, comm), &started_));
}
static int lower_ireduce(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type,
                         StasisMpiRealHandle op, int root, StasisMpiRealHandle comm, StasisMpiRealHandle *request) {
  return STARTED(MPI_Ireduce(send_buffer(sendbuf), recvbuf, count, AS(MPI_Datatype, type), AS(MPI_Op, op), root,
                             AS(MPI_Comm, comm), &started_));
}
static int lower_reduce_scatter_block(const void *sendbuf, void *recvbuf, int count, StasisMpiRealHandle type,
                                      StasisMpiRealHandle op, StasisMpiRealHandle comm) {
  return MPI_Reduce_scatter_block(send_buffer(sendbuf), recvbuf, count, AS(MPI_Datatype, type), AS(MPI_Op, op),
                                  AS(MPI_Comm, comm));
}
static int lower_icollective(const StasisMpiLowerCollective *c, StasisMpiRealHandle *request) {
  const void *send = send_buffer(c->sendbuf);
  void *receive = c->recvbuf == STASIS_MPI_LOWER_IN_PLACE ? MPI_IN_PLACE : c->recvbuf;
  MPI_Datatype sendtype = AS(MPI_Datatype, c->sendtype), recvtype = AS(MPI_Datatype, c->recvtype);
  MPI_Comm comm = AS(MPI_Comm, c->comm);
  MPI_Op op = AS(MPI_Op, c->op);
  switch (c->kind) {
    case STASIS_MPI_LOWER_GATHER:
      return STARTED(MPI_Igather(send, c->sendcount, sendtype, receive, c->recvcount, recvtype, c->root, comm,
                                 &started_));
    case STASIS_MPI_LOWER_GATHERV:
      return STARTED(MPI_Igatherv(send, c->sendcount, sendtype, receive, c->recvcounts, c->rdispls, recvtype, c->root,
                                  comm, &started_));
    case STASIS_MPI_LOWER_SCATTER:
      return STARTED(MPI_Iscatter(send, c->sendcount, sendtype, receive, c->recvcount, recvtype, c->root, comm,
                                  &started_));
    case STASIS_MPI_LOWER_SCATTERV:
      return STARTED(MPI_Iscatterv(send, c->sendcounts, c->sdispls, sendtype, receive, c->recvcount, recvtype,
                                   c->root, comm, &started_));
    case STASIS_MPI_LOWER_ALLGATHER:
      return STARTED(MPI_Iallgather(send, c->sendcount, sendtype, receive, c->recvcount, recvtype, comm, &started_));
    case STASIS_MPI_LOWER_ALLGATHERV:
      return STARTED(MPI_Iallgatherv(send, c->sendcount, sendtype, receive, c->recvcounts, c->rdispls, recvtype, comm,
                                     &started_));
    case STASIS_MPI_LOWER_ALLTOALL:
      return STARTED(MPI_Ialltoall(send, c->sendcount, sendtype, receive, c->recvcount, recvtype, comm, &started_));
    case STASIS_MPI_LOWER_ALLTOALLV:
      return STARTED(MPI_Ialltoallv(send, c->sendcounts, c->sdispls, sendtype, receive, c->recvcounts, c->rdispls,
                                    recvtype, comm, &started_));
    case STASIS_MPI_LOWER_REDUCE_SCATTER:
      return STARTED(MPI_Ireduce_scatter(send, receive, c->recvcounts, sendtype, op, comm, &started_));
    case STASIS_MPI_LOWER_REDUCE_SCATTER_BLOCK:
      return STARTED(MPI_Ireduce_scatter_block(send, receive, c->recvcount, sendtype, op, comm, &started_));
    case STASIS_MPI_LOWER_SCAN: return STARTED(MPI_Iscan(send, receive, c->sendcount, sendtype, op, comm, &started_));
    case STASIS_MPI_LOWER_EXSCAN:
      return STARTED(MPI_Iexscan(send, receive, c->sendcount, sendtype, op, comm, &started_));
    default: return MPI_ERR_ARG;
  }
}

#include "lower_ops_types.c" /* part "mpiops": user operations, struct datatypes, groups from ranks */
#include "lower_types_layout.c" /* part "mpinfo": error handlers, hindexed and subarray datatypes, extents */

/* Only in the lower-half program (lower_inventory.c); absent (NULL) in the library form. */
/* Intercommunicators (mpiinter). */
static int lower_intercomm_create(StasisMpiRealHandle local, int local_leader, StasisMpiRealHandle peer,
                                  int remote_leader, int tag, StasisMpiRealHandle *made) {
  MPI_Comm result = MPI_COMM_NULL;
  int rc = MPI_Intercomm_create(AS(MPI_Comm, local), local_leader, AS(MPI_Comm, peer), remote_leader, tag, &result);
  *made = REAL(result);
  return rc;
}
static int lower_intercomm_merge(StasisMpiRealHandle intercomm, int high, StasisMpiRealHandle *made) {
  MPI_Comm result = MPI_COMM_NULL;
  int rc = MPI_Intercomm_merge(AS(MPI_Comm, intercomm), high, &result);
  *made = REAL(result);
  return rc;
}
static int lower_comm_test_inter(StasisMpiRealHandle comm, int *flag) {
  return MPI_Comm_test_inter(AS(MPI_Comm, comm), flag);
}
static int lower_comm_remote_size(StasisMpiRealHandle comm, int *size) {
  return MPI_Comm_remote_size(AS(MPI_Comm, comm), size);
}
static int lower_comm_remote_group(StasisMpiRealHandle comm, StasisMpiRealHandle *made) {
  MPI_Group result = MPI_GROUP_NULL;
  int rc = MPI_Comm_remote_group(AS(MPI_Comm, comm), &result);
  *made = REAL(result);
  return rc;
}
static int lower_comm_remote_world_ranks(StasisMpiRealHandle comm, StasisMpiRealHandle world, int *ranks, int size) {
  return ranks_in_world(comm, 1, world, ranks, size);
}

__attribute__((weak)) int stasis_mpi_lower_inventory(StasisMpiLowerRange *ranges, int range_capacity, int *range_count,
                                                     int *tids, int tid_capacity, int *tid_count);
__attribute__((weak)) int stasis_mpi_lower_descriptors(int *fds, int capacity, int *count);
__attribute__((weak)) void stasis_mpi_lower_set_thread_hook(int (*hook)(int tid, int exempt));
#include "lower_rma.h"

static const StasisMpiLower lower_half = {
    .interface_version = STASIS_MPI_LOWER_INTERFACE_VERSION,
    .implementation = STASIS_MPI_IMPLEMENTATION,
    .init_thread = lower_init_thread,
    .finalize = lower_finalize,
    .abort = lower_abort,
    .wtime = lower_wtime,
    .get_processor_name = lower_get_processor_name,
    .get_library_version = lower_get_library_version,
    .predefined = lower_predefined,
    .comm_rank = lower_comm_rank,
    .comm_size = lower_comm_size,
    .comm_dup = lower_comm_dup,
    .comm_split = lower_comm_split,
    .comm_create = lower_comm_create,
    .comm_free = lower_comm_free,
    .comm_group = lower_comm_group,
    .group_size = lower_group_size,
    .group_rank = lower_group_rank,
    .group_free = lower_group_free,
    .comm_world_ranks = lower_comm_world_ranks,
    .type_contiguous = lower_type_contiguous,
    .type_vector = lower_type_vector,
    .type_commit = lower_type_commit,
    .type_free = lower_type_free,
    .type_size = lower_type_size,
    .send = lower_send,
    .recv = lower_recv,
    .sendrecv = lower_sendrecv,
    .isend = lower_isend,
    .issend = lower_issend,
    .bsend = lower_bsend,
    .buffer_attach = lower_buffer_attach,
    .buffer_detach = lower_buffer_detach,
    .irecv = lower_irecv,
    .wait = lower_wait,
    .test = lower_test,
    .cancel = lower_cancel,
    .iprobe = lower_iprobe,
    .recv_packed = lower_recv_packed,
    .unpack = lower_unpack,
    .barrier = lower_barrier,
    .bcast = lower_bcast,
    .allreduce = lower_allreduce,
    .reduce = lower_reduce,
    .ibarrier = lower_ibarrier,
    .ibcast = lower_ibcast,
    .iallreduce = lower_iallreduce,
    .ireduce = lower_ireduce,
    .reduce_scatter_block = lower_reduce_scatter_block,
    .icollective = lower_icollective,
    .inventory = stasis_mpi_lower_inventory,
    .descriptors = stasis_mpi_lower_descriptors,
    .set_thread_hook = stasis_mpi_lower_set_thread_hook,
    /* mpirma (lower_rma.c) */
    .win_create = lower_win_create,
    .win_free = lower_win_free,
    .win_epoch = lower_win_epoch,
    .win_access = lower_win_access,
    .win_allocate_shared = lower_win_allocate_shared,
    .win_shared_query = lower_win_shared_query,
    .win_create_dynamic = lower_win_create_dynamic,
    .win_attach = lower_win_attach,
    .win_detach = lower_win_detach,
    /* Intercommunicators (mpiinter). */
    .intercomm_create = lower_intercomm_create,
    .intercomm_merge = lower_intercomm_merge,
    .comm_test_inter = lower_comm_test_inter,
    .comm_remote_size = lower_comm_remote_size,
    .comm_remote_group = lower_comm_remote_group,
    .comm_remote_world_ranks = lower_comm_remote_world_ranks,
    .op_create = lower_op_create,
    .op_free = lower_op_free,
    .type_create_struct = lower_type_create_struct,
    .group_select = lower_group_select,
    .group_translate_ranks = lower_group_translate_ranks,
    .group_compare = lower_group_compare,
    .comm_set_errhandler = lower_comm_set_errhandler,
    .type_create_hindexed = lower_type_create_hindexed,
    .type_create_subarray = lower_type_create_subarray,
    .type_get_extent = lower_type_get_extent,
    .pack = lower_pack,
    .unpack_at = lower_unpack_at,
    .pack_size = lower_pack_size,
};

__attribute__((visibility("default"))) const StasisMpiLower *stasis_mpi_lower_interface(void) { return &lower_half; }
