/* The Open MPI ABI front's functions (README.md): MPI_* with Open MPI's C signatures, as a
 * program compiled with Open MPI's mpi.h calls them. Each takes the virtual ids out of the
 * program's handles, calls the split layer's function of the same name (libstasis_mpi.so, through
 * ompi_abi_split) and gives back handles for the ids it returns. Buffers, counts, ranks, tags and
 * statuses pass through: Stasis's interface uses Open MPI's values and status layout (asserted in
 * handles.c). Error classes are numbered otherwise: every code returned, and a status's
 * MPI_ERROR, goes through CLASS (error_classes.def). Every forwarded function is also PMPI_*, as
 * in Open MPI.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdlib.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Op, MPI_Group, MPI_Request;

#define EXPORTED __attribute__((visibility("default")))
/* After each forwarded function: its PMPI_ name (generate_lists.py reads these lines). */
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));
EXPORTED int MPI_Init(int *argc, char ***argv) {
  int rc = CLASS(ompi_abi_split.Init(argc, argv));
  ompi_abi_mark_up(rc == OMPI_ABI_SUCCESS);
  return rc;
}
FORWARDED(MPI_Init)
EXPORTED int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int rc = CLASS(ompi_abi_split.Init_thread(argc, argv, required, provided));
  ompi_abi_mark_up(rc == OMPI_ABI_SUCCESS);
  return rc;
}
FORWARDED(MPI_Init_thread)
EXPORTED int MPI_Initialized(int *flag) { return CLASS(ompi_abi_split.Initialized(flag)); }
FORWARDED(MPI_Initialized)
EXPORTED int MPI_Finalized(int *flag) { return CLASS(ompi_abi_split.Finalized(flag)); }
FORWARDED(MPI_Finalized)
EXPORTED int MPI_Finalize(void) {
  int rc = CLASS(ompi_abi_split.Finalize());
  ompi_abi_mark_up(0);
  return rc;
}
FORWARDED(MPI_Finalize)
EXPORTED int MPI_Abort(MPI_Comm comm, int errorcode) { return CLASS(ompi_abi_split.Abort(VID(comm), errorcode)); }
FORWARDED(MPI_Abort)
EXPORTED double MPI_Wtime(void) { return ompi_abi_split.Wtime(); }
FORWARDED(MPI_Wtime)
EXPORTED int MPI_Get_processor_name(char *name, int *length) {
  return CLASS(ompi_abi_split.Get_processor_name(name, length));
}
FORWARDED(MPI_Get_processor_name)
EXPORTED int MPI_Get_library_version(char *version, int *length) {
  return CLASS(ompi_abi_split.Get_library_version(version, length));
}
FORWARDED(MPI_Get_library_version)
/* The standard the front offers (Stasis's interface says 3.1), not the library's underneath. */
EXPORTED int MPI_Get_version(int *version, int *subversion) {
  *version = 3;
  *subversion = 1;
  return OMPI_ABI_SUCCESS;
}
FORWARDED(MPI_Get_version)

EXPORTED int MPI_Comm_rank(MPI_Comm comm, int *rank) { return CLASS(ompi_abi_split.Comm_rank(VID(comm), rank)); }
FORWARDED(MPI_Comm_rank)
EXPORTED int MPI_Comm_size(MPI_Comm comm, int *size) { return CLASS(ompi_abi_split.Comm_size(VID(comm), size)); }
FORWARDED(MPI_Comm_size)
EXPORTED int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *copy) { MAKES(copy, ompi_abi_split.Comm_dup(VID(comm), &made)); }
FORWARDED(MPI_Comm_dup)
EXPORTED int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *part) {
  MAKES(part, ompi_abi_split.Comm_split(VID(comm), color, key, &made));
}
FORWARDED(MPI_Comm_split)
EXPORTED int MPI_Comm_free(MPI_Comm *comm) { THROUGH(comm, ompi_abi_split.Comm_free(&vid)); }
FORWARDED(MPI_Comm_free)
EXPORTED int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
  MAKES(group, ompi_abi_split.Comm_group(VID(comm), &made));
}
FORWARDED(MPI_Comm_group)
EXPORTED int MPI_Group_size(MPI_Group group, int *size) { return CLASS(ompi_abi_split.Group_size(VID(group), size)); }
FORWARDED(MPI_Group_size)
EXPORTED int MPI_Group_rank(MPI_Group group, int *rank) { return CLASS(ompi_abi_split.Group_rank(VID(group), rank)); }
FORWARDED(MPI_Group_rank)
EXPORTED int MPI_Group_free(MPI_Group *group) { THROUGH(group, ompi_abi_split.Group_free(&vid)); }
FORWARDED(MPI_Group_free)

EXPORTED int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype *made_type) {
  MAKES(made_type, ompi_abi_split.Type_contiguous(count, VID(old), &made));
}
FORWARDED(MPI_Type_contiguous)
EXPORTED int MPI_Type_vector(int count, int length, int stride, MPI_Datatype old, MPI_Datatype *made_type) {
  MAKES(made_type, ompi_abi_split.Type_vector(count, length, stride, VID(old), &made));
}
FORWARDED(MPI_Type_vector)
EXPORTED int MPI_Type_commit(MPI_Datatype *datatype) { THROUGH(datatype, ompi_abi_split.Type_commit(&vid)); }
FORWARDED(MPI_Type_commit)
EXPORTED int MPI_Type_free(MPI_Datatype *datatype) { THROUGH(datatype, ompi_abi_split.Type_free(&vid)); }
FORWARDED(MPI_Type_free)
EXPORTED int MPI_Type_size(MPI_Datatype datatype, int *size) {
  return CLASS(ompi_abi_split.Type_size(VID(datatype), size));
}
FORWARDED(MPI_Type_size)
EXPORTED int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count) {
  return CLASS(ompi_abi_split.Get_count(status, VID(datatype), count));
}
FORWARDED(MPI_Get_count)

EXPORTED int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return CLASS(ompi_abi_split.Send(buf, count, VID(datatype), dest, tag, VID(comm)));
}
FORWARDED(MPI_Send)
EXPORTED int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                      MPI_Status *status) {
  return CLASS(STATUSES_FILLED(status, 1, ompi_abi_split.Recv(buf, count, VID(datatype), source, tag, VID(comm), status)));
}
FORWARDED(MPI_Recv)
EXPORTED int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                          MPI_Status *status) {
  return CLASS(STATUSES_FILLED(status, 1,
                               ompi_abi_split.Sendrecv(sendbuf, sendcount, VID(sendtype), dest, sendtag, recvbuf,
                                                       recvcount, VID(recvtype), source, recvtag, VID(comm), status)));
}
FORWARDED(MPI_Sendrecv)
EXPORTED int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                       MPI_Request *request) {
  MAKES(request, ompi_abi_split.Isend(buf, count, VID(datatype), dest, tag, VID(comm), &made));
}
FORWARDED(MPI_Isend)
EXPORTED int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                       MPI_Request *request) {
  MAKES(request, ompi_abi_split.Irecv(buf, count, VID(datatype), source, tag, VID(comm), &made));
}
FORWARDED(MPI_Irecv)
EXPORTED int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  THROUGH(request, STATUSES_FILLED(status, 1, ompi_abi_split.Wait(&vid, status)));
}
FORWARDED(MPI_Wait)
EXPORTED int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  /* The ids are the program's memory either way, saved with it if a checkpoint comes while the
   * split layer waits. */
  WITH_REQUEST_IDS(count, requests, STATUSES_FILLED(statuses, count, ompi_abi_split.Waitall(count, ids, statuses)));
}
FORWARDED(MPI_Waitall)

EXPORTED int MPI_Barrier(MPI_Comm comm) { return CLASS(ompi_abi_split.Barrier(VID(comm))); }
FORWARDED(MPI_Barrier)
EXPORTED int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return CLASS(ompi_abi_split.Bcast(buffer, count, VID(datatype), root, VID(comm)));
}
FORWARDED(MPI_Bcast)
EXPORTED int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm) {
  return CLASS(ompi_abi_split.Allreduce(sendbuf, recvbuf, count, VID(datatype), VID(op), VID(comm)));
}
FORWARDED(MPI_Allreduce)
EXPORTED int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                        MPI_Comm comm) {
  return CLASS(ompi_abi_split.Reduce(sendbuf, recvbuf, count, VID(datatype), VID(op), root, VID(comm)));
}
FORWARDED(MPI_Reduce)

/* Every other MPI_* and PMPI_* function libmpi.so.40 exports (not_forwarded.def): present, so a
 * program links and loads, and ending the job with a line naming it when called. Declared
 * without a prototype: any caller's arguments are accepted and ignored. */
#define X(name)                                                                      \
  EXPORTED int name();                                                               \
  int name() { ompi_abi_fatal(#name, "not forwarded by Stasis's Open MPI front yet (src/plugins/mpi_split/ompi_abi/README.md)"); }
#include "not_forwarded.def"
#undef X
