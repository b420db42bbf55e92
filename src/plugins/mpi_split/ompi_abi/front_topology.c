/* The Open MPI ABI front's Cartesian topologies and MPI_Wtick (../upper_topology.c), and the
 * completion of one of several requests and MPI_Cancel (../upper_completion.c): Open MPI's
 * signatures forwarding to the split layer, as front.c does. Their own table of the split layer's
 * functions (resolved as handles.c resolves ompi_abi_split) keeps this part in a file of its own.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdlib.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Request;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

static struct {
  int (*Dims_create)(int, int, int[]);
  int (*Cart_create)(int, int, const int[], const int[], int, int *);
  int (*Cart_sub)(int, const int[], int *);
  int (*Cartdim_get)(int, int *);
  int (*Cart_get)(int, int, int[], int[], int[]);
  int (*Cart_rank)(int, const int[], int *);
  int (*Cart_coords)(int, int, int, int[]);
  int (*Cart_shift)(int, int, int, int *, int *);
  int (*Topo_test)(int, int *);
  double (*Wtick)(void);
  int (*Waitany)(int, int[], int *, MPI_Status *);
  int (*Testany)(int, int[], int *, int *, MPI_Status *);
  int (*Waitsome)(int, int[], int *, int[], MPI_Status[]);
  int (*Testsome)(int, int[], int *, int[], MPI_Status[]);
  int (*Cancel)(int *);
  int (*Test_cancelled)(const MPI_Status *, int *);
} split;

#define RESOLVE(name) OMPI_ABI_RESOLVE(split, name)

__attribute__((constructor)) static void resolve_topology(void) {
  RESOLVE(Dims_create); RESOLVE(Cart_create); RESOLVE(Cart_sub); RESOLVE(Cartdim_get); RESOLVE(Cart_get);
  RESOLVE(Cart_rank); RESOLVE(Cart_coords); RESOLVE(Cart_shift); RESOLVE(Topo_test); RESOLVE(Wtick);
  RESOLVE(Waitany); RESOLVE(Testany); RESOLVE(Waitsome); RESOLVE(Testsome); RESOLVE(Cancel); RESOLVE(Test_cancelled);
}

/* After a call that made a communicator (`made`: its id, MPI_COMM_NULL's for a rank outside the
 * grid): its handle on success. */
static int made_comm(const char *function, MPI_Comm *out, int rc, int made) {
  if (rc == OMPI_ABI_SUCCESS) *out = ompi_abi_handle(function, made);
  return rc;
}

EXPORTED int MPI_Dims_create(int nnodes, int ndims, int dims[]) { return CLASS(split.Dims_create(nnodes, ndims, dims)); }
FORWARDED(MPI_Dims_create)
EXPORTED int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                             MPI_Comm *comm_cart) {
  int made = 0;
  int rc = CLASS(split.Cart_create(VID(comm), ndims, dims, periods, reorder, &made));
  return made_comm(__func__, comm_cart, rc, made);
}
FORWARDED(MPI_Cart_create)
EXPORTED int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  int made = 0;
  int rc = CLASS(split.Cart_sub(VID(comm), remain_dims, &made));
  return made_comm(__func__, newcomm, rc, made);
}
FORWARDED(MPI_Cart_sub)
EXPORTED int MPI_Cartdim_get(MPI_Comm comm, int *ndims) { return CLASS(split.Cartdim_get(VID(comm), ndims)); }
FORWARDED(MPI_Cartdim_get)
EXPORTED int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
  return CLASS(split.Cart_get(VID(comm), maxdims, dims, periods, coords));
}
FORWARDED(MPI_Cart_get)
EXPORTED int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank) {
  return CLASS(split.Cart_rank(VID(comm), coords, rank));
}
FORWARDED(MPI_Cart_rank)
EXPORTED int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
  return CLASS(split.Cart_coords(VID(comm), rank, maxdims, coords));
}
FORWARDED(MPI_Cart_coords)
EXPORTED int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest) {
  return CLASS(split.Cart_shift(VID(comm), direction, disp, rank_source, rank_dest));
}
FORWARDED(MPI_Cart_shift)
EXPORTED int MPI_Topo_test(MPI_Comm comm, int *status) { return CLASS(split.Topo_test(VID(comm), status)); }
FORWARDED(MPI_Topo_test)
EXPORTED double MPI_Wtick(void) { return split.Wtick(); }
FORWARDED(MPI_Wtick)

EXPORTED int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  WITH_REQUEST_IDS(count, requests, STATUSES_FILLED(status, 1, split.Waitany(count, ids, index, status)));
}
FORWARDED(MPI_Waitany)
EXPORTED int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  WITH_REQUEST_IDS(count, requests, STATUSES_FILLED(status, *flag ? 1 : 0, split.Testany(count, ids, index, flag, status)));
}
FORWARDED(MPI_Testany)
/* How many statuses a Waitsome or Testsome filled: *outcount when it is one (not MPI_UNDEFINED). */
#define SOME_COMPLETED(incount, outcount) (*(outcount) >= 0 && *(outcount) <= (incount) ? *(outcount) : 0)
EXPORTED int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  WITH_REQUEST_IDS(incount, requests, STATUSES_FILLED(statuses, SOME_COMPLETED(incount, outcount), split.Waitsome(incount, ids, outcount, indices, statuses)));
}
FORWARDED(MPI_Waitsome)
EXPORTED int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) {
  WITH_REQUEST_IDS(incount, requests, STATUSES_FILLED(statuses, SOME_COMPLETED(incount, outcount), split.Testsome(incount, ids, outcount, indices, statuses)));
}
FORWARDED(MPI_Testsome)
EXPORTED int MPI_Cancel(MPI_Request *request) {
  int vid = VID(*request);
  return CLASS(split.Cancel(&vid)); /* the request stays: a wait or test completes it */
}
FORWARDED(MPI_Cancel)
EXPORTED int MPI_Test_cancelled(const MPI_Status *status, int *flag) { return CLASS(split.Test_cancelled(status, flag)); }
FORWARDED(MPI_Test_cancelled)
