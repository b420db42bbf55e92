/* Attributes and keyvals (part "mpiattr", README.md: Attributes): MPI_{Comm,Type,Win}_create_keyval,
 * _free_keyval, _set_attr, _get_attr (Win_get_attr: upper_rma.c, which asks here for the program's
 * keyvals), _delete_attr, the predefined copy and delete functions, and the predefined attributes
 * of communicators.
 *
 * They never reach the lower half: a keyval is an id of this file's table, an attribute a value
 * the program gave, kept here with its object's virtual id. Both are static storage of the upper
 * half, saved with the program, so a restart (under any library) finds them as they were and
 * nothing has to be made again in the fresh lower half; the copy and delete functions are the
 * program's (or the front's) addresses, mapped back at the same place. The copy functions run in
 * MPI_Comm_dup, the delete functions in MPI_Comm_free, MPI_Type_free, MPI_Win_free, MPI_*_delete_attr,
 * a set over a value, and, for MPI_COMM_SELF, at the start of MPI_Finalize (last set first), as
 * the standard says; they are called outside the table's lock, so they may call MPI (mpi4py's
 * delete function frees a communicator). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "upper_state.h"

enum { KEYVAL_CAPACITY = 256, ATTRIBUTE_CAPACITY = 4096 };

typedef struct Keyval {
  int kind; /* the kind of object it is for (enum StasisMpiKind); 0: a free slot */
  STASIS_MPI_Copy_attr_function *copy;
  STASIS_MPI_Delete_attr_function *remove;
  void *extra_state;
  int freed;       /* MPI_*_free_keyval called: no new attribute, the slot kept while `attributes` > 0 */
  int attributes;  /* attributes set with it */
} Keyval;

typedef struct Attribute {
  int object;     /* the virtual id it is set on; 0: a free slot */
  int keyval;
  void *value;
  uint64_t order; /* when it was set: MPI_COMM_SELF's are deleted last set first */
} Attribute;

static Keyval keyvals[KEYVAL_CAPACITY]; /* slot 0 unused: a keyval is never the tag alone */
static Attribute attributes[ATTRIBUTE_CAPACITY];
static uint64_t attributes_set;
/* The tables' lock: taken around every lookup and change, never across a program's function.
 * (MPI_THREAD_MULTIPLE lets several threads in; the layer's safe regions are for the lower half.) */
static atomic_flag table_lock = ATOMIC_FLAG_INIT;

static void lock_tables(void) {
  while (atomic_flag_test_and_set_explicit(&table_lock, memory_order_acquire)) {
  }
}
static void unlock_tables(void) { atomic_flag_clear_explicit(&table_lock, memory_order_release); }

/* The predefined attributes of every communicator (C binding: a pointer to an int). MPI_TAG_UB is
 * the standard's guaranteed least value, not the library's: a restart may bring a library with a
 * smaller bound than the one the program read, and the tags it chose must stay valid there. */
static int tag_ub = 32767, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE, wtime_is_global = 0, appnum = 0,
           universe_size = 0, last_used_code = STASIS_MPI_ERR_LASTCODE;

static const char *kind_name(int kind) {
  return kind == STASIS_MPI_KIND_COMM ? "communicator" : kind == STASIS_MPI_KIND_DATATYPE ? "datatype" : "window";
}

/* The slot of a live keyval for `kind`, or 0 (said, naming the function). */
static int keyval_slot(const char *function, int keyval, int kind) {
  int slot = keyval & 0xffff;
  if ((keyval & ~0xffff) != STASIS_MPI_KEYVAL_TAG || slot < 1 || slot >= KEYVAL_CAPACITY ||
      keyvals[slot].kind != kind || keyvals[slot].freed) {
    char text[128];
    snprintf(text, sizeof text, "%d is not a live %s keyval", keyval, kind_name(kind));
    complain(function, text);
    return 0;
  }
  return slot;
}

/* Whether `object` is a live object of `kind` the program may set attributes on. */
static int object_live(const char *function, int kind, int object) {
  int ok = 1;
  if (kind == STASIS_MPI_KIND_COMM) ok = stasis_mpi_ids_index(&handles.comms, object) >= 1;
  else if (kind == STASIS_MPI_KIND_DATATYPE) ok = stasis_mpi_ids_index(&handles.datatypes, object) >= 1;
  else ok = object != MPI_WIN_NULL && ((unsigned)object >> 16) == (STASIS_MPI_VID_TAG >> 16 | STASIS_MPI_KIND_WIN);
  if (!ok) not_live(function, kind_name(kind), object, 0);
  return ok;
}

static int error_of(int kind) {
  return kind == STASIS_MPI_KIND_COMM ? MPI_ERR_COMM : kind == STASIS_MPI_KIND_DATATYPE ? MPI_ERR_TYPE : MPI_ERR_WIN;
}

static int find_attribute(int object, int keyval) {
  for (int i = 0; i < ATTRIBUTE_CAPACITY; i++)
    if (attributes[i].object == object && attributes[i].keyval == keyval) return i;
  return -1;
}

/* Forgets attribute `index` (the lock held); its keyval's slot is given back once freed and unused. */
static void forget_attribute(int index) {
  int slot = attributes[index].keyval & 0xffff;
  attributes[index].object = 0;
  if (--keyvals[slot].attributes == 0 && keyvals[slot].freed) keyvals[slot].kind = 0;
}

/* Calls the delete function of attribute `index` (not under the lock) and forgets it when the
 * function succeeds; its error otherwise, the attribute kept. */
static int delete_attribute(int index) {
  lock_tables();
  Attribute attribute = attributes[index];
  Keyval keyval = keyvals[attribute.keyval & 0xffff];
  unlock_tables();
  if (keyval.remove) {
    int rc = keyval.remove(attribute.object, attribute.keyval, attribute.value, keyval.extra_state);
    if (rc != MPI_SUCCESS) return rc;
  }
  lock_tables();
  if (attributes[index].object == attribute.object && attributes[index].keyval == attribute.keyval)
    forget_attribute(index);
  unlock_tables();
  return MPI_SUCCESS;
}

static int create_keyval(const char *function, int kind, STASIS_MPI_Copy_attr_function *copy,
                         STASIS_MPI_Delete_attr_function *remove, int *keyval, void *extra_state) {
  lock_tables();
  int slot = 1;
  while (slot < KEYVAL_CAPACITY && keyvals[slot].kind != 0) slot++;
  if (slot == KEYVAL_CAPACITY) {
    unlock_tables();
    complain(function, "too many live keyvals for the split layer's table");
    return MPI_ERR_INTERN;
  }
  keyvals[slot] = (Keyval){kind, copy, remove, extra_state, 0, 0};
  unlock_tables();
  *keyval = STASIS_MPI_KEYVAL_TAG | slot;
  return MPI_SUCCESS;
}

static int free_keyval(const char *function, int kind, int *keyval) {
  lock_tables();
  int slot = keyval_slot(function, *keyval, kind);
  if (slot) {
    keyvals[slot].freed = 1;
    if (keyvals[slot].attributes == 0) keyvals[slot].kind = 0;
  }
  unlock_tables();
  if (!slot) return MPI_ERR_KEYVAL;
  *keyval = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

static int set_attribute(const char *function, int kind, int object, int keyval, void *value) {
  if (!object_live(function, kind, object)) return error_of(kind);
  lock_tables();
  int slot = keyval_slot(function, keyval, kind);
  int index = slot ? find_attribute(object, keyval) : -1;
  unlock_tables();
  if (!slot) return MPI_ERR_KEYVAL;
  if (index >= 0) { /* a value set before is deleted first, as the standard says */
    int rc = delete_attribute(index);
    if (rc != MPI_SUCCESS) return rc;
  }
  lock_tables();
  for (index = 0; index < ATTRIBUTE_CAPACITY && attributes[index].object != 0; index++) {
  }
  if (index < ATTRIBUTE_CAPACITY) {
    attributes[index] = (Attribute){object, keyval, value, ++attributes_set};
    keyvals[slot].attributes++;
  }
  unlock_tables();
  if (index == ATTRIBUTE_CAPACITY) {
    complain(function, "too many attributes for the split layer's table");
    return MPI_ERR_INTERN;
  }
  return MPI_SUCCESS;
}

/* The predefined attributes of a communicator: 1 when `keyval` is one (*value set), else 0. */
static int predefined_comm_attribute(int keyval, int **value) {
  switch (keyval) {
    case MPI_TAG_UB: *value = &tag_ub; return 1;
    case MPI_HOST: *value = &host; return 1;
    case MPI_IO: *value = &io; return 1;
    case MPI_WTIME_IS_GLOBAL: *value = &wtime_is_global; return 1;
    case MPI_APPNUM: *value = &appnum; return 1;
    case MPI_LASTUSEDCODE: *value = &last_used_code; return 1;
    case MPI_UNIVERSE_SIZE:
      if (MPI_Comm_size(MPI_COMM_WORLD, &universe_size) != MPI_SUCCESS) return 0;
      *value = &universe_size;
      return 1;
    default: return 0;
  }
}

static int get_attribute(const char *function, int kind, int object, int keyval, void *value, int *flag) {
  if (!object_live(function, kind, object)) return error_of(kind);
  *flag = 0;
  int *predefined = NULL;
  if (kind == STASIS_MPI_KIND_COMM && predefined_comm_attribute(keyval, &predefined)) {
    *(int **)value = predefined;
    *flag = 1;
    return MPI_SUCCESS;
  }
  lock_tables();
  int slot = keyval_slot(function, keyval, kind);
  int index = slot ? find_attribute(object, keyval) : -1;
  if (index >= 0) {
    *(void **)value = attributes[index].value;
    *flag = 1;
  }
  unlock_tables();
  return slot ? MPI_SUCCESS : MPI_ERR_KEYVAL;
}

static int delete_attr(const char *function, int kind, int object, int keyval) {
  if (!object_live(function, kind, object)) return error_of(kind);
  lock_tables();
  int slot = keyval_slot(function, keyval, kind);
  int index = slot ? find_attribute(object, keyval) : -1;
  unlock_tables();
  if (!slot) return MPI_ERR_KEYVAL;
  if (index < 0) {
    complain(function, "no attribute of this keyval is set on the object");
    return MPI_ERR_KEYVAL;
  }
  return delete_attribute(index);
}

int stasis_mpi_attributes_copy(int from, int to) {
  for (int i = 0; i < ATTRIBUTE_CAPACITY; i++) {
    lock_tables();
    Attribute attribute = attributes[i];
    Keyval keyval = keyvals[attribute.keyval & 0xffff];
    unlock_tables();
    if (attribute.object != from || !keyval.copy) continue;
    void *copied = NULL;
    int flag = 0;
    int rc = keyval.copy(from, attribute.keyval, keyval.extra_state, attribute.value, &copied, &flag);
    if (rc != MPI_SUCCESS) return rc;
    if (flag && (rc = set_attribute("MPI_Comm_dup", STASIS_MPI_KIND_COMM, to, attribute.keyval, copied)) != MPI_SUCCESS)
      return rc;
  }
  return MPI_SUCCESS;
}

int stasis_mpi_attributes_delete_all(int object) {
  for (;;) { /* last set first */
    int last = -1;
    lock_tables();
    for (int i = 0; i < ATTRIBUTE_CAPACITY; i++)
      if (attributes[i].object == object && (last < 0 || attributes[i].order > attributes[last].order)) last = i;
    unlock_tables();
    if (last < 0) return MPI_SUCCESS;
    int rc = delete_attribute(last);
    if (rc != MPI_SUCCESS) return rc;
  }
}

int stasis_mpi_window_attribute(MPI_Win win, int keyval, void *value, int *flag) {
  return get_attribute("MPI_Win_get_attr", STASIS_MPI_KIND_WIN, win, keyval, value, flag);
}

/* The predefined copy and delete functions (MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN, ...). */
API int STASIS_MPI_Null_copy_fn(int object, int keyval, void *extra_state, void *value_in, void *value_out,
                                int *flag) {
  (void)object, (void)keyval, (void)extra_state, (void)value_in, (void)value_out;
  *flag = 0;
  return MPI_SUCCESS;
}
API int STASIS_MPI_Dup_fn(int object, int keyval, void *extra_state, void *value_in, void *value_out, int *flag) {
  (void)object, (void)keyval, (void)extra_state;
  *(void **)value_out = value_in;
  *flag = 1;
  return MPI_SUCCESS;
}
API int STASIS_MPI_Null_delete_fn(int object, int keyval, void *value, void *extra_state) {
  (void)object, (void)keyval, (void)value, (void)extra_state;
  return MPI_SUCCESS;
}

#define ATTRIBUTE_CALLS(Kind, KIND, Handle)                                                                        \
  API int MPI_##Kind##_create_keyval(MPI_##Kind##_copy_attr_function *copy,                                         \
                                     MPI_##Kind##_delete_attr_function *remove, int *keyval, void *extra_state) {   \
    return create_keyval("MPI_" #Kind "_create_keyval", KIND, copy, remove, keyval, extra_state);                   \
  }                                                                                                                \
  API int MPI_##Kind##_free_keyval(int *keyval) { return free_keyval("MPI_" #Kind "_free_keyval", KIND, keyval); } \
  API int MPI_##Kind##_set_attr(Handle object, int keyval, void *value) {                                           \
    return set_attribute("MPI_" #Kind "_set_attr", KIND, object, keyval, value);                                   \
  }                                                                                                                \
  API int MPI_##Kind##_delete_attr(Handle object, int keyval) {                                                     \
    return delete_attr("MPI_" #Kind "_delete_attr", KIND, object, keyval);                                         \
  }
ATTRIBUTE_CALLS(Comm, STASIS_MPI_KIND_COMM, MPI_Comm)
ATTRIBUTE_CALLS(Type, STASIS_MPI_KIND_DATATYPE, MPI_Datatype)
ATTRIBUTE_CALLS(Win, STASIS_MPI_KIND_WIN, MPI_Win)

API int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *value, int *flag) {
  return get_attribute("MPI_Comm_get_attr", STASIS_MPI_KIND_COMM, comm, keyval, value, flag);
}
API int MPI_Type_get_attr(MPI_Datatype datatype, int keyval, void *value, int *flag) {
  return get_attribute("MPI_Type_get_attr", STASIS_MPI_KIND_DATATYPE, datatype, keyval, value, flag);
}
