/* What the Fortran front's binding files (front_fortran*.c) share: Open MPI's names for a
 * binding, the handles' translation around a call, the sentinels' meaning. */
#ifndef STASIS_OMPI_ABI_FORTRAN_FRONT_H
#define STASIS_OMPI_ABI_FORTRAN_FRONT_H

#include <stdlib.h>

#include "abi/mpi.h"
#include "fortran_handles.h"
#include "fortran_split.h"

#define EXPORTED __attribute__((visibility("default")))
#define NAMED(lower, name) \
  extern __typeof__(ompi_##lower##_f) name EXPORTED __attribute__((alias("ompi_" #lower "_f")));
#define FORWARDED(lower, UPPER)                                                           \
  NAMED(lower, mpi_##lower) NAMED(lower, mpi_##lower##_) NAMED(lower, mpi_##lower##__)  \
  NAMED(lower, pmpi_##lower) NAMED(lower, pmpi_##lower##_) NAMED(lower, pmpi_##lower##__) \
  NAMED(lower, MPI_##UPPER) NAMED(lower, PMPI_##UPPER)
#define BINDING(lower) EXPORTED void ompi_##lower##_f

typedef int Fint; /* Open MPI's MPI_Fint on x86-64: INTEGER */

/* Open MPI's Fortran status is its C MPI_Status seen as 6 INTEGERs (MPI_STATUS_SIZE), which is
 * also the split layer's layout (handles.c asserts it), so a status passes through. */
_Static_assert(sizeof(MPI_Status) == 6 * sizeof(Fint), "Fortran's MPI_STATUS_SIZE is 6");

/* mpif.h's sentinels: common blocks whose addresses stand for MPI_IN_PLACE, MPI_BOTTOM and the
 * ignored statuses (defined in front_fortran.c). */
extern Fint mpi_fortran_in_place_, mpi_fortran_bottom_, mpi_fortran_status_ignore_[6], mpi_fortran_statuses_ignore_[6];

static inline void *buffer(void *address) {
  if (address == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (address == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return address;
}
static inline MPI_Status *status_of(Fint *status) {
  return status == mpi_fortran_status_ignore_ || status == mpi_fortran_statuses_ignore_ ? MPI_STATUS_IGNORE
                                                                                         : (MPI_Status *)status;
}

#define COMM(h) ompi_fortran_vid(__func__, *(h), STASIS_MPI_KIND_COMM, fortran_fatal)
#define TYPE(h) ompi_fortran_vid(__func__, *(h), STASIS_MPI_KIND_DATATYPE, fortran_fatal)
#define OP(h) ompi_fortran_vid(__func__, *(h), STASIS_MPI_KIND_OP, fortran_fatal)
#define GROUP(h) ompi_fortran_vid(__func__, *(h), STASIS_MPI_KIND_GROUP, fortran_fatal)
#define REQUEST(h) ompi_fortran_vid(__func__, *(h), STASIS_MPI_KIND_REQUEST, fortran_fatal)
/* Runs `call` on the id of the handle at `handle_pointer` (in `id`), then writes the handle of
 * the id it leaves back (a free leaves the null object, a wait MPI_REQUEST_NULL). */
#define THROUGH(KIND, handle_pointer, call) \
  do {                                      \
    int id = KIND(handle_pointer);          \
    *ierr = (call);                         \
    *(handle_pointer) = ompi_fortran_handle(id); \
  } while (0)
/* Runs `call`, which makes an object whose id it leaves in `made`; its handle on success. */
#define MAKES(out, call)                                    \
  do {                                                      \
    int made = 0;                                           \
    *ierr = (call);                                         \
    if (*ierr == MPI_SUCCESS) *(out) = ompi_fortran_handle(made); \
  } while (0)

/* The program's requests as ids around `call` on them (`ids`): on the stack for the usual few. */
#define WITH_REQUEST_IDS(count, requests, call)                                                  \
  do {                                                                                           \
    if (*(count) < 0) {                                                                          \
      *ierr = MPI_ERR_ARG;                                                                       \
      return;                                                                                    \
    }                                                                                            \
    int on_stack[64], *ids = *(count) <= 64 ? on_stack : malloc((size_t)*(count) * sizeof *ids); \
    if (!ids) fortran_fatal(__func__, "no memory for the requests' ids");                        \
    for (int i = 0; i < *(count); i++) ids[i] = REQUEST(&(requests)[i]);                         \
    *ierr = (call);                                                                              \
    for (int i = 0; i < *(count); i++) (requests)[i] = ompi_fortran_handle(ids[i]);              \
    if (ids != on_stack) free(ids);                                                              \
  } while (0)
#endif
