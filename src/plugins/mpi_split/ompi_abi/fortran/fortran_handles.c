/* Open MPI's Fortran numbers for the predefined objects and Stasis's virtual ids, both ways
 * (fortran_handles.h). The table is fortran_predefined.def, generated from Open MPI's
 * mpif-handles.h by generate_fortran_lists.py. */
#include "fortran_handles.h"

#include <stdint.h>
#include <stdio.h>

#include "abi/mpi.h"

/* Open MPI 4.1's numbers stay below this (mpif-handles.h: MPI_COUNT is 72). */
enum { NUMBER_CAPACITY = 128, KIND_CAPACITY = STASIS_MPI_KIND_REQUEST + 1, INDEX_CAPACITY = 64 };

#define STASIS_VID_OF(kind, index) STASIS_MPI_VID(STASIS_MPI_KIND_##kind, STASIS_MPI_INDEX_##index)

/* Number -> id, per kind (a number means a communicator or a datatype by where it is passed). */
static const int number_to_vid[KIND_CAPACITY][NUMBER_CAPACITY] = {
#define X(name, number, kind, index) [STASIS_MPI_KIND_##kind][number] = STASIS_VID_OF(kind, index),
#include "fortran_predefined.def"
#undef X
};

/* Id -> number, for the predefined ids: the first row of the id (the .def lists the object's
 * own name first: MPI_INT (39) for Stasis's MPI_INT, never MPI_LOGICAL). Written by the first
 * lookup; 0 is a valid number, so a slot holds number + 1. */
static int vid_to_number_plus_one[KIND_CAPACITY][INDEX_CAPACITY];

static void fill_vid_to_number(void) {
#define X(name, number, kind, index)                                                                   \
  if (!vid_to_number_plus_one[STASIS_MPI_KIND_##kind][STASIS_MPI_INDEX_##index])                      \
    vid_to_number_plus_one[STASIS_MPI_KIND_##kind][STASIS_MPI_INDEX_##index] = (number) + 1;
#include "fortran_predefined.def"
#undef X
}

static const char *kind_name(int kind) {
  switch (kind) {
    case STASIS_MPI_KIND_COMM: return "communicator";
    case STASIS_MPI_KIND_DATATYPE: return "datatype";
    case STASIS_MPI_KIND_OP: return "op";
    case STASIS_MPI_KIND_GROUP: return "group";
    case STASIS_MPI_KIND_REQUEST: return "request";
    default: return "object";
  }
}

int ompi_fortran_vid(const char *function, int handle, int kind, void (*fatal)(const char *, const char *)) {
  char what[160];
  if (handle >= 0 && handle < NUMBER_CAPACITY) {
    int vid = number_to_vid[kind][handle];
    if (vid) return vid;
    snprintf(what, sizeof what, "Open MPI's Fortran %s %d has no equivalent in split mode yet", kind_name(kind), handle);
  } else if (((uint32_t)handle & 0xff000000u) == STASIS_MPI_VID_TAG && (((uint32_t)handle >> 16) & 0xff) == (uint32_t)kind) {
    return handle; /* a made object's id; the split layer checks that it is live */
  } else {
    snprintf(what, sizeof what, "%d (0x%x) is not a Fortran %s handle of the split mode", handle, (unsigned)handle,
             kind_name(kind));
  }
  fatal(function, what);
  return 0;
}

int ompi_fortran_handle(int vid) {
  uint32_t kind = ((uint32_t)vid >> 16) & 0xff, index = (uint32_t)vid & 0xffff;
  if (((uint32_t)vid & 0xff000000u) != STASIS_MPI_VID_TAG || kind >= KIND_CAPACITY || index >= INDEX_CAPACITY)
    return vid;
  if (!vid_to_number_plus_one[STASIS_MPI_KIND_COMM][STASIS_MPI_INDEX_COMM_WORLD]) fill_vid_to_number();
  int number = vid_to_number_plus_one[kind][index];
  return number ? number - 1 : vid;
}
