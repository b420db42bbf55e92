/* The Open MPI ABI front's error handlers, info objects, thread level and the derived datatypes
 * of part "mpinfo" (../upper_errhandlers.c, ../upper_info.c, ../upper_types_layout.c): Open
 * MPI's signatures forwarding to the split layer, as front.c does, with a table of their own.
 * MPI_ERRORS_RETURN and _ARE_FATAL are Open MPI's exported objects; an info handle is a slot of
 * its own kind like the other made objects; MPI_ORDER_C/_FORTRAN are Open MPI's values, which
 * the split layer uses.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdint.h>
#include <stdlib.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Errhandler, MPI_Info;
typedef intptr_t MPI_Aint;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

static struct {
  int (*Comm_set_errhandler)(int, int);
  int (*Query_thread)(int *);
  int (*Info_create)(int *);
  int (*Info_set)(int, const char *, const char *);
  int (*Info_get)(int, const char *, int, char *, int *);
  int (*Info_get_valuelen)(int, const char *, int *, int *);
  int (*Info_get_nkeys)(int, int *);
  int (*Info_get_nthkey)(int, int, char *);
  int (*Info_delete)(int, const char *);
  int (*Info_dup)(int, int *);
  int (*Info_free)(int *);
  int (*Type_create_hindexed)(int, const int[], const MPI_Aint[], int, int *);
  int (*Type_indexed)(int, const int[], const int[], int, int *);
  int (*Type_create_indexed_block)(int, int, const int[], int, int *);
  int (*Type_create_subarray)(int, const int[], const int[], const int[], int, int, int *);
  int (*Type_get_extent)(int, MPI_Aint *, MPI_Aint *);
  int (*Type_get_true_extent)(int, MPI_Aint *, MPI_Aint *);
  int (*Type_match_size)(int, int, int *);
  int (*Pack)(const void *, int, int, void *, int, int *, int);
  int (*Unpack)(const void *, int, int *, void *, int, int, int);
  int (*Pack_size)(int, int, int, int *);
} split;

__attribute__((constructor)) static void resolve_info(void) {
  OMPI_ABI_RESOLVE(split, Comm_set_errhandler);
  OMPI_ABI_RESOLVE(split, Query_thread);
  OMPI_ABI_RESOLVE(split, Info_create);
  OMPI_ABI_RESOLVE(split, Info_set);
  OMPI_ABI_RESOLVE(split, Info_get);
  OMPI_ABI_RESOLVE(split, Info_get_valuelen);
  OMPI_ABI_RESOLVE(split, Info_get_nkeys);
  OMPI_ABI_RESOLVE(split, Info_get_nthkey);
  OMPI_ABI_RESOLVE(split, Info_delete);
  OMPI_ABI_RESOLVE(split, Info_dup);
  OMPI_ABI_RESOLVE(split, Info_free);
  OMPI_ABI_RESOLVE(split, Type_create_hindexed);
  OMPI_ABI_RESOLVE(split, Type_indexed);
  OMPI_ABI_RESOLVE(split, Type_create_indexed_block);
  OMPI_ABI_RESOLVE(split, Type_create_subarray);
  OMPI_ABI_RESOLVE(split, Type_get_extent);
  OMPI_ABI_RESOLVE(split, Type_get_true_extent);
  OMPI_ABI_RESOLVE(split, Type_match_size);
  OMPI_ABI_RESOLVE(split, Pack);
  OMPI_ABI_RESOLVE(split, Unpack);
  OMPI_ABI_RESOLVE(split, Pack_size);
}

EXPORTED int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  return CLASS(split.Comm_set_errhandler(VID(comm), VID(errhandler)));
}
FORWARDED(MPI_Comm_set_errhandler)
EXPORTED int MPI_Query_thread(int *provided) { return CLASS(split.Query_thread(provided)); }
FORWARDED(MPI_Query_thread)

EXPORTED int MPI_Info_create(MPI_Info *info) { MAKES(info, split.Info_create(&made)); }
FORWARDED(MPI_Info_create)
EXPORTED int MPI_Info_set(MPI_Info info, const char *key, const char *value) {
  return CLASS(split.Info_set(VID(info), key, value));
}
FORWARDED(MPI_Info_set)
EXPORTED int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag) {
  return CLASS(split.Info_get(VID(info), key, valuelen, value, flag));
}
FORWARDED(MPI_Info_get)
EXPORTED int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag) {
  return CLASS(split.Info_get_valuelen(VID(info), key, valuelen, flag));
}
FORWARDED(MPI_Info_get_valuelen)
EXPORTED int MPI_Info_get_nkeys(MPI_Info info, int *nkeys) { return CLASS(split.Info_get_nkeys(VID(info), nkeys)); }
FORWARDED(MPI_Info_get_nkeys)
EXPORTED int MPI_Info_get_nthkey(MPI_Info info, int n, char *key) { return CLASS(split.Info_get_nthkey(VID(info), n, key)); }
FORWARDED(MPI_Info_get_nthkey)
EXPORTED int MPI_Info_delete(MPI_Info info, const char *key) { return CLASS(split.Info_delete(VID(info), key)); }
FORWARDED(MPI_Info_delete)
EXPORTED int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo) { MAKES(newinfo, split.Info_dup(VID(info), &made)); }
FORWARDED(MPI_Info_dup)
EXPORTED int MPI_Info_free(MPI_Info *info) { THROUGH(info, split.Info_free(&vid)); }
FORWARDED(MPI_Info_free)

EXPORTED int MPI_Type_create_hindexed(int count, const int blocklengths[], const MPI_Aint displacements[],
                                      MPI_Datatype oldtype, MPI_Datatype *newtype) {
  MAKES(newtype, split.Type_create_hindexed(count, blocklengths, displacements, VID(oldtype), &made));
}
FORWARDED(MPI_Type_create_hindexed)
EXPORTED int MPI_Type_indexed(int count, const int blocklengths[], const int displacements[], MPI_Datatype oldtype,
                              MPI_Datatype *newtype) {
  MAKES(newtype, split.Type_indexed(count, blocklengths, displacements, VID(oldtype), &made));
}
FORWARDED(MPI_Type_indexed)
EXPORTED int MPI_Type_create_indexed_block(int count, int blocklength, const int displacements[],
                                           MPI_Datatype oldtype, MPI_Datatype *newtype) {
  MAKES(newtype, split.Type_create_indexed_block(count, blocklength, displacements, VID(oldtype), &made));
}
FORWARDED(MPI_Type_create_indexed_block)
EXPORTED int MPI_Type_create_subarray(int ndims, const int sizes[], const int subsizes[], const int starts[],
                                      int order, MPI_Datatype oldtype, MPI_Datatype *newtype) {
  MAKES(newtype, split.Type_create_subarray(ndims, sizes, subsizes, starts, order, VID(oldtype), &made));
}
FORWARDED(MPI_Type_create_subarray)
EXPORTED int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  return CLASS(split.Type_get_extent(VID(datatype), lb, extent));
}
FORWARDED(MPI_Type_get_extent)
EXPORTED int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent) {
  return CLASS(split.Type_get_true_extent(VID(datatype), true_lb, true_extent));
}
FORWARDED(MPI_Type_get_true_extent)
EXPORTED int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype) {
  MAKES(datatype, split.Type_match_size(typeclass, size, &made));
}
FORWARDED(MPI_Type_match_size)
EXPORTED int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
                      MPI_Comm comm) {
  return CLASS(split.Pack(inbuf, incount, VID(datatype), outbuf, outsize, position, VID(comm)));
}
FORWARDED(MPI_Pack)
EXPORTED int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                        MPI_Datatype datatype, MPI_Comm comm) {
  return CLASS(split.Unpack(inbuf, insize, position, outbuf, outcount, VID(datatype), VID(comm)));
}
FORWARDED(MPI_Unpack)
EXPORTED int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size) {
  return CLASS(split.Pack_size(incount, VID(datatype), VID(comm), size));
}
FORWARDED(MPI_Pack_size)
