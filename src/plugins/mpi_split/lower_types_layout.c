/* The lower half's part of error handlers and the derived datatypes NWChem's Global Arrays build
 * (part "mpinfo" of issue 17; ../README.md). Included by lower_half.c, the only file that sees a
 * library's mpi.h, after lower_ops_types.c (whose datatypes_down it uses); conversions only. */

static int lower_comm_set_errhandler(StasisMpiRealHandle comm, int errors_return) {
  return MPI_Comm_set_errhandler(AS(MPI_Comm, comm), errors_return ? MPI_ERRORS_RETURN : MPI_ERRORS_ARE_FATAL);
}

static int lower_type_create_hindexed(int count, const int *blocklengths, const int64_t *displacements,
                                      StasisMpiRealHandle old, StasisMpiRealHandle *made) {
  if (count < 0) return MPI_ERR_ARG;
  MPI_Datatype type;
  int rc = MPI_Type_create_hindexed(count, blocklengths, (const MPI_Aint *)displacements, AS(MPI_Datatype, old), &type);
  if (rc == MPI_SUCCESS) *made = REAL(type);
  return rc;
}

/* The order crosses as 1 (Fortran) or 0 (C): the libraries' values differ (Open MPI 1 and 0,
 * MPICH 57 and 56). */
static int lower_type_create_subarray(int ndims, const int *sizes, const int *subsizes, const int *starts,
                                      int order_fortran, StasisMpiRealHandle old, StasisMpiRealHandle *made) {
  MPI_Datatype type;
  int rc = MPI_Type_create_subarray(ndims, sizes, subsizes, starts, order_fortran ? MPI_ORDER_FORTRAN : MPI_ORDER_C,
                                    AS(MPI_Datatype, old), &type);
  if (rc == MPI_SUCCESS) *made = REAL(type);
  return rc;
}

static int lower_pack(const void *inbuf, int incount, StasisMpiRealHandle type, void *outbuf, int outsize,
                      int *position, StasisMpiRealHandle comm) {
  return MPI_Pack(inbuf, incount, AS(MPI_Datatype, type), outbuf, outsize, position, AS(MPI_Comm, comm));
}

static int lower_unpack_at(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                           StasisMpiRealHandle type, StasisMpiRealHandle comm) {
  return MPI_Unpack(inbuf, insize, position, outbuf, outcount, AS(MPI_Datatype, type), AS(MPI_Comm, comm));
}

static int lower_pack_size(int incount, StasisMpiRealHandle type, StasisMpiRealHandle comm, int *size) {
  return MPI_Pack_size(incount, AS(MPI_Datatype, type), AS(MPI_Comm, comm), size);
}

static int lower_type_get_extent(StasisMpiRealHandle type, int true_extent, int64_t *lb, int64_t *extent) {
  MPI_Aint library_lb = 0, library_extent = 0;
  int rc = true_extent ? MPI_Type_get_true_extent(AS(MPI_Datatype, type), &library_lb, &library_extent)
                       : MPI_Type_get_extent(AS(MPI_Datatype, type), &library_lb, &library_extent);
  *lb = library_lb;
  *extent = library_extent;
  return rc;
}
