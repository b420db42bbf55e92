/* The Open MPI ABI front's attributes and keyvals (part "mpiattr", ../upper_attributes.c):
 * MPI_{Comm,Type,Win}_create_keyval, _free_keyval, _set_attr, _get_attr (Win_get_attr:
 * front_rma.c), _delete_attr, and Open MPI's predefined copy and delete functions, which its
 * mpi.h names as functions (MPI_COMM_NULL_COPY_FN is OMPI_C_MPI_COMM_NULL_COPY_FN: a program
 * holds their addresses, so they must be exported). Keyvals and attribute values are ints and
 * pointers: they pass through unconverted.
 *
 * The program's copy and delete functions take Open MPI's handles: the split layer calls this
 * file's trampolines with the object's virtual id, and they call the program's function with the
 * front's handle for it. A keyval's functions and extra state are kept here by the keyval's slot
 * (the split layer's keyvals are STASIS_MPI_KEYVAL_TAG | slot, and a slot is given out again only
 * once no attribute uses it), in static storage: upper-half memory, saved with the program.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdint.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Win;
/* Open MPI's three copy and three delete function types have the same shape: an object handle
 * first. */
typedef int OmpiCopy(OmpiAbiHandle object, int keyval, void *extra_state, void *value_in, void *value_out, int *flag);
typedef int OmpiDelete(OmpiAbiHandle object, int keyval, void *value, void *extra_state);
/* The split layer's, with virtual ids. */
typedef int SplitCopy(int object, int keyval, void *extra_state, void *value_in, void *value_out, int *flag);
typedef int SplitDelete(int object, int keyval, void *value, void *extra_state);

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

enum { KEYVAL_SLOTS = 256 }; /* the split layer's KEYVAL_CAPACITY */

static struct {
  OmpiCopy *copy;
  OmpiDelete *remove;
  void *extra_state;
} program_keyvals[KEYVAL_SLOTS];

#define SPLIT_ATTRIBUTE_CALLS(Kind)                   \
  int (*Kind##_create_keyval)(SplitCopy *, SplitDelete *, int *, void *); \
  int (*Kind##_free_keyval)(int *);                    \
  int (*Kind##_set_attr)(int, int, void *);            \
  int (*Kind##_delete_attr)(int, int);
static struct {
  SPLIT_ATTRIBUTE_CALLS(Comm)
  SPLIT_ATTRIBUTE_CALLS(Type)
  SPLIT_ATTRIBUTE_CALLS(Win)
  int (*Comm_get_attr)(int, int, void *, int *);
  int (*Type_get_attr)(int, int, void *, int *);
} split;

#define RESOLVE_ATTRIBUTE_CALLS(Kind)                 \
  OMPI_ABI_RESOLVE(split, Kind##_create_keyval);      \
  OMPI_ABI_RESOLVE(split, Kind##_free_keyval);        \
  OMPI_ABI_RESOLVE(split, Kind##_set_attr);           \
  OMPI_ABI_RESOLVE(split, Kind##_delete_attr);
__attribute__((constructor)) static void resolve_attributes(void) {
  RESOLVE_ATTRIBUTE_CALLS(Comm)
  RESOLVE_ATTRIBUTE_CALLS(Type)
  RESOLVE_ATTRIBUTE_CALLS(Win)
  OMPI_ABI_RESOLVE(split, Comm_get_attr);
  OMPI_ABI_RESOLVE(split, Type_get_attr);
}

static int call_program_copy(int object, int keyval, void *extra_state, void *value_in, void *value_out, int *flag) {
  (void)extra_state;
  int slot = keyval & 0xffff;
  /* The program's function answers in Open MPI's numbering; the split layer reads its own. */
  return ompi_abi_split_error_class(program_keyvals[slot].copy(ompi_abi_handle("an attribute copy function", object),
                                                               keyval, program_keyvals[slot].extra_state, value_in,
                                                               value_out, flag));
}

static int call_program_delete(int object, int keyval, void *value, void *extra_state) {
  (void)extra_state;
  int slot = keyval & 0xffff;
  return ompi_abi_split_error_class(program_keyvals[slot].remove(
      ompi_abi_handle("an attribute delete function", object), keyval, value, program_keyvals[slot].extra_state));
}

/* Makes a keyval with the trampolines for the program's functions (NULL: none) and keeps them. */
static int create_keyval(int (*create)(SplitCopy *, SplitDelete *, int *, void *), OmpiCopy *copy,
                         OmpiDelete *remove, int *keyval, void *extra_state) {
  int made = 0;
  int rc = CLASS(create(copy ? call_program_copy : NULL, remove ? call_program_delete : NULL, &made, NULL));
  if (rc != OMPI_ABI_SUCCESS) return rc;
  int slot = made & 0xffff;
  if (slot >= KEYVAL_SLOTS) ompi_abi_fatal(__func__, "a keyval beyond the front's table");
  program_keyvals[slot].copy = copy;
  program_keyvals[slot].remove = remove;
  program_keyvals[slot].extra_state = extra_state;
  *keyval = made;
  return rc;
}

#define ATTRIBUTE_CALLS(Kind, Handle)                                                                          \
  EXPORTED int MPI_##Kind##_create_keyval(OmpiCopy *copy, OmpiDelete *remove, int *keyval, void *extra_state) { \
    return create_keyval(split.Kind##_create_keyval, copy, remove, keyval, extra_state);                       \
  }                                                                                                            \
  FORWARDED(MPI_##Kind##_create_keyval)                                                                        \
  EXPORTED int MPI_##Kind##_free_keyval(int *keyval) { return CLASS(split.Kind##_free_keyval(keyval)); }     \
  FORWARDED(MPI_##Kind##_free_keyval)                                                                          \
  EXPORTED int MPI_##Kind##_set_attr(Handle object, int keyval, void *value) {                                 \
    return CLASS(split.Kind##_set_attr(VID(object), keyval, value));                                           \
  }                                                                                                            \
  FORWARDED(MPI_##Kind##_set_attr)                                                                             \
  EXPORTED int MPI_##Kind##_delete_attr(Handle object, int keyval) {                                           \
    return CLASS(split.Kind##_delete_attr(VID(object), keyval));                                               \
  }                                                                                                            \
  FORWARDED(MPI_##Kind##_delete_attr)
/* generate_lists.py finds the forwarded functions by lines that begin with FORWARDED(NAME: the
 * macro's are named here for it, one a line.
 FORWARDED(MPI_Comm_create_keyval)
 FORWARDED(MPI_Comm_free_keyval)
 FORWARDED(MPI_Comm_set_attr)
 FORWARDED(MPI_Comm_delete_attr)
 FORWARDED(MPI_Type_create_keyval)
 FORWARDED(MPI_Type_free_keyval)
 FORWARDED(MPI_Type_set_attr)
 FORWARDED(MPI_Type_delete_attr)
 FORWARDED(MPI_Win_create_keyval)
 FORWARDED(MPI_Win_free_keyval)
 FORWARDED(MPI_Win_set_attr)
 FORWARDED(MPI_Win_delete_attr)
 */
ATTRIBUTE_CALLS(Comm, MPI_Comm)
ATTRIBUTE_CALLS(Type, MPI_Datatype)
ATTRIBUTE_CALLS(Win, MPI_Win)

EXPORTED int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *value, int *flag) {
  return CLASS(split.Comm_get_attr(VID(comm), keyval, value, flag));
}
FORWARDED(MPI_Comm_get_attr)
EXPORTED int MPI_Type_get_attr(MPI_Datatype datatype, int keyval, void *value, int *flag) {
  return CLASS(split.Type_get_attr(VID(datatype), keyval, value, flag));
}
FORWARDED(MPI_Type_get_attr)

/* Open MPI's predefined copy and delete functions (its mpi.h: MPI_COMM_NULL_COPY_FN and the
 * others are these; MPI_NULL_COPY_FN, MPI_DUP_FN, MPI_NULL_DELETE_FN are MPI-1's). The program
 * hands their addresses to MPI_*_create_keyval like its own functions; they only touch the value. */
static int null_copy(OmpiAbiHandle object, int keyval, void *extra_state, void *value_in, void *value_out, int *flag) {
  (void)object, (void)keyval, (void)extra_state, (void)value_in, (void)value_out;
  *flag = 0;
  return OMPI_ABI_SUCCESS;
}
static int dup_value(OmpiAbiHandle object, int keyval, void *extra_state, void *value_in, void *value_out, int *flag) {
  (void)object, (void)keyval, (void)extra_state;
  *(void **)value_out = value_in;
  *flag = 1;
  return OMPI_ABI_SUCCESS;
}
static int null_delete(OmpiAbiHandle object, int keyval, void *value, void *extra_state) {
  (void)object, (void)keyval, (void)value, (void)extra_state;
  return OMPI_ABI_SUCCESS;
}
#define PREDEFINED_FUNCTIONS(PREFIX)                                                                  \
  extern OmpiCopy OMPI_C_MPI_##PREFIX##NULL_COPY_FN EXPORTED __attribute__((alias("null_copy")));     \
  extern OmpiCopy OMPI_C_MPI_##PREFIX##DUP_FN EXPORTED __attribute__((alias("dup_value")));           \
  extern OmpiDelete OMPI_C_MPI_##PREFIX##NULL_DELETE_FN EXPORTED __attribute__((alias("null_delete")));
PREDEFINED_FUNCTIONS(COMM_)
PREDEFINED_FUNCTIONS(TYPE_)
PREDEFINED_FUNCTIONS(WIN_)
PREDEFINED_FUNCTIONS()
