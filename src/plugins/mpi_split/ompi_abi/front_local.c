/* The Open MPI ABI front's functions that need no MPI library (README.md): answered here, the
 * same under any lower half and across restarts. Fortran handles (MPI_*_c2f, MPI_*_f2c) are the
 * Fortran front's (fortran/fortran_handles.h): Open MPI's mpif.h number for a predefined object,
 * the virtual id for a made one; ints that stay the same across a restart, whatever the library. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "abi/stasis_mpi_predefined.h"
#include "fortran/fortran_handles.h"
#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Op, MPI_Group, MPI_Request;
typedef int MPI_Fint;
typedef long MPI_Aint;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

#define FORTRAN_HANDLES(Name, Handle, kind)                                                               \
  EXPORTED MPI_Fint MPI_##Name##_c2f(Handle handle) { return ompi_fortran_handle(ompi_abi_vid(__func__, handle)); } \
  FORWARDED(MPI_##Name##_c2f)                                                                                 \
  EXPORTED Handle MPI_##Name##_f2c(MPI_Fint handle) {                                                         \
    return ompi_abi_handle_of(__func__, ompi_fortran_vid(__func__, handle, kind, ompi_abi_fatal), kind);     \
  }                                                                                                           \
  FORWARDED(MPI_##Name##_f2c)
FORTRAN_HANDLES(Comm, MPI_Comm, STASIS_MPI_KIND_COMM)
FORTRAN_HANDLES(Type, MPI_Datatype, STASIS_MPI_KIND_DATATYPE)
FORTRAN_HANDLES(Group, MPI_Group, STASIS_MPI_KIND_GROUP)
FORTRAN_HANDLES(Request, MPI_Request, STASIS_MPI_KIND_REQUEST)
FORTRAN_HANDLES(Op, MPI_Op, STASIS_MPI_KIND_OP)

/* One flat address space: an address is the pointer's value, as in every MPI on x86-64. */
EXPORTED int MPI_Get_address(const void *location, MPI_Aint *address) {
  *address = (MPI_Aint)(intptr_t)location;
  return OMPI_ABI_SUCCESS;
}
FORWARDED(MPI_Get_address)

/* A code the program holds is one of Open MPI's classes the front returns (error_classes.def,
 * converted from the split layer's by CLASS): the code is its class, its text Open MPI's. */
EXPORTED int MPI_Error_class(int code, int *error_class) {
  if (!ompi_abi_error_text(code)) return OMPI_ABI_ERR_ARG;
  *error_class = code;
  return OMPI_ABI_SUCCESS;
}
FORWARDED(MPI_Error_class)
EXPORTED int MPI_Error_string(int code, char *text, int *length) {
  const char *known = ompi_abi_error_text(code);
  if (!known) return OMPI_ABI_ERR_ARG;
  /* The caller's buffer holds MPI_MAX_ERROR_STRING (256) characters. */
  *length = snprintf(text, 256, "%s", known);
  return OMPI_ABI_SUCCESS;
}
FORWARDED(MPI_Error_string)
