/* Intercommunicators (README.md, Intercommunicators): MPI_Intercomm_create, MPI_Intercomm_merge,
 * MPI_Comm_test_inter, MPI_Comm_remote_size, MPI_Comm_remote_group. Part of libstasis_mpi.so.
 *
 * MPI_Intercomm_create has no nonblocking form and involves two groups that share no
 * communicator the program must hold, so it cannot wait at one MPI_Ibarrier as the other
 * creations do. It waits instead at safe points made of the split layer's own calls: an
 * MPI_Barrier of the local group, then the two leaders' MPI_Sendrecv on the peer communicator
 * with the program's tag (the standard reserves that tag on it for this call), then an MPI_Bcast
 * of the local group. Only then, every member of both groups inside the creation, is the
 * library's blocking MPI_Intercomm_create called. The leaders exchange their local
 * communicators' keys there, so both groups give the intercommunicator the same key (the
 * collectives' agreement at a checkpoint matches communicators by key). Its messages are counted
 * by the world ranks of its remote group (the ranks they name). MPI_Intercomm_merge is a creation
 * of the collectives' engine (an MPI_Ibarrier on the intercommunicator first, both groups). */
#include "lower_tls.h"
#include "upper_collectives.h"
#include "upper_state.h"

#define REAL_NOW(table, id) ((table).entries[stasis_mpi_ids_index(&(table), (id))].real)

static int live_comm(const char *function, MPI_Comm comm) {
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_index(&handles.comms, comm) <= STASIS_MPI_INDEX_COMM_NULL ||
      stasis_mpi_ids_real(&handles.comms, comm, &real) != 0)
    return not_live(function, "communicator", comm, MPI_ERR_COMM);
  return MPI_SUCCESS;
}

API int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag,
                             MPI_Comm *newintercomm) {
  static const char function[] = "MPI_Intercomm_create";
  NEED_LOWER(function);
  int rc = live_comm(function, local_comm), me = -1;
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(local_comm, &me);
  if (rc == MPI_SUCCESS && me == local_leader) rc = live_comm(function, peer_comm);
  if (rc != MPI_SUCCESS) return rc;
  uint64_t keys[2] = {0, 0}; /* this group's, the other's */
  stasis_mpi_safe_point_enter(function);
  keys[0] = stasis_mpi_collectives_child_key(local_comm); /* every member of local_comm counts it */
  stasis_mpi_safe_point_leave();
  rc = MPI_Barrier(local_comm);
  if (rc == MPI_SUCCESS && me == local_leader)
    rc = MPI_Sendrecv(&keys[0], 1, MPI_UINT64_T, remote_leader, tag, &keys[1], 1, MPI_UINT64_T, remote_leader, tag,
                      peer_comm, MPI_STATUS_IGNORE);
  if (rc == MPI_SUCCESS) rc = MPI_Bcast(keys, 2, MPI_UINT64_T, local_leader, local_comm);
  if (rc != MPI_SUCCESS) return rc;
  /* One region: the library's object, its id, key and record together. */
  stasis_mpi_safe_point_enter(function);
  StasisMpiRealHandle peer = handles.comms.entries[STASIS_MPI_INDEX_COMM_NULL].real, made = 0;
  if (me == local_leader) peer = REAL_NOW(handles.comms, peer_comm);
  rc = LOWER_CALL_IN_REGION(lower, intercomm_create, REAL_NOW(handles.comms, local_comm), local_leader, peer,
                            remote_leader, tag, &made);
  if (rc != 0) rc = library_error(rc);
  else rc = stasis_mpi_record_comm(function, STASIS_MPI_REPLAY_INTERCOMM_CREATE, made, local_comm, 0, local_leader,
                                   me == local_leader ? peer_comm : MPI_COMM_NULL, newintercomm);
  if (rc == MPI_SUCCESS) {
    StasisMpiReplayRecord *record = &replay.records[replay.count - 1];
    record->args[2] = remote_leader;
    record->args[3] = tag;
    stasis_mpi_collectives_set_key(*newintercomm, keys[0], keys[1]);
  }
  stasis_mpi_safe_point_leave();
  return rc == MPI_SUCCESS ? map_comm_ranks(function, *newintercomm, 1) : rc;
}

API int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
  NEED_LOWER("MPI_Intercomm_merge");
  return comm_created("MPI_Intercomm_merge",
                      stasis_mpi_create_comm(STASIS_MPI_REPLAY_INTERCOMM_MERGE, intercomm, high != 0, 0, 0, newintracomm),
                      newintracomm);
}

API int MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
  NEED_LOWER("MPI_Comm_test_inter");
  int rc = live_comm("MPI_Comm_test_inter", comm);
  return rc != MPI_SUCCESS ? rc : library_error(LOWER_CALL(lower, comm_test_inter, REAL_NOW(handles.comms, comm), flag));
}

API int MPI_Comm_remote_size(MPI_Comm comm, int *size) {
  NEED_LOWER("MPI_Comm_remote_size");
  int rc = live_comm("MPI_Comm_remote_size", comm);
  return rc != MPI_SUCCESS ? rc : library_error(LOWER_CALL(lower, comm_remote_size, REAL_NOW(handles.comms, comm), size));
}

API int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group) {
  NEED_LOWER("MPI_Comm_remote_group");
  int rc = live_comm("MPI_Comm_remote_group", comm);
  if (rc != MPI_SUCCESS) return rc;
  StasisMpiRealHandle made;
  stasis_mpi_safe_point_enter("MPI_Comm_remote_group"); /* the object and its id and record together */
  rc = LOWER_CALL_IN_REGION(lower, comm_remote_group, REAL_NOW(handles.comms, comm), &made);
  rc = rc != 0 ? library_error(rc)
               : remember("MPI_Comm_remote_group", &handles.groups, made, STASIS_MPI_REPLAY_COMM_REMOTE_GROUP, comm, 0,
                          0, 0, group);
  stasis_mpi_safe_point_leave();
  return rc;
}
