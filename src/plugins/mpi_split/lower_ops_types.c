/* The lower half's part of user reduction operations, struct datatypes and groups made from ranks
 * (part "mpiops" of issue 17; ../README.md). Included by lower_half.c, the only file that sees a
 * library's mpi.h, so that it is built once per library with it; it uses lower_half.c's
 * REAL/AS conversions and adds nothing but conversions.
 *
 * A user operation: the program's function lives in the upper half and takes the program's
 * datatype id, while the library calls a function of its own signature with ITS datatype handle.
 * So the library gets one of STASIS_MPI_LOWER_OP_SLOTS trampolines (the slot says which user
 * operation), which hands the upper half's callback the slot and the library's handle; the upper
 * half turns that handle into the program's id and calls the program (upper_ops_types.c). */

static void (*op_callback)(int slot, void *in, void *inout, int *length, StasisMpiRealHandle type);

#define OP_TRAMPOLINE(n)                                                                                        \
  static void op_trampoline_##n(void *in, void *inout, int *length, MPI_Datatype *type) {                      \
    op_callback(n, in, inout, length, REAL(*type));                                                             \
  }
OP_TRAMPOLINE(0) OP_TRAMPOLINE(1) OP_TRAMPOLINE(2) OP_TRAMPOLINE(3) OP_TRAMPOLINE(4) OP_TRAMPOLINE(5)
OP_TRAMPOLINE(6) OP_TRAMPOLINE(7) OP_TRAMPOLINE(8) OP_TRAMPOLINE(9) OP_TRAMPOLINE(10) OP_TRAMPOLINE(11)
OP_TRAMPOLINE(12) OP_TRAMPOLINE(13) OP_TRAMPOLINE(14) OP_TRAMPOLINE(15) OP_TRAMPOLINE(16) OP_TRAMPOLINE(17)
OP_TRAMPOLINE(18) OP_TRAMPOLINE(19) OP_TRAMPOLINE(20) OP_TRAMPOLINE(21) OP_TRAMPOLINE(22) OP_TRAMPOLINE(23)
OP_TRAMPOLINE(24) OP_TRAMPOLINE(25) OP_TRAMPOLINE(26) OP_TRAMPOLINE(27) OP_TRAMPOLINE(28) OP_TRAMPOLINE(29)
OP_TRAMPOLINE(30) OP_TRAMPOLINE(31)
static MPI_User_function *const op_trampolines[] = {
    op_trampoline_0,  op_trampoline_1,  op_trampoline_2,  op_trampoline_3,  op_trampoline_4,  op_trampoline_5,
    op_trampoline_6,  op_trampoline_7,  op_trampoline_8,  op_trampoline_9,  op_trampoline_10, op_trampoline_11,
    op_trampoline_12, op_trampoline_13, op_trampoline_14, op_trampoline_15, op_trampoline_16, op_trampoline_17,
    op_trampoline_18, op_trampoline_19, op_trampoline_20, op_trampoline_21, op_trampoline_22, op_trampoline_23,
    op_trampoline_24, op_trampoline_25, op_trampoline_26, op_trampoline_27, op_trampoline_28, op_trampoline_29,
    op_trampoline_30, op_trampoline_31};
_Static_assert(sizeof op_trampolines / sizeof op_trampolines[0] == STASIS_MPI_LOWER_OP_SLOTS,
               "one trampoline per user operation slot");

static int lower_op_create(int slot, int commute,
                           void (*callback)(int, void *, void *, int *, StasisMpiRealHandle),
                           StasisMpiRealHandle *made) {
  if (slot < 0 || slot >= STASIS_MPI_LOWER_OP_SLOTS || !callback) return MPI_ERR_ARG;
  op_callback = callback;
  MPI_Op op;
  int rc = MPI_Op_create(op_trampolines[slot], commute, &op);
  if (rc == MPI_SUCCESS) *made = REAL(op);
  return rc;
}

static int lower_op_free(StasisMpiRealHandle op) {
  MPI_Op freed = AS(MPI_Op, op);
  return MPI_Op_free(&freed);
}

/* The library's handles of `count` datatypes, in `out` (caller's array of count). */
static void datatypes_down(int count, const StasisMpiRealHandle *types, MPI_Datatype *out) {
  for (int i = 0; i < count; i++) out[i] = AS(MPI_Datatype, types[i]);
}

_Static_assert(sizeof(MPI_Aint) == sizeof(int64_t), "MPI_Aint of 64 bits (the displacements cross as int64_t)");
static int lower_type_create_struct(int count, const int *blocklengths, const int64_t *displacements,
                                    const StasisMpiRealHandle *types, StasisMpiRealHandle *made) {
  if (count < 0) return MPI_ERR_ARG;
  MPI_Datatype on_stack[64] = {0}, *library_types = count <= 64 ? on_stack : malloc((size_t)count * sizeof *library_types);
  if (!library_types) return MPI_ERR_INTERN;
  datatypes_down(count, types, library_types);
  MPI_Datatype type;
  int rc = MPI_Type_create_struct(count, blocklengths, (const MPI_Aint *)displacements, library_types, &type);
  if (library_types != on_stack) free(library_types);
  if (rc == MPI_SUCCESS) *made = REAL(type);
  return rc;
}

/* MPI_Group_incl (exclude 0) or MPI_Group_excl (exclude 1). */
static int lower_group_select(StasisMpiRealHandle group, int exclude, int n, const int *ranks,
                              StasisMpiRealHandle *made) {
  MPI_Group made_group;
  int rc = exclude ? MPI_Group_excl(AS(MPI_Group, group), n, ranks, &made_group)
                   : MPI_Group_incl(AS(MPI_Group, group), n, ranks, &made_group);
  if (rc == MPI_SUCCESS) *made = REAL(made_group);
  return rc;
}

/* ranks2[i]: the rank in group2 of rank ranks1[i] of group1; MPI_UNDEFINED as -32766 both ways,
 * MPI_PROC_NULL as -2. */
static int lower_group_translate_ranks(StasisMpiRealHandle group1, int n, const int *ranks1,
                                       StasisMpiRealHandle group2, int *ranks2) {
  int on_stack[64] = {0}, *library_ranks = n <= 64 ? on_stack : malloc((size_t)(n > 0 ? n : 1) * sizeof *library_ranks);
  if (!library_ranks) return MPI_ERR_INTERN;
  for (int i = 0; i < n; i++) library_ranks[i] = ranks1[i] == -2 ? MPI_PROC_NULL : ranks1[i];
  int rc = MPI_Group_translate_ranks(AS(MPI_Group, group1), n, library_ranks, AS(MPI_Group, group2), ranks2);
  for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
    ranks2[i] = ranks2[i] == MPI_PROC_NULL ? -2 : undefined_up(ranks2[i]);
  if (library_ranks != on_stack) free(library_ranks);
  return rc;
}

/* *result: 0 MPI_IDENT, 1 MPI_CONGRUENT, 2 MPI_SIMILAR, 3 MPI_UNEQUAL (abi/mpi.h's values). */
static int lower_group_compare(StasisMpiRealHandle group1, StasisMpiRealHandle group2, int *result) {
  int library_result = MPI_UNEQUAL;
  int rc = MPI_Group_compare(AS(MPI_Group, group1), AS(MPI_Group, group2), &library_result);
  *result = library_result == MPI_IDENT ? 0 : library_result == MPI_CONGRUENT ? 1 : library_result == MPI_SIMILAR ? 2 : 3;
  return rc;
}
