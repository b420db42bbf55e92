/* The Open MPI ABI front's handles (README.md): Open MPI's predefined objects as data symbols of
 * Open MPI's sizes, a slot per virtual id for the objects a program makes, the translation both
 * ways, and the split layer's functions found once in libstasis_mpi.so.
 *
 * A handle points at an OmpiAbiObject holding its virtual id, so a lookup is one load and two
 * compares, and everything lives in this library's static storage: upper-half memory, saved with
 * the program and mapped back at the same address by a restart, so every handle the program
 * holds stays valid whichever MPI library the fresh lower half runs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "abi/mpi.h"
#include "ompi_abi.h"
#include "upper_state.h" /* the split layer's table capacities */

/* Open MPI 4.1's values that the front passes through unconverted (its mpi.h). */
_Static_assert(MPI_ANY_SOURCE == -1 && MPI_PROC_NULL == -2 && MPI_ANY_TAG == -1, "Open MPI's ranks and tags");
_Static_assert(MPI_UNDEFINED == -32766, "Open MPI's MPI_UNDEFINED");
_Static_assert(MPI_IN_PLACE == (void *)1 && MPI_BOTTOM == (void *)0, "Open MPI's buffer addresses");
_Static_assert(MPI_STATUS_IGNORE == (void *)0 && MPI_STATUSES_IGNORE == (void *)0, "Open MPI's ignored statuses");
_Static_assert(MPI_THREAD_SINGLE == 0 && MPI_THREAD_MULTIPLE == 3, "Open MPI's thread levels");
_Static_assert(MPI_IDENT == 0 && MPI_UNEQUAL == 3, "Open MPI's comparison results");
/* Error classes are converted (error_classes.def): the front's own codes are Open MPI's values
 * there, which tests/not_forwarded.c asserts against Open MPI's mpi.h. */
#define X(name, ompi_value, text) OMPI_VALUE_OF_##name = ompi_value,
enum {
#include "error_classes.def"
};
#undef X
_Static_assert(OMPI_ABI_SUCCESS == OMPI_VALUE_OF_SUCCESS && OMPI_ABI_ERR_ARG == OMPI_VALUE_OF_ERR_ARG &&
                   OMPI_ABI_ERR_OTHER == OMPI_VALUE_OF_ERR_OTHER &&
                   OMPI_ABI_ERR_UNSUPPORTED_OPERATION == OMPI_VALUE_OF_ERR_UNSUPPORTED_OPERATION,
               "the front's own error classes are the table's");
/* mpirma: Open MPI's one-sided values (front_rma.c passes them through). */
_Static_assert(MPI_LOCK_EXCLUSIVE == 1 && MPI_LOCK_SHARED == 2 && MPI_MODE_NOCHECK == 1 && MPI_MODE_NOPRECEDE == 2 &&
                   MPI_MODE_NOPUT == 4 && MPI_MODE_NOSTORE == 8 && MPI_MODE_NOSUCCEED == 16 && MPI_WIN_BASE == 7 &&
                   MPI_WIN_MODEL == 11 && MPI_WIN_FLAVOR_CREATE == 1 && MPI_WIN_UNIFIED == 0,
               "Open MPI's one-sided values");
/* Open MPI's MPI_Status: three ints, _cancelled, size_t _ucount. */
_Static_assert(sizeof(MPI_Status) == 24 && offsetof(MPI_Status, MPI_ERROR) == 8 &&
                   offsetof(MPI_Status, stasis_cancelled) == 12 && offsetof(MPI_Status, stasis_bytes) == 16,
               "Open MPI's MPI_Status layout");

#define EXPORTED __attribute__((visibility("default")))

/* Open MPI's predefined objects (predefined.def): each a data symbol of libmpi.so.40's size,
 * whose first bytes are the object the front reads. */
#define STASIS_VID_OF(kind, index) STASIS_MPI_VID(STASIS_MPI_KIND_##kind, STASIS_MPI_INDEX_##index)
#define X(symbol, size, kind, index)                                                                  \
  EXPORTED union {                                                                                   \
    OmpiAbiObject object;                                                                            \
    char bytes[size];                                                                                \
  } symbol = {{OMPI_ABI_MAGIC, PREDEFINED_##kind(index), #symbol}};
#define PREDEFINED_0(index) 0
#define PREDEFINED_COMM(index) STASIS_VID_OF(COMM, index)
#define PREDEFINED_DATATYPE(index) STASIS_VID_OF(DATATYPE, index)
#define PREDEFINED_OP(index) STASIS_VID_OF(OP, index)
#define PREDEFINED_GROUP(index) STASIS_VID_OF(GROUP, index)
#define PREDEFINED_REQUEST(index) STASIS_VID_OF(REQUEST, index)
#define PREDEFINED_WIN(index) STASIS_VID_OF(WIN, index)
#define PREDEFINED_ERRHANDLER(index) STASIS_VID_OF(ERRHANDLER, index)
#define PREDEFINED_INFO(index) STASIS_VID_OF(INFO, index)
/* An object smaller than the front's (MPI_F_STATUS_IGNORE: a pointer for Fortran, which the
 * front does not serve): only its size. */
#define SMALL(symbol, size) EXPORTED char symbol[size];
#include "predefined.def"
#undef X
#undef SMALL

/* Where each predefined id of Stasis's interface sends the program: the address of Open MPI's
 * object for it. Taken through the GOT, so a copy the program's executable made of the object
 * (a copy relocation) is the address handed out, the one the program compares with. */
enum { KIND_COUNT = STASIS_MPI_KIND_INFO + 1, PREDEFINED_CAPACITY = 64 };
static OmpiAbiObject *predefined[KIND_COUNT][PREDEFINED_CAPACITY];
static void predefined_init(void) {
#define X(symbol, size, kind, index) PLACE_##kind(symbol, index)
#define PLACE_0(symbol, index)
#define PLACE(kind, symbol, index) predefined[STASIS_MPI_KIND_##kind][STASIS_MPI_INDEX_##index] = &symbol.object;
#define PLACE_COMM(symbol, index) PLACE(COMM, symbol, index)
#define PLACE_DATATYPE(symbol, index) PLACE(DATATYPE, symbol, index)
#define PLACE_OP(symbol, index) PLACE(OP, symbol, index)
#define PLACE_GROUP(symbol, index) PLACE(GROUP, symbol, index)
#define PLACE_REQUEST(symbol, index) PLACE(REQUEST, symbol, index)
#define PLACE_WIN(symbol, index) PLACE(WIN, symbol, index)
#define PLACE_ERRHANDLER(symbol, index) PLACE(ERRHANDLER, symbol, index)
#define PLACE_INFO(symbol, index) PLACE(INFO, symbol, index)
#define SMALL(symbol, size)
#include "predefined.def"
#undef X
#undef SMALL
}
_Static_assert((int)STASIS_MPI_PREDEFINED_DATATYPE_COUNT <= (int)PREDEFINED_CAPACITY &&
                   (int)STASIS_MPI_PREDEFINED_OP_COUNT <= (int)PREDEFINED_CAPACITY,
               "predefined objects beyond the front's table");
static const int predefined_count[KIND_COUNT] = {
    [STASIS_MPI_KIND_COMM] = STASIS_MPI_PREDEFINED_COMM_COUNT,
    [STASIS_MPI_KIND_DATATYPE] = STASIS_MPI_PREDEFINED_DATATYPE_COUNT,
    [STASIS_MPI_KIND_OP] = STASIS_MPI_PREDEFINED_OP_COUNT,
    [STASIS_MPI_KIND_GROUP] = STASIS_MPI_PREDEFINED_GROUP_COUNT,
    [STASIS_MPI_KIND_REQUEST] = STASIS_MPI_PREDEFINED_REQUEST_COUNT,
    [STASIS_MPI_KIND_WIN] = STASIS_MPI_PREDEFINED_WIN_COUNT,
    [STASIS_MPI_KIND_ERRHANDLER] = STASIS_MPI_PREDEFINED_ERRHANDLER_COUNT,
    [STASIS_MPI_KIND_INFO] = STASIS_MPI_PREDEFINED_INFO_COUNT,
};

/* The made objects' handles: one slot per index of the split layer's tables (an index beyond
 * them is refused, never wrapped). */
static OmpiAbiObject comm_slots[COMM_CAPACITY], datatype_slots[DATATYPE_CAPACITY], group_slots[GROUP_CAPACITY],
    request_slots[REQUEST_CAPACITY], window_slots[WINDOW_CAPACITY], info_slots[INFO_CAPACITY],
    op_slots[STASIS_MPI_PREDEFINED_OP_COUNT + STASIS_MPI_LOWER_OP_SLOTS];
static OmpiAbiObject *const slots[KIND_COUNT] = {
    [STASIS_MPI_KIND_COMM] = comm_slots,
    [STASIS_MPI_KIND_DATATYPE] = datatype_slots,
    [STASIS_MPI_KIND_GROUP] = group_slots,
    [STASIS_MPI_KIND_REQUEST] = request_slots,
    [STASIS_MPI_KIND_WIN] = window_slots,
    [STASIS_MPI_KIND_INFO] = info_slots,
    [STASIS_MPI_KIND_OP] = op_slots,
};
static const uint32_t slot_count[KIND_COUNT] = {
    [STASIS_MPI_KIND_COMM] = sizeof comm_slots / sizeof *comm_slots,
    [STASIS_MPI_KIND_DATATYPE] = sizeof datatype_slots / sizeof *datatype_slots,
    [STASIS_MPI_KIND_GROUP] = sizeof group_slots / sizeof *group_slots,
    [STASIS_MPI_KIND_REQUEST] = sizeof request_slots / sizeof *request_slots,
    [STASIS_MPI_KIND_WIN] = sizeof window_slots / sizeof *window_slots,
    [STASIS_MPI_KIND_INFO] = sizeof info_slots / sizeof *info_slots,
    [STASIS_MPI_KIND_OP] = sizeof op_slots / sizeof *op_slots,
};

OmpiAbiSplit ompi_abi_split;
static int split_up; /* MPI_Init has been forwarded, MPI_Finalize not yet */

void ompi_abi_fatal(const char *function, const char *what) {
  char line[512];
  int length = snprintf(line, sizeof line, "stasis ompi_abi: %s: %s\n", function, what);
  if (length > 0) (void)!write(2, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
  int finalized = 1;
  if (ompi_abi_split.Finalized) ompi_abi_split.Finalized(&finalized);
  if (!finalized && split_up) ompi_abi_split.Abort(MPI_COMM_WORLD, MPI_ERR_OTHER);
  _exit(1);
}

int ompi_abi_vid(const char *function, const void *handle) {
  const OmpiAbiObject *object = handle;
  char what[160];
  if (!object) ompi_abi_fatal(function, "a NULL handle");
  if (object->magic != OMPI_ABI_MAGIC) {
    snprintf(what, sizeof what, "%p is not a handle of the Open MPI front (built against another mpi.h?)", handle);
    ompi_abi_fatal(function, what);
  }
  if (object->vid == 0) {
    snprintf(what, sizeof what, "Open MPI's %s has no equivalent in split mode yet", object->name);
    ompi_abi_fatal(function, what);
  }
  return object->vid;
}

OmpiAbiHandle ompi_abi_handle(const char *function, int vid) {
  uint32_t kind = ((uint32_t)vid >> 16) & 0xff, index = (uint32_t)vid & 0xffff;
  char what[96];
  if (((uint32_t)vid & 0xff000000u) == STASIS_MPI_VID_TAG && kind > 0 && kind < KIND_COUNT) {
    if (index < (uint32_t)predefined_count[kind] && predefined[kind][index]) return predefined[kind][index];
    if (index >= (uint32_t)predefined_count[kind] && slots[kind] && index < slot_count[kind]) {
      OmpiAbiObject *slot = &slots[kind][index];
      *slot = (OmpiAbiObject){OMPI_ABI_MAGIC, vid, "a made object"};
      return slot;
    }
  }
  snprintf(what, sizeof what, "the split layer handed out 0x%x, which the front has no handle for", (unsigned)vid);
  ompi_abi_fatal(function, what);
}

OmpiAbiHandle ompi_abi_handle_of(const char *function, int vid, int kind) {
  if ((((uint32_t)vid >> 16) & 0xff) != (uint32_t)kind) {
    char what[96];
    snprintf(what, sizeof what, "%d (0x%x) is not a handle of this kind", vid, (unsigned)vid);
    ompi_abi_fatal(function, what);
  }
  return ompi_abi_handle(function, vid);
}

void *ompi_abi_split_function(const char *name) {
  /* libstasis_mpi.so binds its own calls to itself (-Bsymbolic-functions); NOLOAD: it is already
   * loaded, a dependency of this library. The reference NOLOAD takes is given back; it stays. */
  void *library = dlopen("libstasis_mpi.so", RTLD_NOW | RTLD_NOLOAD);
  if (!library) ompi_abi_fatal("libmpi.so.40", "libstasis_mpi.so is not loaded");
  void *found = dlsym(library, name);
  dlclose(library);
  if (!found) ompi_abi_fatal(name, "not found in libstasis_mpi.so");
  return found;
}

/* Each entry typed by abi/mpi.h's own prototype: a change there that the table does not follow
 * fails to build here. */
#define RESOLVE(name)                                                                        \
  do {                                                                                       \
    ompi_abi_split.name = (__typeof__(&MPI_##name))ompi_abi_split_function("MPI_" #name);    \
  } while (0)

/* Runs when the program's libraries start, after libstasis_mpi.so's (a dependency of this one). */
__attribute__((constructor)) static void resolve_split_layer(void) {
  predefined_init();
  RESOLVE(Init); RESOLVE(Init_thread); RESOLVE(Initialized); RESOLVE(Finalized); RESOLVE(Finalize); RESOLVE(Abort);
  RESOLVE(Wtime); RESOLVE(Get_processor_name); RESOLVE(Get_library_version); RESOLVE(Comm_rank); RESOLVE(Comm_size);
  RESOLVE(Comm_dup); RESOLVE(Comm_split); RESOLVE(Comm_free); RESOLVE(Comm_group); RESOLVE(Group_size);
  RESOLVE(Group_rank); RESOLVE(Group_free); RESOLVE(Type_contiguous); RESOLVE(Type_vector); RESOLVE(Type_commit);
  RESOLVE(Type_free); RESOLVE(Type_size); RESOLVE(Get_count); RESOLVE(Send); RESOLVE(Recv); RESOLVE(Sendrecv);
  RESOLVE(Isend); RESOLVE(Irecv); RESOLVE(Wait); RESOLVE(Waitall); RESOLVE(Barrier); RESOLVE(Bcast);
  RESOLVE(Allreduce); RESOLVE(Reduce);
}

void ompi_abi_mark_up(int up) { split_up = up; }

/* error_classes.def as rows: the split layer's value, Open MPI's, Open MPI's text. */
static const struct {
  int split, ompi;
  const char *text;
} error_classes[] = {
#define X(name, ompi_value, text) {MPI_##name, ompi_value, text},
#include "error_classes.def"
#undef X
};
enum { ERROR_CLASS_COUNT = sizeof error_classes / sizeof *error_classes };

int ompi_abi_error_class(int split_code) {
  for (int i = 0; i < ERROR_CLASS_COUNT; i++)
    if (error_classes[i].split == split_code) return error_classes[i].ompi;
  return OMPI_VALUE_OF_ERR_OTHER;
}

int ompi_abi_split_error_class(int ompi_code) {
  for (int i = 0; i < ERROR_CLASS_COUNT; i++)
    if (error_classes[i].ompi == ompi_code) return error_classes[i].split;
  return MPI_ERR_OTHER;
}

const char *ompi_abi_error_text(int ompi_code) {
  for (int i = 0; i < ERROR_CLASS_COUNT; i++)
    if (error_classes[i].ompi == ompi_code) return error_classes[i].text;
  return NULL;
}

void ompi_abi_status_classes(void *statuses, int count) {
  MPI_Status *status = statuses;
  for (int i = 0; status && i < count; i++) status[i].MPI_ERROR = ompi_abi_error_class(status[i].MPI_ERROR);
}
