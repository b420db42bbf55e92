/* The Fortran front's other collectives (README.md): the v-forms, the reduce-scatters, Exscan,
 * and every nonblocking collective, forwarded like front_fortran.c's. Counts and displacements
 * are INTEGER arrays, the same ints C takes. */
#include "fortran_front.h"

BINDING(gatherv)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcounts, Fint *displs,
                 Fint *recvtype, Fint *root, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Gatherv(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), recvcounts, displs,
                                TYPE(recvtype), *root, COMM(comm));
}
FORWARDED(gatherv, GATHERV)
BINDING(scatterv)(void *sendbuf, Fint *sendcounts, Fint *displs, Fint *sendtype, void *recvbuf, Fint *recvcount,
                  Fint *recvtype, Fint *root, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Scatterv(buffer(sendbuf), sendcounts, displs, TYPE(sendtype), buffer(recvbuf), *recvcount,
                                 TYPE(recvtype), *root, COMM(comm));
}
FORWARDED(scatterv, SCATTERV)
BINDING(allgatherv)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcounts, Fint *displs,
                    Fint *recvtype, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Allgatherv(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), recvcounts, displs,
                                   TYPE(recvtype), COMM(comm));
}
FORWARDED(allgatherv, ALLGATHERV)
BINDING(alltoallv)(void *sendbuf, Fint *sendcounts, Fint *sdispls, Fint *sendtype, void *recvbuf, Fint *recvcounts,
                   Fint *rdispls, Fint *recvtype, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Alltoallv(buffer(sendbuf), sendcounts, sdispls, TYPE(sendtype), buffer(recvbuf), recvcounts,
                                  rdispls, TYPE(recvtype), COMM(comm));
}
FORWARDED(alltoallv, ALLTOALLV)
BINDING(reduce_scatter)(void *sendbuf, void *recvbuf, Fint *recvcounts, Fint *datatype, Fint *op, Fint *comm,
                        Fint *ierr) {
  *ierr = fortran_split.Reduce_scatter(buffer(sendbuf), buffer(recvbuf), recvcounts, TYPE(datatype), OP(op),
                                       COMM(comm));
}
FORWARDED(reduce_scatter, REDUCE_SCATTER)
BINDING(reduce_scatter_block)(void *sendbuf, void *recvbuf, Fint *recvcount, Fint *datatype, Fint *op, Fint *comm,
                              Fint *ierr) {
  *ierr = fortran_split.Reduce_scatter_block(buffer(sendbuf), buffer(recvbuf), *recvcount, TYPE(datatype), OP(op),
                                             COMM(comm));
}
FORWARDED(reduce_scatter_block, REDUCE_SCATTER_BLOCK)
BINDING(exscan)(void *sendbuf, void *recvbuf, Fint *count, Fint *datatype, Fint *op, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Exscan(buffer(sendbuf), buffer(recvbuf), *count, TYPE(datatype), OP(op), COMM(comm));
}
FORWARDED(exscan, EXSCAN)

/* The nonblocking collectives: the blocking one's arguments and a request. */
BINDING(ibarrier)(Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ibarrier(COMM(comm), &made));
}
FORWARDED(ibarrier, IBARRIER)
BINDING(ibcast)(void *buf, Fint *count, Fint *datatype, Fint *root, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ibcast(buffer(buf), *count, TYPE(datatype), *root, COMM(comm), &made));
}
FORWARDED(ibcast, IBCAST)
/* Iallreduce, Iscan, Iexscan: a reduction without a root. */
#define REDUCTION(lower, UPPER, Name)                                                                          \
  BINDING(lower)(void *sendbuf, void *recvbuf, Fint *count, Fint *datatype, Fint *op, Fint *comm, Fint *request, \
                 Fint *ierr) {                                                                                  \
    MAKES(request, fortran_split.Name(buffer(sendbuf), buffer(recvbuf), *count, TYPE(datatype), OP(op),        \
                                      COMM(comm), &made));                                                     \
  }                                                                                                             \
  FORWARDED(lower, UPPER)
REDUCTION(iallreduce, IALLREDUCE, Iallreduce)
REDUCTION(iscan, ISCAN, Iscan)
REDUCTION(iexscan, IEXSCAN, Iexscan)
BINDING(ireduce)(void *sendbuf, void *recvbuf, Fint *count, Fint *datatype, Fint *op, Fint *root, Fint *comm,
                 Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ireduce(buffer(sendbuf), buffer(recvbuf), *count, TYPE(datatype), OP(op), *root,
                                       COMM(comm), &made));
}
FORWARDED(ireduce, IREDUCE)
BINDING(igather)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcount, Fint *recvtype,
                 Fint *root, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Igather(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), *recvcount,
                                       TYPE(recvtype), *root, COMM(comm), &made));
}
FORWARDED(igather, IGATHER)
BINDING(iscatter)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcount, Fint *recvtype,
                  Fint *root, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Iscatter(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), *recvcount,
                                        TYPE(recvtype), *root, COMM(comm), &made));
}
FORWARDED(iscatter, ISCATTER)
BINDING(iallgather)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcount, Fint *recvtype,
                    Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Iallgather(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), *recvcount,
                                          TYPE(recvtype), COMM(comm), &made));
}
FORWARDED(iallgather, IALLGATHER)
BINDING(ialltoall)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcount, Fint *recvtype,
                   Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ialltoall(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), *recvcount,
                                         TYPE(recvtype), COMM(comm), &made));
}
FORWARDED(ialltoall, IALLTOALL)
BINDING(igatherv)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcounts, Fint *displs,
                  Fint *recvtype, Fint *root, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Igatherv(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), recvcounts,
                                        displs, TYPE(recvtype), *root, COMM(comm), &made));
}
FORWARDED(igatherv, IGATHERV)
BINDING(iscatterv)(void *sendbuf, Fint *sendcounts, Fint *displs, Fint *sendtype, void *recvbuf, Fint *recvcount,
                   Fint *recvtype, Fint *root, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Iscatterv(buffer(sendbuf), sendcounts, displs, TYPE(sendtype), buffer(recvbuf),
                                         *recvcount, TYPE(recvtype), *root, COMM(comm), &made));
}
FORWARDED(iscatterv, ISCATTERV)
BINDING(iallgatherv)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcounts, Fint *displs,
                     Fint *recvtype, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Iallgatherv(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), recvcounts,
                                           displs, TYPE(recvtype), COMM(comm), &made));
}
FORWARDED(iallgatherv, IALLGATHERV)
BINDING(ialltoallv)(void *sendbuf, Fint *sendcounts, Fint *sdispls, Fint *sendtype, void *recvbuf, Fint *recvcounts,
                    Fint *rdispls, Fint *recvtype, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ialltoallv(buffer(sendbuf), sendcounts, sdispls, TYPE(sendtype), buffer(recvbuf),
                                          recvcounts, rdispls, TYPE(recvtype), COMM(comm), &made));
}
FORWARDED(ialltoallv, IALLTOALLV)
BINDING(ireduce_scatter)(void *sendbuf, void *recvbuf, Fint *recvcounts, Fint *datatype, Fint *op, Fint *comm,
                         Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ireduce_scatter(buffer(sendbuf), buffer(recvbuf), recvcounts, TYPE(datatype), OP(op),
                                               COMM(comm), &made));
}
FORWARDED(ireduce_scatter, IREDUCE_SCATTER)
BINDING(ireduce_scatter_block)(void *sendbuf, void *recvbuf, Fint *recvcount, Fint *datatype, Fint *op, Fint *comm,
                               Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Ireduce_scatter_block(buffer(sendbuf), buffer(recvbuf), *recvcount, TYPE(datatype),
                                                     OP(op), COMM(comm), &made));
}
FORWARDED(ireduce_scatter_block, IREDUCE_SCATTER_BLOCK)
