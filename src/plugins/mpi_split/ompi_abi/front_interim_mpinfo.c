/* INTERIM, until part "mpinfo" (error handlers, datatype extents in the split layer: the NWChem
 * work, branch h/nwchem) is merged; then this file goes: its two functions are theirs.
 *
 * mpi4py calls both at start-up, before any of its communication:
 * - MPI_Comm_set_errhandler(MPI_COMM_WORLD and MPI_COMM_SELF, MPI_ERRORS_RETURN): the split
 *   layer already returns every error to the caller, whatever handler is set, so the two
 *   predefined handlers are accepted and change nothing; any other fails with MPI_ERR_ARG and a
 *   line naming it.
 * - MPI_Type_get_extent of the predefined datatype of a buffer (numpy's float64: MPI_DOUBLE): a
 *   predefined datatype's lower bound is 0 and its extent its size, but for the pairs of
 *   MPI_MAXLOC and MPI_MINLOC (padded to their alignment); a datatype the program made fails
 *   with MPI_ERR_TYPE and a line naming the call (the split layer does not know extents yet).
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Errhandler;
typedef intptr_t MPI_Aint;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

enum { OMPI_ABI_ERR_TYPE = 3 };

static int refused(const char *function, const char *what, int error_class) {
  char line[256];
  int length = snprintf(line, sizeof line, "stasis ompi_abi: %s: %s\n", function, what);
  if (length > 0) (void)!write(2, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
  return error_class;
}

static int (*split_type_size)(int, int *);
__attribute__((constructor)) static void resolve_interim(void) {
  *(void **)&split_type_size = ompi_abi_split_function("MPI_Type_size");
}

/* Open MPI's predefined objects carry their symbol's name (handles.c). */
static int predefined_named(const void *handle, const char *name) {
  const OmpiAbiObject *object = handle;
  return object && object->magic == OMPI_ABI_MAGIC && object->name && strcmp(object->name, name) == 0;
}

EXPORTED int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  (void)VID(comm); /* a handle that is no communicator ends the job, naming it */
  if (predefined_named(errhandler, "ompi_mpi_errors_return") || predefined_named(errhandler, "ompi_mpi_errors_are_fatal"))
    return OMPI_ABI_SUCCESS;
  return refused(__func__, "only MPI_ERRORS_RETURN and MPI_ERRORS_ARE_FATAL are served yet", OMPI_ABI_ERR_ARG);
}
FORWARDED(MPI_Comm_set_errhandler)

EXPORTED int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent) {
  int vid = VID(datatype);
  const OmpiAbiObject *object = (const OmpiAbiObject *)datatype;
  if (!object->name || strncmp(object->name, "ompi_mpi_", 9) != 0)
    return refused(__func__, "the extent of a datatype the program made is not served yet", OMPI_ABI_ERR_TYPE);
  static const struct { const char *name; MPI_Aint extent; } pairs[] = {
      {"ompi_mpi_float_int", 8}, {"ompi_mpi_double_int", 16}, {"ompi_mpi_long_int", 16}, {"ompi_mpi_2int", 8}};
  *lb = 0;
  for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
    if (strcmp(object->name, pairs[i].name) == 0) {
      *extent = pairs[i].extent;
      return OMPI_ABI_SUCCESS;
    }
  int size = 0;
  int rc = split_type_size(vid, &size);
  if (rc == OMPI_ABI_SUCCESS) *extent = size;
  return rc;
}
FORWARDED(MPI_Type_get_extent)
