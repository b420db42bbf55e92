/* The Fortran front's persistent requests, buffered sends, completions beyond MPI_WAIT and
 * MPI_WAITALL, cancels, and Cartesian topologies (README.md), forwarded like front_fortran.c's.
 * Fortran counts request indices from 1 (C from 0); LOGICAL arguments are gfortran's 4-byte ints
 * (.TRUE. is 1), the ints C takes and gives. */
#include "fortran_front.h"

BINDING(send_init)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *request,
                   Fint *ierr) {
  MAKES(request, fortran_split.Send_init(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm), &made));
}
FORWARDED(send_init, SEND_INIT)
BINDING(ssend_init)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *request,
                    Fint *ierr) {
  MAKES(request, fortran_split.Ssend_init(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm), &made));
}
FORWARDED(ssend_init, SSEND_INIT)
BINDING(recv_init)(void *buf, Fint *count, Fint *datatype, Fint *source, Fint *tag, Fint *comm, Fint *request,
                   Fint *ierr) {
  MAKES(request, fortran_split.Recv_init(buffer(buf), *count, TYPE(datatype), *source, *tag, COMM(comm), &made));
}
FORWARDED(recv_init, RECV_INIT)
BINDING(start)(Fint *request, Fint *ierr) { THROUGH(REQUEST, request, fortran_split.Start(&id)); }
FORWARDED(start, START)
BINDING(startall)(Fint *count, Fint *requests, Fint *ierr) {
  WITH_REQUEST_IDS(count, requests, fortran_split.Startall(*count, ids));
}
FORWARDED(startall, STARTALL)
BINDING(request_free)(Fint *request, Fint *ierr) { THROUGH(REQUEST, request, fortran_split.Request_free(&id)); }
FORWARDED(request_free, REQUEST_FREE)

BINDING(bsend)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Bsend(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm));
}
FORWARDED(bsend, BSEND)
BINDING(buffer_attach)(void *buf, Fint *size, Fint *ierr) { *ierr = fortran_split.Buffer_attach(buf, *size); }
FORWARDED(buffer_attach, BUFFER_ATTACH)
/* Fortran cannot take the buffer's address back (Open MPI's binding ignores that argument too):
 * only the size. */
BINDING(buffer_detach)(void *buf, Fint *size, Fint *ierr) {
  void *address = NULL;
  (void)buf;
  *ierr = fortran_split.Buffer_detach(&address, size);
}
FORWARDED(buffer_detach, BUFFER_DETACH)

BINDING(testany)(Fint *count, Fint *requests, Fint *index, Fint *flag, Fint *status, Fint *ierr) {
  int c_flag = 0;
  WITH_REQUEST_IDS(count, requests, fortran_split.Testany(*count, ids, index, &c_flag, status_of(status)));
  *flag = c_flag != 0;
  if (*ierr == MPI_SUCCESS && *index != MPI_UNDEFINED) *index += 1;
}
FORWARDED(testany, TESTANY)
/* Waitsome, Testsome: the completed requests' indices, from 1. */
#define SOME(lower, UPPER, Name)                                                                                \
  BINDING(lower)(Fint *incount, Fint *requests, Fint *outcount, Fint *indices, Fint *statuses, Fint *ierr) {  \
    WITH_REQUEST_IDS(incount, requests,                                                                        \
                     fortran_split.Name(*incount, ids, outcount, indices, status_of(statuses)));               \
    if (*ierr == MPI_SUCCESS && *outcount != MPI_UNDEFINED)                                                    \
      for (int i = 0; i < *outcount; i++) indices[i] += 1;                                                     \
  }                                                                                                            \
  FORWARDED(lower, UPPER)
SOME(waitsome, WAITSOME, Waitsome)
SOME(testsome, TESTSOME, Testsome)
BINDING(cancel)(Fint *request, Fint *ierr) { THROUGH(REQUEST, request, fortran_split.Cancel(&id)); }
FORWARDED(cancel, CANCEL)
BINDING(test_cancelled)(Fint *status, Fint *flag, Fint *ierr) {
  int c_flag = 0;
  *ierr = fortran_split.Test_cancelled((MPI_Status *)status, &c_flag);
  *flag = c_flag != 0;
}
FORWARDED(test_cancelled, TEST_CANCELLED)

BINDING(dims_create)(Fint *nnodes, Fint *ndims, Fint *dims, Fint *ierr) {
  *ierr = fortran_split.Dims_create(*nnodes, *ndims, dims);
}
FORWARDED(dims_create, DIMS_CREATE)
BINDING(cart_create)(Fint *comm, Fint *ndims, Fint *dims, Fint *periods, Fint *reorder, Fint *cart, Fint *ierr) {
  MAKES(cart, fortran_split.Cart_create(COMM(comm), *ndims, dims, periods, *reorder, &made));
}
FORWARDED(cart_create, CART_CREATE)
BINDING(cart_sub)(Fint *comm, Fint *remain_dims, Fint *part, Fint *ierr) {
  MAKES(part, fortran_split.Cart_sub(COMM(comm), remain_dims, &made));
}
FORWARDED(cart_sub, CART_SUB)
BINDING(cartdim_get)(Fint *comm, Fint *ndims, Fint *ierr) { *ierr = fortran_split.Cartdim_get(COMM(comm), ndims); }
FORWARDED(cartdim_get, CARTDIM_GET)
BINDING(cart_get)(Fint *comm, Fint *maxdims, Fint *dims, Fint *periods, Fint *coords, Fint *ierr) {
  *ierr = fortran_split.Cart_get(COMM(comm), *maxdims, dims, periods, coords);
}
FORWARDED(cart_get, CART_GET)
BINDING(cart_rank)(Fint *comm, Fint *coords, Fint *rank, Fint *ierr) {
  *ierr = fortran_split.Cart_rank(COMM(comm), coords, rank);
}
FORWARDED(cart_rank, CART_RANK)
BINDING(cart_coords)(Fint *comm, Fint *rank, Fint *maxdims, Fint *coords, Fint *ierr) {
  *ierr = fortran_split.Cart_coords(COMM(comm), *rank, *maxdims, coords);
}
FORWARDED(cart_coords, CART_COORDS)
BINDING(cart_shift)(Fint *comm, Fint *direction, Fint *disp, Fint *source, Fint *dest, Fint *ierr) {
  *ierr = fortran_split.Cart_shift(COMM(comm), *direction, *disp, source, dest);
}
FORWARDED(cart_shift, CART_SHIFT)
BINDING(topo_test)(Fint *comm, Fint *status, Fint *ierr) { *ierr = fortran_split.Topo_test(COMM(comm), status); }
FORWARDED(topo_test, TOPO_TEST)
