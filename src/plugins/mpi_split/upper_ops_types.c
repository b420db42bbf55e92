/* User reduction operations, struct datatypes, groups made from ranks and ready sends (part
 * "mpiops" of issue 17; README.md): each made object gets its virtual id and a replay record
 * (replay_ops_types.c makes it again in a fresh lower half, Open MPI or MPICH).
 *
 * A user operation's function is the program's (upper-half code, saved with it), called back from
 * inside the library through the lower half's trampoline for its slot (lower_ops_types.c) with
 * the library's datatype handle: op_called turns it into the program's datatype id and runs the
 * function on the upper half's thread pointer. The slot is the operation id's index past the
 * predefined ones, so a restart gives each operation the same trampoline again. */
#include <stdlib.h>

#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

static struct {
  MPI_User_function *function;                          /* MPI_Op_create's */
  STASIS_MPI_User_function_with_context *with_context; /* or STASIS_MPI_Op_create_with_context's */
  void *context;
} user_ops[STASIS_MPI_LOWER_OP_SLOTS];

enum { REPLAY_ARRAY_CAPACITY = 1 << 16 };
static int64_t replay_arrays[REPLAY_ARRAY_CAPACITY];

void stasis_mpi_ops_types_init(void) { stasis_mpi_replay_set_arrays(&replay, replay_arrays, REPLAY_ARRAY_CAPACITY); }

/* The program's id of the library's datatype `real`; MPI_DATATYPE_NULL when it has none. */
static int datatype_id_of(StasisMpiRealHandle real) {
  for (uint32_t index = 0; index < handles.datatypes.next_unused; index++)
    if (handles.datatypes.entries[index].live && handles.datatypes.entries[index].real == real)
      return STASIS_MPI_VID(STASIS_MPI_KIND_DATATYPE, (int)index);
  return MPI_DATATYPE_NULL;
}

/* Called by the library, on the lower half's thread pointer, inside a call of the program's. */
static void op_called(int slot, void *in, void *inout, int *length, StasisMpiRealHandle real_type) {
  uint64_t lower_tls = 0;
  if (stasis_mpi_lower_tls) {
    lower_tls = stasis_mpi_get_fs_base();
    stasis_mpi_set_fs_base(stasis_mpi_upper_tls_inside);
  }
  MPI_Datatype type = datatype_id_of(real_type);
  if (type == MPI_DATATYPE_NULL) complain("a user operation", "the library passed a datatype the program never had");
  if (slot < 0 || slot >= STASIS_MPI_LOWER_OP_SLOTS || (!user_ops[slot].function && !user_ops[slot].with_context))
    complain("a user operation", "the library called an operation slot that holds no function");
  else if (user_ops[slot].function)
    user_ops[slot].function(in, inout, length, &type);
  else
    user_ops[slot].with_context(in, inout, length, &type, user_ops[slot].context);
  if (lower_tls) stasis_mpi_set_fs_base(lower_tls);
}

static int op_create(MPI_User_function *function, STASIS_MPI_User_function_with_context *with_context,
                     void *context, int commute, MPI_Op *op) {
  const char *name = "MPI_Op_create";
  NEED_LOWER(name);
  if ((!function && !with_context) || !op) return MPI_ERR_ARG;
  stasis_mpi_replay_op_callback = op_called;
  stasis_mpi_safe_point_enter(name); /* the object, its id and its record together */
  int id = 0, rc = MPI_SUCCESS;
  StasisMpiRealHandle made = 0;
  /* The id first: its index names the trampoline (lower_ops_types.c). */
  if (stasis_mpi_ids_add(&handles.ops, 0, &id) != 0) {
    complain(name, "more user operations live than the lower half has trampolines (32)");
    rc = MPI_ERR_INTERN;
  } else {
    int64_t slot = stasis_mpi_ids_index(&handles.ops, id) - (int64_t)handles.ops.predefined_count;
    user_ops[slot].function = function;
    user_ops[slot].with_context = with_context;
    user_ops[slot].context = context;
    rc = library_error(LOWER_CALL_IN_REGION(lower, op_create, (int)slot, commute != 0, op_called, &made));
    if (rc == MPI_SUCCESS && stasis_mpi_replay_append(&replay, STASIS_MPI_REPLAY_OP_CREATE, id, 0, 0, 0,
                                                      commute != 0) != 0) {
      complain(name, "the replay log is full");
      LOWER_CALL_IN_REGION(lower, op_free, made);
      rc = MPI_ERR_INTERN;
    }
    if (rc == MPI_SUCCESS) stasis_mpi_ids_bind(&handles.ops, id, made);
    else stasis_mpi_ids_remove(&handles.ops, id);
  }
  stasis_mpi_safe_point_leave();
  if (rc == MPI_SUCCESS) *op = id;
  return rc;
}

API int MPI_Op_create(MPI_User_function *function, int commute, MPI_Op *op) {
  return op_create(function, NULL, NULL, commute, op);
}

API int STASIS_MPI_Op_create_with_context(STASIS_MPI_User_function_with_context *function, void *context, int commute,
                                          MPI_Op *op) {
  return op_create(NULL, function, context, commute, op);
}

API int MPI_Op_free(MPI_Op *op) {
  NEED_LOWER("MPI_Op_free");
  int64_t index = stasis_mpi_ids_index(&handles.ops, *op);
  if (index < (int64_t)handles.ops.predefined_count) return not_live("MPI_Op_free", "user operation", *op, MPI_ERR_OP);
  stasis_mpi_safe_point_enter("MPI_Op_free");
  int rc = library_error(LOWER_CALL_IN_REGION(lower, op_free, handles.ops.entries[index].real));
  if (rc == MPI_SUCCESS) {
    stasis_mpi_ids_remove(&handles.ops, *op);
    if (stasis_mpi_replay_append(&replay, STASIS_MPI_REPLAY_OP_FREE, 0, *op, 0, 0, 0) != 0) {
      complain("MPI_Op_free", "the replay log is full");
      rc = MPI_ERR_INTERN;
    }
  }
  stasis_mpi_safe_point_leave();
  if (rc == MPI_SUCCESS) *op = MPI_OP_NULL;
  return rc;
}

/* upper_state.h */
int made_with_array(const char *function, StasisMpiIdTable *table, uint32_t op, int from, int count,
                           const int64_t *array, uint32_t n, StasisMpiRealHandle made, int rc, int *id) {
  uint32_t offset = 0;
  if (rc != 0) return library_error(rc);
  if (stasis_mpi_replay_append_array(&replay, array, n, &offset) != 0) {
    complain(function, "the replay log's array storage is full");
    return MPI_ERR_INTERN;
  }
  return remember(function, table, made, op, from, (int)offset, (int)n, count, id);
}

API int MPI_Type_create_struct(int count, const int blocklengths[], const MPI_Aint displacements[],
                               const MPI_Datatype types[], MPI_Datatype *newtype) {
  const char *name = "MPI_Type_create_struct";
  NEED_LOWER(name);
  if (count < 0) return MPI_ERR_ARG;
  int64_t *array = malloc((size_t)(count ? count : 1) * 3 * sizeof *array);
  StasisMpiRealHandle *reals = malloc((size_t)(count ? count : 1) * sizeof *reals), made = 0;
  int rc = array && reals ? MPI_SUCCESS : MPI_ERR_INTERN;
  for (int i = 0; rc == MPI_SUCCESS && i < count; i++) {
    if (stasis_mpi_ids_index(&handles.datatypes, types[i]) < 0) rc = not_live(name, "datatype", types[i], MPI_ERR_TYPE);
    array[3 * i] = blocklengths[i];
    array[3 * i + 1] = displacements[i];
    array[3 * i + 2] = types[i];
  }
  if (rc == MPI_SUCCESS) {
    stasis_mpi_safe_point_enter(name);
    for (int i = 0; i < count; i++) reals[i] = REAL_NOW(handles.datatypes, types[i]);
    int lower_rc = LOWER_CALL_IN_REGION(lower, type_create_struct, count, blocklengths, (const int64_t *)displacements,
                                        reals, &made);
    rc = made_with_array(name, &handles.datatypes, STASIS_MPI_REPLAY_TYPE_STRUCT, 0, count, array,
                         (uint32_t)count * 3, made, lower_rc, newtype);
    stasis_mpi_safe_point_leave();
  }
  free(array);
  free(reals);
  return rc;
}

static int group_select(const char *name, int exclude, MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  NEED_LOWER(name);
  if (stasis_mpi_ids_index(&handles.groups, group) < 0) return not_live(name, "group", group, MPI_ERR_GROUP);
  if (n < 0) return MPI_ERR_ARG;
  int64_t *array = malloc((size_t)(n ? n : 1) * sizeof *array);
  if (!array) return MPI_ERR_INTERN;
  for (int i = 0; i < n; i++) array[i] = ranks[i];
  StasisMpiRealHandle made = 0;
  stasis_mpi_safe_point_enter(name);
  int lower_rc = LOWER_CALL_IN_REGION(lower, group_select, REAL_NOW(handles.groups, group), exclude, n, ranks, &made);
  int rc = made_with_array(name, &handles.groups, exclude ? STASIS_MPI_REPLAY_GROUP_EXCL : STASIS_MPI_REPLAY_GROUP_INCL,
                           group, 0, array, (uint32_t)n, made, lower_rc, newgroup);
  stasis_mpi_safe_point_leave();
  free(array);
  return rc;
}

API int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  return group_select("MPI_Group_incl", 0, group, n, ranks, newgroup);
}

API int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  return group_select("MPI_Group_excl", 1, group, n, ranks, newgroup);
}

API int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]) {
  NEED_LOWER("MPI_Group_translate_ranks");
  if (stasis_mpi_ids_index(&handles.groups, group1) < 0)
    return not_live("MPI_Group_translate_ranks", "group", group1, MPI_ERR_GROUP);
  if (stasis_mpi_ids_index(&handles.groups, group2) < 0)
    return not_live("MPI_Group_translate_ranks", "group", group2, MPI_ERR_GROUP);
  return library_error(LOWER_CALL(lower, group_translate_ranks, REAL_NOW(handles.groups, group1), n, ranks1,
                                  REAL_NOW(handles.groups, group2), ranks2));
}

API int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) {
  NEED_LOWER("MPI_Group_compare");
  if (stasis_mpi_ids_index(&handles.groups, group1) < 0)
    return not_live("MPI_Group_compare", "group", group1, MPI_ERR_GROUP);
  if (stasis_mpi_ids_index(&handles.groups, group2) < 0)
    return not_live("MPI_Group_compare", "group", group2, MPI_ERR_GROUP);
  return library_error(
      LOWER_CALL(lower, group_compare, REAL_NOW(handles.groups, group1), REAL_NOW(handles.groups, group2), result));
}

/* A ready send may always be a standard send (the standard says so): no mode of its own to replay. */
API int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return MPI_Send(buf, count, datatype, dest, tag, comm);
}
