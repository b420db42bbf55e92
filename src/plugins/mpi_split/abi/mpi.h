/* Stasis's MPI interface: the mpi.h a program compiles against to run as the upper half of a
 * split process (README.md). Every handle is a VIRTUAL id, an int that Stasis gives out and that
 * stays the same across checkpoints and restarts, whichever MPI library holds the real object
 * (Open MPI's handles are pointers, MPICH's are ints: neither ever reaches the program). Status
 * objects, constants and the C prototypes follow the MPI standard; only the functions the split
 * mode supports are declared, so a program that needs another fails to build instead of
 * failing later. Link with -lstasis_mpi. */
#ifndef STASIS_ABI_MPI_H
#define STASIS_ABI_MPI_H

#include "stasis_mpi_predefined.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STASIS_MPI_SPLIT 1
#define MPI_VERSION 3
#define MPI_SUBVERSION 1

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Group;
typedef int MPI_Request;
typedef int MPI_Message;
#define MPI_MESSAGE_NULL ((MPI_Message)STASIS_MPI_MESSAGE_TAG)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)(STASIS_MPI_MESSAGE_TAG | 1))
typedef long MPI_Aint;

/* A virtual id: tag 0x5A in the top byte, the kind (enum StasisMpiKind) in the next, the index in
 * its table below. */
#define STASIS_MPI_VID_TAG 0x5A000000
#define STASIS_MPI_VID(kind, index) ((int)(STASIS_MPI_VID_TAG | ((kind) << 16) | (index)))

#define STASIS_MPI_INDEX_OF(name) STASIS_MPI_INDEX_##name,
enum { STASIS_MPI_PREDEFINED_COMMS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_COMM_COUNT };
enum { STASIS_MPI_PREDEFINED_DATATYPES(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_DATATYPE_COUNT };
enum { STASIS_MPI_PREDEFINED_OPS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_OP_COUNT };
enum { STASIS_MPI_PREDEFINED_GROUPS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_GROUP_COUNT };
enum { STASIS_MPI_PREDEFINED_REQUESTS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_REQUEST_COUNT };
enum { STASIS_MPI_PREDEFINED_WINS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_WIN_COUNT };
enum { STASIS_MPI_PREDEFINED_ERRHANDLERS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_ERRHANDLER_COUNT };
enum { STASIS_MPI_PREDEFINED_INFOS(STASIS_MPI_INDEX_OF) STASIS_MPI_PREDEFINED_INFO_COUNT };
#undef STASIS_MPI_INDEX_OF

#define MPI_COMM_NULL STASIS_MPI_VID(STASIS_MPI_KIND_COMM, STASIS_MPI_INDEX_COMM_NULL)
#define MPI_COMM_WORLD STASIS_MPI_VID(STASIS_MPI_KIND_COMM, STASIS_MPI_INDEX_COMM_WORLD)
#define MPI_COMM_SELF STASIS_MPI_VID(STASIS_MPI_KIND_COMM, STASIS_MPI_INDEX_COMM_SELF)
#define STASIS_MPI_TYPE(name) STASIS_MPI_VID(STASIS_MPI_KIND_DATATYPE, STASIS_MPI_INDEX_##name)
#define MPI_DATATYPE_NULL STASIS_MPI_TYPE(DATATYPE_NULL)
#define MPI_CHAR STASIS_MPI_TYPE(CHAR)
#define MPI_SIGNED_CHAR STASIS_MPI_TYPE(SIGNED_CHAR)
#define MPI_UNSIGNED_CHAR STASIS_MPI_TYPE(UNSIGNED_CHAR)
#define MPI_BYTE STASIS_MPI_TYPE(BYTE)
#define MPI_SHORT STASIS_MPI_TYPE(SHORT)
#define MPI_UNSIGNED_SHORT STASIS_MPI_TYPE(UNSIGNED_SHORT)
#define MPI_INT STASIS_MPI_TYPE(INT)
#define MPI_UNSIGNED STASIS_MPI_TYPE(UNSIGNED)
#define MPI_LONG STASIS_MPI_TYPE(LONG)
#define MPI_UNSIGNED_LONG STASIS_MPI_TYPE(UNSIGNED_LONG)
#define MPI_LONG_LONG STASIS_MPI_TYPE(LONG_LONG)
#define MPI_LONG_LONG_INT STASIS_MPI_TYPE(LONG_LONG)
#define MPI_UNSIGNED_LONG_LONG STASIS_MPI_TYPE(UNSIGNED_LONG_LONG)
#define MPI_FLOAT STASIS_MPI_TYPE(FLOAT)
#define MPI_DOUBLE STASIS_MPI_TYPE(DOUBLE)
#define MPI_LONG_DOUBLE STASIS_MPI_TYPE(LONG_DOUBLE)
#define MPI_INT8_T STASIS_MPI_TYPE(INT8_T)
#define MPI_INT16_T STASIS_MPI_TYPE(INT16_T)
#define MPI_INT32_T STASIS_MPI_TYPE(INT32_T)
#define MPI_INT64_T STASIS_MPI_TYPE(INT64_T)
#define MPI_UINT8_T STASIS_MPI_TYPE(UINT8_T)
#define MPI_UINT16_T STASIS_MPI_TYPE(UINT16_T)
#define MPI_UINT32_T STASIS_MPI_TYPE(UINT32_T)
#define MPI_UINT64_T STASIS_MPI_TYPE(UINT64_T)
#define MPI_C_BOOL STASIS_MPI_TYPE(C_BOOL)
#define MPI_FLOAT_INT STASIS_MPI_TYPE(FLOAT_INT)
#define MPI_DOUBLE_INT STASIS_MPI_TYPE(DOUBLE_INT)
#define MPI_LONG_INT STASIS_MPI_TYPE(LONG_INT)
#define MPI_2INT STASIS_MPI_TYPE(2INT)
#define STASIS_MPI_OP(name) STASIS_MPI_VID(STASIS_MPI_KIND_OP, STASIS_MPI_INDEX_##name)
#define MPI_OP_NULL STASIS_MPI_OP(OP_NULL)
#define MPI_MAX STASIS_MPI_OP(MAX)
#define MPI_MIN STASIS_MPI_OP(MIN)
#define MPI_SUM STASIS_MPI_OP(SUM)
#define MPI_PROD STASIS_MPI_OP(PROD)
#define MPI_LAND STASIS_MPI_OP(LAND)
#define MPI_BAND STASIS_MPI_OP(BAND)
#define MPI_LOR STASIS_MPI_OP(LOR)
#define MPI_BOR STASIS_MPI_OP(BOR)
#define MPI_LXOR STASIS_MPI_OP(LXOR)
#define MPI_BXOR STASIS_MPI_OP(BXOR)
#define MPI_MAXLOC STASIS_MPI_OP(MAXLOC)
#define MPI_MINLOC STASIS_MPI_OP(MINLOC)
#define MPI_GROUP_NULL STASIS_MPI_VID(STASIS_MPI_KIND_GROUP, STASIS_MPI_INDEX_GROUP_NULL)
#define MPI_GROUP_EMPTY STASIS_MPI_VID(STASIS_MPI_KIND_GROUP, STASIS_MPI_INDEX_GROUP_EMPTY)
#define MPI_REQUEST_NULL STASIS_MPI_VID(STASIS_MPI_KIND_REQUEST, STASIS_MPI_INDEX_REQUEST_NULL)

/* Error codes: MPI_SUCCESS, and one class for every failure of the library underneath (its own
 * codes differ between implementations and mean nothing to the program after a restart). */
#define MPI_SUCCESS 0
#define MPI_ERR_COMM 5
#define MPI_ERR_TYPE 3
#define MPI_ERR_REQUEST 19
#define MPI_ERR_OP 9
#define MPI_ERR_GROUP 8
#define MPI_ERR_ARG 12
#define MPI_ERR_UNSUPPORTED_OPERATION 52
#define MPI_ERR_INTERN 17
#define MPI_ERR_OTHER 15

#define MPI_ANY_SOURCE (-1)
#define MPI_ANY_TAG (-1)
#define MPI_PROC_NULL (-2)
#define MPI_UNDEFINED (-32766)
#define MPI_IN_PLACE ((void *)1)
#define MPI_BOTTOM ((void *)0)

enum { MPI_THREAD_SINGLE = 0, MPI_THREAD_FUNNELED = 1, MPI_THREAD_SERIALIZED = 2, MPI_THREAD_MULTIPLE = 3 };
enum { MPI_IDENT = 0, MPI_CONGRUENT = 1, MPI_SIMILAR = 2, MPI_UNEQUAL = 3 };

#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_LIBRARY_VERSION_STRING 8192

typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int stasis_cancelled;
  long long stasis_bytes; /* bytes received: MPI_Get_count divides by the datatype's size */
} MPI_Status;
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalized(int *flag);
int MPI_Finalize(void);
int MPI_Abort(MPI_Comm comm, int errorcode);
double MPI_Wtime(void);
int MPI_Get_processor_name(char *name, int *resultlen);
int MPI_Get_library_version(char *version, int *resultlen);

int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);
int MPI_Group_size(MPI_Group group, int *size);
int MPI_Group_rank(MPI_Group group, int *rank);
int MPI_Group_free(MPI_Group *group);
/* Intercommunicators (upper_intercomm.c): point-to-point on them, MPI_Comm_free and
 * MPI_Intercomm_merge; no collectives on them yet. */
int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag,
                         MPI_Comm *newintercomm);
int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm);
int MPI_Comm_test_inter(MPI_Comm comm, int *flag);
int MPI_Comm_remote_size(MPI_Comm comm, int *size);
int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group);
/* Matched probes (upper_mprobe.c): the matched message is taken into the upper half. */
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status);
int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status);
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status);
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request);

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request);
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request);
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
/* The buffer is the program's; the largest of the libraries' overheads, so a buffer sized with it
 * fits either. */
#define MPI_BSEND_OVERHEAD 128
int MPI_Buffer_attach(void *buffer, int size);
int MPI_Buffer_detach(void *buffer_address, int *size);
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
/* Persistent requests: the upper half keeps them; each MPI_Start posts a nonblocking call. */
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                  MPI_Request *request);
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request);
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request);
int MPI_Start(MPI_Request *request);
int MPI_Startall(int count, MPI_Request requests[]);
int MPI_Request_free(MPI_Request *request);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]);

int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm);

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm);
int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm);
int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* The nonblocking collectives: MPI_Wait completes them (the upper half drives them in every wait). */
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request);
int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request);
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request);
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Request *request);
int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request);
int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request *request);
int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request *request);

/* Cartesian topologies and MPI_Wtick (upper_topology.c): a Cartesian communicator is a split of
 * its parent, ranks in order (reorder is ignored, as the standard allows), re-made by the replay
 * log; its grid is kept and answered in the upper half. Open MPI's values. */
#define MPI_ERR_RANK 6
#define MPI_ERR_TOPOLOGY 11
#define MPI_ERR_DIMS 12
enum { MPI_CART = 1, MPI_GRAPH = 2, MPI_DIST_GRAPH = 3 };
int MPI_Dims_create(int nnodes, int ndims, int dims[]);
int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *comm_cart);
int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);
int MPI_Cartdim_get(MPI_Comm comm, int *ndims);
int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]);
int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank);
int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest);
int MPI_Topo_test(MPI_Comm comm, int *status);
double MPI_Wtick(void);
/* End of the Cartesian topologies. */

/* Completion of one of several requests and the cancel of a receive (upper_completion.c): the
 * waiting ones wait at safe points, as MPI_Wait; a cancelled receive completes at once. Cancelling
 * a send is refused (MPI_ERR_UNSUPPORTED_OPERATION). */
int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status);
int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
int MPI_Cancel(MPI_Request *request);
int MPI_Test_cancelled(const MPI_Status *status, int *flag);
/* End of the completion calls. */

/* mpirma: one-sided communication (upper_rma.c; README.md, One-sided communication). Window
 * memory is the program's (MPI_Win_allocate and MPI_Alloc_mem map it in the upper half, saved
 * with the program); a restart makes every window again over the same memory and opens again the
 * epochs each rank held. Info arguments are accepted and not passed on (hints only). Windows from
 * MPI_Win_allocate_shared and MPI_Win_create_dynamic are served, but a checkpoint is refused while
 * one is live. Open MPI's values. */
typedef int MPI_Win;
typedef int MPI_Info;
#define MPI_WIN_NULL STASIS_MPI_VID(STASIS_MPI_KIND_WIN, STASIS_MPI_INDEX_WIN_NULL)
#define MPI_INFO_NULL STASIS_MPI_VID(STASIS_MPI_KIND_INFO, STASIS_MPI_INDEX_INFO_NULL)
#define MPI_REPLACE STASIS_MPI_OP(REPLACE)
#define MPI_NO_OP STASIS_MPI_OP(NO_OP)
#define MPI_ERR_WIN 53
#define MPI_ERR_RMA_SYNC 47
#define MPI_ERR_RMA_FLAVOR 70
#define MPI_MODE_NOCHECK 1
#define MPI_MODE_NOPRECEDE 2
#define MPI_MODE_NOPUT 4
#define MPI_MODE_NOSTORE 8
#define MPI_MODE_NOSUCCEED 16
#define MPI_LOCK_EXCLUSIVE 1
#define MPI_LOCK_SHARED 2
enum { MPI_WIN_BASE = 7, MPI_WIN_SIZE = 8, MPI_WIN_DISP_UNIT = 9, MPI_WIN_CREATE_FLAVOR = 10, MPI_WIN_MODEL = 11 };
enum { MPI_WIN_FLAVOR_CREATE = 1, MPI_WIN_FLAVOR_ALLOCATE = 2, MPI_WIN_FLAVOR_DYNAMIC = 3, MPI_WIN_FLAVOR_SHARED = 4 };
enum { MPI_WIN_UNIFIED = 0, MPI_WIN_SEPARATE = 1 };
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
int MPI_Free_mem(void *base);
int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win);
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win);
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win);
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr);
int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win);
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size);
int MPI_Win_detach(MPI_Win win, const void *base);
int MPI_Win_free(MPI_Win *win);
int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag);
int MPI_Win_get_group(MPI_Win win, MPI_Group *group);
int MPI_Win_fence(int assert, MPI_Win win);
int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win);
int MPI_Win_unlock(int rank, MPI_Win win);
int MPI_Win_lock_all(int assert, MPI_Win win);
int MPI_Win_unlock_all(MPI_Win win);
int MPI_Win_flush(int rank, MPI_Win win);
int MPI_Win_flush_all(MPI_Win win);
int MPI_Win_flush_local(int rank, MPI_Win win);
int MPI_Win_flush_local_all(MPI_Win win);
int MPI_Win_sync(MPI_Win win);
int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win);
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
            int target_count, MPI_Datatype target_datatype, MPI_Win win);
int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
                       int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                       int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Op op, MPI_Win win);
int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype,
                         int target_rank, MPI_Aint target_disp, MPI_Win win);
/* End of one-sided communication. */

/* Attributes and keyvals (part "mpiattr", upper_attributes.c): kept in the upper half alone (a
 * keyval is an id of its table, STASIS_MPI_KEYVAL_TAG | slot; an attribute the program's value),
 * so a restart under any library finds them unchanged. The predefined attributes of
 * communicators are answered there (MPI_TAG_UB: 32767, the standard's least, valid on any
 * library a restart brings). Open MPI's values. */
#define MPI_KEYVAL_INVALID (-1)
#define MPI_ERR_KEYVAL 36
#define STASIS_MPI_ERR_LASTCODE 92
#define STASIS_MPI_KEYVAL_TAG 0x4B000000
enum { MPI_TAG_UB = 0, MPI_HOST = 1, MPI_IO = 2, MPI_WTIME_IS_GLOBAL = 3, MPI_APPNUM = 4, MPI_LASTUSEDCODE = 5,
       MPI_UNIVERSE_SIZE = 6 };
/* Every handle is an int: one copy and one delete function type serves the three kinds. */
typedef int STASIS_MPI_Copy_attr_function(int object, int keyval, void *extra_state, void *attribute_val_in,
                                          void *attribute_val_out, int *flag);
typedef int STASIS_MPI_Delete_attr_function(int object, int keyval, void *attribute_val, void *extra_state);
typedef STASIS_MPI_Copy_attr_function MPI_Comm_copy_attr_function, MPI_Type_copy_attr_function,
    MPI_Win_copy_attr_function;
typedef STASIS_MPI_Delete_attr_function MPI_Comm_delete_attr_function, MPI_Type_delete_attr_function,
    MPI_Win_delete_attr_function;
int STASIS_MPI_Null_copy_fn(int object, int keyval, void *extra_state, void *attribute_val_in,
                            void *attribute_val_out, int *flag);
int STASIS_MPI_Dup_fn(int object, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out,
                      int *flag);
int STASIS_MPI_Null_delete_fn(int object, int keyval, void *attribute_val, void *extra_state);
#define MPI_COMM_NULL_COPY_FN STASIS_MPI_Null_copy_fn
#define MPI_COMM_DUP_FN STASIS_MPI_Dup_fn
#define MPI_COMM_NULL_DELETE_FN STASIS_MPI_Null_delete_fn
#define MPI_TYPE_NULL_COPY_FN STASIS_MPI_Null_copy_fn
#define MPI_TYPE_DUP_FN STASIS_MPI_Dup_fn
#define MPI_TYPE_NULL_DELETE_FN STASIS_MPI_Null_delete_fn
#define MPI_WIN_NULL_COPY_FN STASIS_MPI_Null_copy_fn
#define MPI_WIN_DUP_FN STASIS_MPI_Dup_fn
#define MPI_WIN_NULL_DELETE_FN STASIS_MPI_Null_delete_fn
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                           MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval, void *extra_state);
int MPI_Comm_free_keyval(int *comm_keyval);
int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                           MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval, void *extra_state);
int MPI_Type_free_keyval(int *type_keyval);
int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val);
int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag);
int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval);
int MPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn, MPI_Win_delete_attr_function *win_delete_attr_fn,
                          int *win_keyval, void *extra_state);
int MPI_Win_free_keyval(int *win_keyval);
int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val);
int MPI_Win_delete_attr(MPI_Win win, int win_keyval);
/* End of attributes and keyvals. */

/* Stasis's own: makes every communicator, group and datatype the program holds again in the
 * running library from the replay log, as a restart does in a fresh one, and rebinds their ids
 * (the old objects are left to the library). Collective over every communicator the program
 * made. Refused (MPI_ERR_REQUEST) while a request is in flight. *remade: how many objects the
 * program holds now, each made again. For tests of the replay against a real library. */
int STASIS_MPI_Remake_objects(int *remade);

/* Stasis's own: how many point-to-point messages were sent to this rank (by any rank, on any
 * communicator) and not yet received by it: the drain's one aggregated step, a reduction over a
 * private duplicate of MPI_COMM_WORLD. Collective over MPI_COMM_WORLD. */
int STASIS_MPI_In_flight(long long *to_me);

/* Stasis's own: receives every message in flight to this rank (STASIS_MPI_In_flight) into the
 * upper half, where this rank's later receives find them first, in the order they came.
 * Receives the program has posted (MPI_Irecv) are taken back first and posted again after, in
 * their order. Collective over MPI_COMM_WORLD. *taken: how many messages it received. */
int STASIS_MPI_Drain(long long *taken);

/* Stasis's own: what the lower half owns in this process, which a split checkpoint leaves out:
 * its address ranges (ranges[2 * i] to ranges[2 * i + 1], sorted, disjoint) and its threads.
 * MPI_ERR_OTHER, with a line on stderr, when the lower half cannot tell (loaded into the
 * program, sharing its libc) or the lists do not fit. */
int STASIS_MPI_Lower_inventory(unsigned long long *ranges, int range_capacity, int *range_count, int *tids,
                               int tid_capacity, int *tid_count);
/* Stasis's own: the descriptors the lower half holds (which a split checkpoint leaves out), in
 * order; MPI_ERR_OTHER as above. */
int STASIS_MPI_Lower_descriptors(int *fds, int capacity, int *count);

/* User reduction operations, struct datatypes, groups made from ranks, ready sends (part
 * "mpiops", upper_ops_types.c). A user operation's function gets the program's datatype id; at
 * most 32 live at once (MPI_ERR_INTERN past them). */
typedef void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
int MPI_Op_create(MPI_User_function *function, int commute, MPI_Op *op);
int MPI_Op_free(MPI_Op *op);
/* Stasis's own: MPI_Op_create whose function also gets `context` (the Open MPI front's way to
 * call a function of another ABI). */
typedef void STASIS_MPI_User_function_with_context(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype,
                                                   void *context);
int STASIS_MPI_Op_create_with_context(STASIS_MPI_User_function_with_context *function, void *context, int commute,
                                      MPI_Op *op);
int MPI_Type_create_struct(int count, const int blocklengths[], const MPI_Aint displacements[],
                           const MPI_Datatype types[], MPI_Datatype *newtype);
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]);
int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
/* All complete (*flag 1, each released) or none changes (*flag 0); persistent requests refused. */
int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]);

/* Error handlers, info objects, thread level, more derived datatypes (part "mpinfo": what NWChem's
 * Global Arrays call; upper_errhandlers.c, upper_info.c, upper_types_layout.c). Error handlers:
 * the two predefined ones, set on a communicator, logged and set again at a restart. Info objects
 * are the upper half's alone (their keys and values live in its memory, saved with the program);
 * the calls that take one accept it and pass none on (hints only). Open MPI's values. */
typedef int MPI_Errhandler;
#define MPI_ERRHANDLER_NULL STASIS_MPI_VID(STASIS_MPI_KIND_ERRHANDLER, STASIS_MPI_INDEX_ERRHANDLER_NULL)
#define MPI_ERRORS_ARE_FATAL STASIS_MPI_VID(STASIS_MPI_KIND_ERRHANDLER, STASIS_MPI_INDEX_ERRORS_ARE_FATAL)
#define MPI_ERRORS_RETURN STASIS_MPI_VID(STASIS_MPI_KIND_ERRHANDLER, STASIS_MPI_INDEX_ERRORS_RETURN)
#define MPI_INFO_ENV STASIS_MPI_VID(STASIS_MPI_KIND_INFO, STASIS_MPI_INDEX_INFO_ENV)
#define MPI_MAX_INFO_KEY 36
#define MPI_MAX_INFO_VAL 256
#define MPI_ERR_INFO_KEY 31
#define MPI_ERR_INFO_VALUE 33
#define MPI_ERR_INFO_NOKEY 32
#define MPI_ERR_INFO 34
enum { MPI_ORDER_C = 0, MPI_ORDER_FORTRAN = 1 };
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Query_thread(int *provided);
int MPI_Info_create(MPI_Info *info);
int MPI_Info_set(MPI_Info info, const char *key, const char *value);
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
int MPI_Info_get_nkeys(MPI_Info info, int *nkeys);
int MPI_Info_get_nthkey(MPI_Info info, int n, char *key);
int MPI_Info_delete(MPI_Info info, const char *key);
int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
int MPI_Info_free(MPI_Info *info);
int MPI_Type_create_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[],
                             MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[], MPI_Datatype oldtype,
                     MPI_Datatype *newtype);
int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype);
int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[], int order,
                             MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent);
/* A predefined datatype of a type class and size (MPI_TYPECLASS_COMPLEX has none yet), and packing
 * (ScaLAPACK's BLACS, under NWChem). */
enum { MPI_TYPECLASS_INTEGER = 1, MPI_TYPECLASS_REAL = 2, MPI_TYPECLASS_COMPLEX = 3 };
#define MPI_PACKED STASIS_MPI_TYPE(PACKED)
int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype);
int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
             MPI_Comm comm);
int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,
               MPI_Comm comm);
int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);

#ifdef __cplusplus
}
#endif
#endif
