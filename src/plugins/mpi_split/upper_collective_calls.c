/* The MPI collectives of the upper half: each builds the Collective the program
 * asked for and runs it (blocking) or starts it (the I forms, completed by
 * MPI_Wait) on the engine of upper_collectives.c, which makes them safe points
 * and settles them at a checkpoint. Part of libstasis_mpi.so. */
#define _GNU_SOURCE
#include "upper_collectives.h"

/* MPI_IN_PLACE and the lower half's stand-in for it are the same value. */
_Static_assert(MPI_IN_PLACE == STASIS_MPI_LOWER_IN_PLACE, "MPI_IN_PLACE must pass through unchanged");

static int refuse_null_request(const char *function) {
  complain(function, "the request pointer is NULL");
  return MPI_ERR_ARG;
}

/* request NULL: the blocking form. */
static int issue(Collective *asked, MPI_Request *request) {
  return request ? stasis_mpi_collective_start(asked, request) : stasis_mpi_collective_run(asked);
}

/* Gather, scatter, all-gather and all-to-all share the standard's signature
 * (root 0 for the two without one). */
static int exchange_issued(const char *function, enum CollectiveKind kind, const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                           MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER(function);
  Collective asked = {.kind = kind,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .count = sendcount,
                      .datatype = sendtype,
                      .recvbuf = recvbuf,
                      .recvcount = recvcount,
                      .recvtype = recvtype,
                      .root = root};
  return issue(&asked, request);
}

/* MPI_Scan and MPI_Exscan. */
static int scan_issued(const char *function, enum CollectiveKind kind, const void *sendbuf, void *recvbuf, int count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER(function);
  Collective asked = {.kind = kind,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .recvbuf = recvbuf,
                      .count = count,
                      .datatype = datatype,
                      .op = op};
  return issue(&asked, request);
}

static int barrier_issued(MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Barrier");
  Collective asked = {.kind = COLLECTIVE_BARRIER, .comm = comm};
  return issue(&asked, request);
}

API int MPI_Barrier(MPI_Comm comm) { return barrier_issued(comm, NULL); }
API int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ibarrier");
  return barrier_issued(comm, request);
}

static int bcast_issued(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Bcast");
  Collective asked = {
      .kind = COLLECTIVE_BCAST, .comm = comm, .recvbuf = buffer, .count = count, .datatype = datatype, .root = root};
  return issue(&asked, request);
}

API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast_issued(buffer, count, datatype, root, comm, NULL);
}
API int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ibcast");
  return bcast_issued(buffer, count, datatype, root, comm, request);
}

static int allreduce_issued(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Allreduce");
  Collective asked = {.kind = COLLECTIVE_ALLREDUCE,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .recvbuf = recvbuf,
                      .count = count,
                      .datatype = datatype,
                      .op = op};
  return issue(&asked, request);
}

API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return allreduce_issued(sendbuf, recvbuf, count, datatype, op, comm, NULL);
}
API int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                       MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iallreduce");
  return allreduce_issued(sendbuf, recvbuf, count, datatype, op, comm, request);
}

static int reduce_issued(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Reduce");
  Collective asked = {.kind = COLLECTIVE_REDUCE,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .recvbuf = recvbuf,
                      .count = count,
                      .datatype = datatype,
                      .op = op,
                      .root = root};
  return issue(&asked, request);
}

API int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                   MPI_Comm comm) {
  return reduce_issued(sendbuf, recvbuf, count, datatype, op, root, comm, NULL);
}
API int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                    MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ireduce");
  return reduce_issued(sendbuf, recvbuf, count, datatype, op, root, comm, request);
}

API int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return exchange_issued("MPI_Gather", COLLECTIVE_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                         root, comm, NULL);
}
API int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Igather");
  return exchange_issued("MPI_Igather", COLLECTIVE_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                         root, comm, request);
}

/* MPI_Gatherv and MPI_Allgatherv (root 0). */
static int gatherv_issued(const char *function, enum CollectiveKind kind, const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[],
                          MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER(function);
  Collective asked = {.kind = kind, .comm = comm, .sendbuf = sendbuf, .count = sendcount, .datatype = sendtype,
                      .recvbuf = recvbuf, .recvcounts = recvcounts, .rdispls = displs, .recvtype = recvtype,
                      .root = root};
  return issue(&asked, request);
}

API int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gatherv_issued("MPI_Gatherv", COLLECTIVE_GATHERV, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                        recvtype, root, comm, NULL);
}
API int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Igatherv");
  return gatherv_issued("MPI_Igatherv", COLLECTIVE_GATHERV, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                        recvtype, root, comm, request);
}

API int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return exchange_issued("MPI_Scatter", COLLECTIVE_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                         root, comm, NULL);
}
API int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iscatter");
  return exchange_issued("MPI_Iscatter", COLLECTIVE_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                         root, comm, request);
}

static int scatterv_issued(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Request *request) {
  NEED_LOWER("MPI_Scatterv");
  Collective asked = {.kind = COLLECTIVE_SCATTERV,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .sendcounts = sendcounts,
                      .sdispls = displs,
                      .datatype = sendtype,
                      .recvbuf = recvbuf,
                      .recvcount = recvcount,
                      .recvtype = recvtype,
                      .root = root};
  return issue(&asked, request);
}

API int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatterv_issued(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, NULL);
}
API int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                      MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iscatterv");
  return scatterv_issued(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
}

API int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm) {
  return exchange_issued("MPI_Allgather", COLLECTIVE_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, 0, comm, NULL);
}
API int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iallgather");
  return exchange_issued("MPI_Iallgather", COLLECTIVE_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, 0, comm, request);
}

API int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return gatherv_issued("MPI_Allgatherv", COLLECTIVE_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                        displs, recvtype, 0, comm, NULL);
}
API int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iallgatherv");
  return gatherv_issued("MPI_Iallgatherv", COLLECTIVE_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                        displs, recvtype, 0, comm, request);
}

API int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm) {
  return exchange_issued("MPI_Alltoall", COLLECTIVE_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, 0, comm, NULL);
}
API int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ialltoall");
  return exchange_issued("MPI_Ialltoall", COLLECTIVE_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, 0, comm, request);
}

static int alltoallv_issued(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Alltoallv");
  Collective asked = {.kind = COLLECTIVE_ALLTOALLV,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .sendcounts = sendcounts,
                      .sdispls = sdispls,
                      .datatype = sendtype,
                      .recvbuf = recvbuf,
                      .recvcounts = recvcounts,
                      .rdispls = rdispls,
                      .recvtype = recvtype};
  return issue(&asked, request);
}

API int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                      void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                      MPI_Comm comm) {
  return alltoallv_issued(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, NULL);
}
API int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                       void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                       MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ialltoallv");
  return alltoallv_issued(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                          request);
}

static int reduce_scatter_issued(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                 MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Reduce_scatter");
  Collective asked = {.kind = COLLECTIVE_REDUCE_SCATTER,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .recvbuf = recvbuf,
                      .recvcounts = recvcounts,
                      .datatype = datatype,
                      .op = op};
  return issue(&asked, request);
}

API int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm) {
  return reduce_scatter_issued(sendbuf, recvbuf, recvcounts, datatype, op, comm, NULL);
}
API int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ireduce_scatter");
  return reduce_scatter_issued(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
}

static int reduce_scatter_block_issued(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  NEED_LOWER("MPI_Reduce_scatter_block");
  Collective asked = {.kind = COLLECTIVE_REDUCE_SCATTER_BLOCK,
                      .comm = comm,
                      .sendbuf = sendbuf,
                      .recvbuf = recvbuf,
                      .recvcount = recvcount,
                      .datatype = datatype,
                      .op = op};
  return issue(&asked, request);
}

API int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm) {
  return reduce_scatter_block_issued(sendbuf, recvbuf, recvcount, datatype, op, comm, NULL);
}
API int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                                  MPI_Comm comm, MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Ireduce_scatter_block");
  return reduce_scatter_block_issued(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
}

API int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return scan_issued("MPI_Scan", COLLECTIVE_SCAN, sendbuf, recvbuf, count, datatype, op, comm, NULL);
}
API int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                  MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iscan");
  return scan_issued("MPI_Iscan", COLLECTIVE_SCAN, sendbuf, recvbuf, count, datatype, op, comm, request);
}

API int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return scan_issued("MPI_Exscan", COLLECTIVE_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, NULL);
}
API int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                    MPI_Request *request) {
  if (!request) return refuse_null_request("MPI_Iexscan");
  return scan_issued("MPI_Iexscan", COLLECTIVE_EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, request);
}
