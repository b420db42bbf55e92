/* The Open MPI ABI front's collectives (blocking and nonblocking), communicator creation from a
 * group, synchronous and buffered sends, probes, MPI_Test and persistent requests
 * (../upper_collective_calls.c, ../upper_requests.c): Open MPI's signatures forwarding to the split
 * layer, as front.c does, through a table of their own (resolved as handles.c resolves
 * ompi_abi_split). Buffers, counts, displacements and statuses pass through; handles become ids.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdlib.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Handle;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));
static struct {
  int (*Gather)(const void *, int, int, void *, int, int, int, int);
  int (*Gatherv)(const void *, int, int, void *, const int *, const int *, int, int, int);
  int (*Scatter)(const void *, int, int, void *, int, int, int, int);
  int (*Scatterv)(const void *, const int *, const int *, int, void *, int, int, int, int);
  int (*Allgather)(const void *, int, int, void *, int, int, int);
  int (*Allgatherv)(const void *, int, int, void *, const int *, const int *, int, int);
  int (*Alltoall)(const void *, int, int, void *, int, int, int);
  int (*Alltoallv)(const void *, const int *, const int *, int, void *, const int *, const int *, int, int);
  int (*Reduce_scatter)(const void *, void *, const int *, int, int, int);
  int (*Reduce_scatter_block)(const void *, void *, int, int, int, int);
  int (*Scan)(const void *, void *, int, int, int, int);
  int (*Exscan)(const void *, void *, int, int, int, int);
  int (*Ssend)(const void *, int, int, int, int, int);
  int (*Bsend)(const void *, int, int, int, int, int);
  int (*Buffer_attach)(void *, int);
  int (*Buffer_detach)(void *, int *);
  int (*Probe)(int, int, int, MPI_Status *);
  int (*Iprobe)(int, int, int, int *, MPI_Status *);
  int (*Ibarrier)(int, int *);
  int (*Ibcast)(void *, int, int, int, int, int *);
  int (*Iallreduce)(const void *, void *, int, int, int, int, int *);
  int (*Ireduce)(const void *, void *, int, int, int, int, int, int *);
  int (*Igather)(const void *, int, int, void *, int, int, int, int, int *);
  int (*Igatherv)(const void *, int, int, void *, const int *, const int *, int, int, int, int *);
  int (*Iscatter)(const void *, int, int, void *, int, int, int, int, int *);
  int (*Iscatterv)(const void *, const int *, const int *, int, void *, int, int, int, int, int *);
  int (*Iallgather)(const void *, int, int, void *, int, int, int, int *);
  int (*Iallgatherv)(const void *, int, int, void *, const int *, const int *, int, int, int *);
  int (*Ialltoall)(const void *, int, int, void *, int, int, int, int *);
  int (*Ialltoallv)(const void *, const int *, const int *, int, void *, const int *, const int *, int, int, int *);
  int (*Ireduce_scatter)(const void *, void *, const int *, int, int, int, int *);
  int (*Ireduce_scatter_block)(const void *, void *, int, int, int, int, int *);
  int (*Iscan)(const void *, void *, int, int, int, int, int *);
  int (*Iexscan)(const void *, void *, int, int, int, int, int *);
  int (*Issend)(const void *, int, int, int, int, int, int *);
  int (*Send_init)(const void *, int, int, int, int, int, int *);
  int (*Ssend_init)(const void *, int, int, int, int, int, int *);
  int (*Recv_init)(void *, int, int, int, int, int, int *);
  int (*Comm_create)(int, int, int *);
  int (*Test)(int *, int *, MPI_Status *);
  int (*Start)(int *);
  int (*Startall)(int, int[]);
  int (*Request_free)(int *);
} split;

#define RESOLVE(name) OMPI_ABI_RESOLVE(split, name)

__attribute__((constructor)) static void resolve_collectives(void) {
  RESOLVE(Gather);
  RESOLVE(Gatherv);
  RESOLVE(Scatter);
  RESOLVE(Scatterv);
  RESOLVE(Allgather);
  RESOLVE(Allgatherv);
  RESOLVE(Alltoall);
  RESOLVE(Alltoallv);
  RESOLVE(Reduce_scatter);
  RESOLVE(Reduce_scatter_block);
  RESOLVE(Scan);
  RESOLVE(Exscan);
  RESOLVE(Ssend);
  RESOLVE(Bsend);
  RESOLVE(Buffer_attach);
  RESOLVE(Buffer_detach);
  RESOLVE(Probe);
  RESOLVE(Iprobe);
  RESOLVE(Ibarrier);
  RESOLVE(Ibcast);
  RESOLVE(Iallreduce);
  RESOLVE(Ireduce);
  RESOLVE(Igather);
  RESOLVE(Igatherv);
  RESOLVE(Iscatter);
  RESOLVE(Iscatterv);
  RESOLVE(Iallgather);
  RESOLVE(Iallgatherv);
  RESOLVE(Ialltoall);
  RESOLVE(Ialltoallv);
  RESOLVE(Ireduce_scatter);
  RESOLVE(Ireduce_scatter_block);
  RESOLVE(Iscan);
  RESOLVE(Iexscan);
  RESOLVE(Issend);
  RESOLVE(Send_init);
  RESOLVE(Ssend_init);
  RESOLVE(Recv_init);
  RESOLVE(Comm_create);
  RESOLVE(Test);
  RESOLVE(Start);
  RESOLVE(Startall);
  RESOLVE(Request_free);
}

EXPORTED int MPI_Gather(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                        MPI_Handle recvtype, int root, MPI_Handle comm) {
  return CLASS(split.Gather(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), root, VID(comm)));
}
FORWARDED(MPI_Gather)
EXPORTED int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, const int recvcounts[],
                         const int displs[], MPI_Handle recvtype, int root, MPI_Handle comm) {
  return CLASS(split.Gatherv(sendbuf, sendcount, VID(sendtype), recvbuf, recvcounts, displs, VID(recvtype), root, VID(comm)));
}
FORWARDED(MPI_Gatherv)
EXPORTED int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                         MPI_Handle recvtype, int root, MPI_Handle comm) {
  return CLASS(split.Scatter(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), root, VID(comm)));
}
FORWARDED(MPI_Scatter)
EXPORTED int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Handle sendtype,
                          void *recvbuf, int recvcount, MPI_Handle recvtype, int root, MPI_Handle comm) {
  return CLASS(split.Scatterv(sendbuf, sendcounts, displs, VID(sendtype), recvbuf, recvcount, VID(recvtype), root, VID(comm)));
}
FORWARDED(MPI_Scatterv)
EXPORTED int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                           MPI_Handle recvtype, MPI_Handle comm) {
  return CLASS(split.Allgather(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), VID(comm)));
}
FORWARDED(MPI_Allgather)
EXPORTED int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Handle recvtype, MPI_Handle comm) {
  return CLASS(split.Allgatherv(sendbuf, sendcount, VID(sendtype), recvbuf, recvcounts, displs, VID(recvtype), VID(comm)));
}
FORWARDED(MPI_Allgatherv)
EXPORTED int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                          MPI_Handle recvtype, MPI_Handle comm) {
  return CLASS(split.Alltoall(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), VID(comm)));
}
FORWARDED(MPI_Alltoall)
EXPORTED int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Handle sendtype,
                           void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Handle recvtype,
                           MPI_Handle comm) {
  return CLASS(split.Alltoallv(sendbuf, sendcounts, sdispls, VID(sendtype), recvbuf, recvcounts, rdispls, VID(recvtype),
                         VID(comm)));
}
FORWARDED(MPI_Alltoallv)
EXPORTED int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Handle datatype,
                                MPI_Handle op, MPI_Handle comm) {
  return CLASS(split.Reduce_scatter(sendbuf, recvbuf, recvcounts, VID(datatype), VID(op), VID(comm)));
}
FORWARDED(MPI_Reduce_scatter)
EXPORTED int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Handle datatype,
                                      MPI_Handle op, MPI_Handle comm) {
  return CLASS(split.Reduce_scatter_block(sendbuf, recvbuf, recvcount, VID(datatype), VID(op), VID(comm)));
}
FORWARDED(MPI_Reduce_scatter_block)
EXPORTED int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Handle datatype, MPI_Handle op,
                      MPI_Handle comm) {
  return CLASS(split.Scan(sendbuf, recvbuf, count, VID(datatype), VID(op), VID(comm)));
}
FORWARDED(MPI_Scan)
EXPORTED int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Handle datatype, MPI_Handle op,
                        MPI_Handle comm) {
  return CLASS(split.Exscan(sendbuf, recvbuf, count, VID(datatype), VID(op), VID(comm)));
}
FORWARDED(MPI_Exscan)
EXPORTED int MPI_Ssend(const void *buf, int count, MPI_Handle datatype, int dest, int tag, MPI_Handle comm) {
  return CLASS(split.Ssend(buf, count, VID(datatype), dest, tag, VID(comm)));
}
FORWARDED(MPI_Ssend)
EXPORTED int MPI_Bsend(const void *buf, int count, MPI_Handle datatype, int dest, int tag, MPI_Handle comm) {
  return CLASS(split.Bsend(buf, count, VID(datatype), dest, tag, VID(comm)));
}
FORWARDED(MPI_Bsend)
EXPORTED int MPI_Buffer_attach(void *buffer, int size) { return CLASS(split.Buffer_attach(buffer, size)); }
FORWARDED(MPI_Buffer_attach)
EXPORTED int MPI_Buffer_detach(void *buffer_address, int *size) { return CLASS(split.Buffer_detach(buffer_address, size)); }
FORWARDED(MPI_Buffer_detach)
EXPORTED int MPI_Probe(int source, int tag, MPI_Handle comm, MPI_Status *status) {
  return CLASS(STATUSES_FILLED(status, 1, split.Probe(source, tag, VID(comm), status)));
}
FORWARDED(MPI_Probe)
EXPORTED int MPI_Iprobe(int source, int tag, MPI_Handle comm, int *flag, MPI_Status *status) {
  return CLASS(STATUSES_FILLED(status, *flag ? 1 : 0, split.Iprobe(source, tag, VID(comm), flag, status)));
}
FORWARDED(MPI_Iprobe)
EXPORTED int MPI_Ibarrier(MPI_Handle comm, MPI_Handle *request) { MAKES(request, split.Ibarrier(VID(comm), &made)); }
FORWARDED(MPI_Ibarrier)
EXPORTED int MPI_Ibcast(void *buffer, int count, MPI_Handle datatype, int root, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Ibcast(buffer, count, VID(datatype), root, VID(comm), &made));
}
FORWARDED(MPI_Ibcast)
EXPORTED int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Handle datatype, MPI_Handle op,
                            MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Iallreduce(sendbuf, recvbuf, count, VID(datatype), VID(op), VID(comm), &made));
}
FORWARDED(MPI_Iallreduce)
EXPORTED int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Handle datatype, MPI_Handle op, int root,
                         MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Ireduce(sendbuf, recvbuf, count, VID(datatype), VID(op), root, VID(comm), &made));
}
FORWARDED(MPI_Ireduce)
EXPORTED int MPI_Igather(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                         MPI_Handle recvtype, int root, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request,
        split.Igather(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), root, VID(comm), &made));
}
FORWARDED(MPI_Igather)
EXPORTED int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Handle recvtype, int root, MPI_Handle comm,
                          MPI_Handle *request) {
  MAKES(request, split.Igatherv(sendbuf, sendcount, VID(sendtype), recvbuf, recvcounts, displs, VID(recvtype), root,
                                VID(comm), &made));
}
FORWARDED(MPI_Igatherv)
EXPORTED int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                          MPI_Handle recvtype, int root, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request,
        split.Iscatter(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), root, VID(comm), &made));
}
FORWARDED(MPI_Iscatter)
EXPORTED int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Handle sendtype,
                           void *recvbuf, int recvcount, MPI_Handle recvtype, int root, MPI_Handle comm,
                           MPI_Handle *request) {
  MAKES(request, split.Iscatterv(sendbuf, sendcounts, displs, VID(sendtype), recvbuf, recvcount, VID(recvtype), root,
                                 VID(comm), &made));
}
FORWARDED(MPI_Iscatterv)
EXPORTED int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                            MPI_Handle recvtype, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request,
        split.Iallgather(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), VID(comm), &made));
}
FORWARDED(MPI_Iallgather)
EXPORTED int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Handle recvtype, MPI_Handle comm,
                             MPI_Handle *request) {
  MAKES(request, split.Iallgatherv(sendbuf, sendcount, VID(sendtype), recvbuf, recvcounts, displs, VID(recvtype),
                                   VID(comm), &made));
}
FORWARDED(MPI_Iallgatherv)
EXPORTED int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Handle sendtype, void *recvbuf, int recvcount,
                           MPI_Handle recvtype, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request,
        split.Ialltoall(sendbuf, sendcount, VID(sendtype), recvbuf, recvcount, VID(recvtype), VID(comm), &made));
}
FORWARDED(MPI_Ialltoall)
EXPORTED int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Handle sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Handle recvtype,
                            MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Ialltoallv(sendbuf, sendcounts, sdispls, VID(sendtype), recvbuf, recvcounts, rdispls,
                                  VID(recvtype), VID(comm), &made));
}
FORWARDED(MPI_Ialltoallv)
EXPORTED int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Handle datatype,
                                 MPI_Handle op, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Ireduce_scatter(sendbuf, recvbuf, recvcounts, VID(datatype), VID(op), VID(comm), &made));
}
FORWARDED(MPI_Ireduce_scatter)
EXPORTED int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Handle datatype,
                                       MPI_Handle op, MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Ireduce_scatter_block(sendbuf, recvbuf, recvcount, VID(datatype), VID(op), VID(comm), &made));
}
FORWARDED(MPI_Ireduce_scatter_block)
EXPORTED int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Handle datatype, MPI_Handle op,
                       MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Iscan(sendbuf, recvbuf, count, VID(datatype), VID(op), VID(comm), &made));
}
FORWARDED(MPI_Iscan)
EXPORTED int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Handle datatype, MPI_Handle op,
                         MPI_Handle comm, MPI_Handle *request) {
  MAKES(request, split.Iexscan(sendbuf, recvbuf, count, VID(datatype), VID(op), VID(comm), &made));
}
FORWARDED(MPI_Iexscan)
EXPORTED int MPI_Issend(const void *buf, int count, MPI_Handle datatype, int dest, int tag, MPI_Handle comm,
                        MPI_Handle *request) {
  MAKES(request, split.Issend(buf, count, VID(datatype), dest, tag, VID(comm), &made));
}
FORWARDED(MPI_Issend)
EXPORTED int MPI_Send_init(const void *buf, int count, MPI_Handle datatype, int dest, int tag, MPI_Handle comm,
                           MPI_Handle *request) {
  MAKES(request, split.Send_init(buf, count, VID(datatype), dest, tag, VID(comm), &made));
}
FORWARDED(MPI_Send_init)
EXPORTED int MPI_Ssend_init(const void *buf, int count, MPI_Handle datatype, int dest, int tag, MPI_Handle comm,
                            MPI_Handle *request) {
  MAKES(request, split.Ssend_init(buf, count, VID(datatype), dest, tag, VID(comm), &made));
}
FORWARDED(MPI_Ssend_init)
EXPORTED int MPI_Recv_init(void *buf, int count, MPI_Handle datatype, int source, int tag, MPI_Handle comm,
                           MPI_Handle *request) {
  MAKES(request, split.Recv_init(buf, count, VID(datatype), source, tag, VID(comm), &made));
}
FORWARDED(MPI_Recv_init)

EXPORTED int MPI_Comm_create(MPI_Handle comm, MPI_Handle group, MPI_Handle *newcomm) {
  MAKES(newcomm, split.Comm_create(VID(comm), VID(group), &made));
}
FORWARDED(MPI_Comm_create)
EXPORTED int MPI_Test(MPI_Handle *request, int *flag, MPI_Status *status) {
  THROUGH(request, STATUSES_FILLED(status, *flag ? 1 : 0, split.Test(&vid, flag, status)));
}
FORWARDED(MPI_Test)
EXPORTED int MPI_Start(MPI_Handle *request) { THROUGH(request, split.Start(&vid)); }
FORWARDED(MPI_Start)
EXPORTED int MPI_Request_free(MPI_Handle *request) { THROUGH(request, split.Request_free(&vid)); }
FORWARDED(MPI_Request_free)
EXPORTED int MPI_Startall(int count, MPI_Handle requests[]) {
  WITH_REQUEST_IDS(count, requests, split.Startall(count, ids));
}
FORWARDED(MPI_Startall)
