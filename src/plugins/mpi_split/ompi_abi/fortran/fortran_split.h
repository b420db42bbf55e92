/* What the Fortran front's files share: the split layer's functions (abi/mpi.h's, in
 * libstasis_mpi.so), found once with dlsym on that library itself, since the C front's MPI_* of
 * the same names come first in the global scope; and the end of a job the front cannot go on. */
#ifndef STASIS_OMPI_ABI_FORTRAN_SPLIT_H
#define STASIS_OMPI_ABI_FORTRAN_SPLIT_H

#include "abi/mpi.h"

#define FORTRAN_SPLIT_FUNCTIONS(X)                                                                          \
  X(Init) X(Init_thread) X(Initialized) X(Finalized) X(Finalize) X(Abort) X(Wtime) X(Wtick)                 \
  X(Get_processor_name) X(Get_library_version) X(Comm_rank) X(Comm_size) X(Comm_dup) X(Comm_split)          \
  X(Comm_create) X(Comm_free) X(Comm_group) X(Group_size) X(Group_rank) X(Group_free)                       \
  X(Type_contiguous) X(Type_vector) X(Type_commit) X(Type_free) X(Type_size) X(Get_count) X(Send)           \
  X(Ssend) X(Recv) X(Sendrecv) X(Isend) X(Issend) X(Irecv) X(Probe) X(Iprobe) X(Wait) X(Test)               \
  X(Waitall) X(Waitany) X(Barrier) X(Bcast) X(Allreduce) X(Reduce) X(Scan) X(Gather) X(Scatter)             \
  X(Allgather) X(Alltoall) X(Gatherv) X(Scatterv) X(Allgatherv) X(Alltoallv) X(Reduce_scatter)              \
  X(Reduce_scatter_block) X(Exscan) X(Ibarrier) X(Ibcast) X(Iallreduce) X(Iscan) X(Iexscan) X(Ireduce)      \
  X(Igather) X(Iscatter) X(Iallgather) X(Ialltoall) X(Igatherv) X(Iscatterv) X(Iallgatherv)                 \
  X(Ialltoallv) X(Ireduce_scatter) X(Ireduce_scatter_block) X(Send_init) X(Ssend_init) X(Recv_init)         \
  X(Start) X(Startall) X(Request_free) X(Bsend) X(Buffer_attach) X(Buffer_detach) X(Testany)                \
  X(Waitsome) X(Testsome) X(Cancel) X(Test_cancelled) X(Dims_create) X(Cart_create) X(Cart_sub)             \
  X(Cartdim_get) X(Cart_get) X(Cart_rank) X(Cart_coords) X(Cart_shift) X(Topo_test) \
  X(Group_incl)

typedef struct FortranSplit {
#define MEMBER(name) __typeof__(&MPI_##name) name;
  FORTRAN_SPLIT_FUNCTIONS(MEMBER)
#undef MEMBER
} FortranSplit;
extern FortranSplit fortran_split __attribute__((visibility("hidden")));

/* Ends the job (the split layer's MPI_Abort once MPI is up, else exit status 1) after the line
 * "stasis ompi_abi: FUNCTION: WHAT" on stderr, as Open MPI's default error handler would. */
__attribute__((noreturn)) void fortran_fatal(const char *function, const char *what)
    __attribute__((visibility("hidden")));
/* Whether MPI is up (between a forwarded MPI_INIT and MPI_FINALIZE): what fortran_fatal ends. */
void fortran_mark_up(int up) __attribute__((visibility("hidden")));

#endif
