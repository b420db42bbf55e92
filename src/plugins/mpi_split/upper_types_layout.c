/* The derived datatypes NWChem's Global Arrays (ARMCI over MPI) build for strided and vectored
 * one-sided transfers, and datatype extents (part "mpinfo" of issue 17; README.md). Each made
 * type gets its virtual id and a replay record (replay_types_layout.c makes it again in a fresh
 * lower half, Open MPI or MPICH). MPI_Type_indexed and _create_indexed_block are hindexed types
 * whose displacements the old type's extent turns into bytes: one record kind for the three. */
#include <stdlib.h>

#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

/* A hindexed type of `count` blocks; when `unit_displacements` is set, displacements[i] counts
 * old types' extents (MPI_Type_indexed, _create_indexed_block), else bytes. blocklengths NULL:
 * every block is `blocklength` long. */
static int hindexed(const char *name, int count, const int *blocklengths, int blocklength, const int64_t *displacements,
                    const int *unit_displacements, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  NEED_LOWER(name);
  if (count < 0 || !newtype) return MPI_ERR_ARG;
  if (stasis_mpi_ids_index(&handles.datatypes, oldtype) < 0) return not_live(name, "datatype", oldtype, MPI_ERR_TYPE);
  size_t n = (size_t)(count ? count : 1);
  int64_t *array = malloc(n * 2 * sizeof *array), *bytes = malloc(n * sizeof *bytes);
  int *lengths = malloc(n * sizeof *lengths);
  int rc = array && bytes && lengths ? MPI_SUCCESS : MPI_ERR_INTERN;
  if (rc == MPI_SUCCESS) {
    stasis_mpi_safe_point_enter(name);
    StasisMpiRealHandle old = REAL_NOW(handles.datatypes, oldtype), made = 0;
    int64_t lb = 0, extent = 1;
    int lower_rc = unit_displacements ? LOWER_CALL_IN_REGION(lower, type_get_extent, old, 0, &lb, &extent) : 0;
    for (int i = 0; lower_rc == 0 && i < count; i++) {
      lengths[i] = blocklengths ? blocklengths[i] : blocklength;
      bytes[i] = unit_displacements ? (int64_t)unit_displacements[i] * extent : displacements[i];
      array[2 * i] = lengths[i];
      array[2 * i + 1] = bytes[i];
    }
    if (lower_rc == 0)
      lower_rc = LOWER_CALL_IN_REGION(lower, type_create_hindexed, count, lengths, bytes, old, &made);
    rc = made_with_array(name, &handles.datatypes, STASIS_MPI_REPLAY_TYPE_HINDEXED, oldtype, count, array,
                         (uint32_t)count * 2, made, lower_rc, newtype);
    stasis_mpi_safe_point_leave();
  }
  free(array);
  free(bytes);
  free(lengths);
  return rc;
}

_Static_assert(sizeof(MPI_Aint) == sizeof(int64_t), "MPI_Aint of 64 bits");
API int MPI_Type_create_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[],
                                 MPI_Datatype oldtype, MPI_Datatype *newtype) {
  return hindexed("MPI_Type_create_hindexed", count, blocklengths, 0, (const int64_t *)displacements, NULL, oldtype,
                  newtype);
}

API int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[], MPI_Datatype oldtype,
                         MPI_Datatype *newtype) {
  return hindexed("MPI_Type_indexed", count, blocklengths, 0, NULL, displacements, oldtype, newtype);
}

API int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[], MPI_Datatype oldtype,
                                      MPI_Datatype *newtype) {
  return hindexed("MPI_Type_create_indexed_block", count, NULL, blocklength, NULL, displacements, oldtype, newtype);
}

API int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[], int order,
                                 MPI_Datatype oldtype, MPI_Datatype *newtype) {
  const char *name = "MPI_Type_create_subarray";
  NEED_LOWER(name);
  if (ndims < 1 || (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) || !newtype) return MPI_ERR_ARG;
  if (stasis_mpi_ids_index(&handles.datatypes, oldtype) < 0) return not_live(name, "datatype", oldtype, MPI_ERR_TYPE);
  int64_t *array = malloc(((size_t)ndims * 3 + 1) * sizeof *array);
  if (!array) return MPI_ERR_INTERN;
  for (int i = 0; i < ndims; i++) {
    array[i] = sizes[i];
    array[ndims + i] = subsizes[i];
    array[2 * ndims + i] = starts[i];
  }
  array[3 * ndims] = order == MPI_ORDER_FORTRAN;
  StasisMpiRealHandle made = 0;
  stasis_mpi_safe_point_enter(name);
  int lower_rc = LOWER_CALL_IN_REGION(lower, type_create_subarray, ndims, sizes, subsizes, starts,
                                      order == MPI_ORDER_FORTRAN, REAL_NOW(handles.datatypes, oldtype), &made);
  int rc = made_with_array(name, &handles.datatypes, STASIS_MPI_REPLAY_TYPE_SUBARRAY, oldtype, ndims, array,
                           (uint32_t)ndims * 3 + 1, made, lower_rc, newtype);
  stasis_mpi_safe_point_leave();
  free(array);
  return rc;
}

static int get_extent(const char *name, int true_extent, MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  NEED_LOWER(name);
  if (stasis_mpi_ids_index(&handles.datatypes, datatype) < 0) return not_live(name, "datatype", datatype, MPI_ERR_TYPE);
  int64_t library_lb = 0, library_extent = 0;
  int rc = library_error(LOWER_CALL(lower, type_get_extent, REAL_NOW(handles.datatypes, datatype), true_extent,
                                    &library_lb, &library_extent));
  if (rc == MPI_SUCCESS) {
    *lb = library_lb;
    *extent = library_extent;
  }
  return rc;
}

API int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  return get_extent("MPI_Type_get_extent", 0, datatype, lb, extent);
}

/* The predefined C type of that class and size, as Open MPI answers from C. */
API int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype) {
  static const struct {
    int typeclass, size;
    MPI_Datatype type;
  } matches[] = {{MPI_TYPECLASS_INTEGER, 1, MPI_INT8_T},  {MPI_TYPECLASS_INTEGER, 2, MPI_INT16_T},
                 {MPI_TYPECLASS_INTEGER, 4, MPI_INT},     {MPI_TYPECLASS_INTEGER, 8, MPI_LONG},
                 {MPI_TYPECLASS_REAL, 4, MPI_FLOAT},      {MPI_TYPECLASS_REAL, 8, MPI_DOUBLE},
                 {MPI_TYPECLASS_REAL, 16, MPI_LONG_DOUBLE}};
  if (!datatype) return MPI_ERR_ARG;
  for (size_t i = 0; i < sizeof matches / sizeof matches[0]; i++)
    if (matches[i].typeclass == typeclass && matches[i].size == size) {
      *datatype = matches[i].type;
      return MPI_SUCCESS;
    }
  complain("MPI_Type_match_size", "no datatype of that class and size in split mode (complex types are not offered)");
  return MPI_ERR_ARG;
}

API int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
                 MPI_Comm comm) {
  NEED_LOWER("MPI_Pack");
  if (stasis_mpi_ids_index(&handles.datatypes, datatype) < 0) return not_live("MPI_Pack", "datatype", datatype, MPI_ERR_TYPE);
  if (stasis_mpi_ids_index(&handles.comms, comm) < 0) return not_live("MPI_Pack", "communicator", comm, MPI_ERR_COMM);
  return library_error(LOWER_CALL(lower, pack, inbuf, incount, REAL_NOW(handles.datatypes, datatype), outbuf, outsize,
                                  position, REAL_NOW(handles.comms, comm)));
}

API int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,
                   MPI_Comm comm) {
  NEED_LOWER("MPI_Unpack");
  if (stasis_mpi_ids_index(&handles.datatypes, datatype) < 0)
    return not_live("MPI_Unpack", "datatype", datatype, MPI_ERR_TYPE);
  if (stasis_mpi_ids_index(&handles.comms, comm) < 0) return not_live("MPI_Unpack", "communicator", comm, MPI_ERR_COMM);
  return library_error(LOWER_CALL(lower, unpack_at, inbuf, insize, position, outbuf, outcount,
                                  REAL_NOW(handles.datatypes, datatype), REAL_NOW(handles.comms, comm)));
}

API int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size) {
  NEED_LOWER("MPI_Pack_size");
  if (stasis_mpi_ids_index(&handles.datatypes, datatype) < 0)
    return not_live("MPI_Pack_size", "datatype", datatype, MPI_ERR_TYPE);
  if (stasis_mpi_ids_index(&handles.comms, comm) < 0) return not_live("MPI_Pack_size", "communicator", comm, MPI_ERR_COMM);
  return library_error(
      LOWER_CALL(lower, pack_size, incount, REAL_NOW(handles.datatypes, datatype), REAL_NOW(handles.comms, comm), size));
}

API int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent) {
  return get_extent("MPI_Type_get_true_extent", 1, datatype, true_lb, true_extent);
}
