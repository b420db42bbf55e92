/* The Open MPI ABI front's user reduction operations, struct datatypes, groups made from ranks and
 * ready sends (part "mpiops"; ../upper_ops_types.c), and MPI_Testall (../upper_testall.c): Open MPI's signatures forwarding to the
 * split layer, as front.c does, with a table of their own.
 *
 * A user operation of the program takes Open MPI's datatype handle: the split layer calls
 * call_program_op with the program's datatype id and the program's function as its context, and
 * the program's function gets the front's handle for that id.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include <stdint.h>
#include <stdlib.h>

#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Group, MPI_Op, MPI_Request;
typedef intptr_t MPI_Aint;
typedef void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef void WithContext(void *invec, void *inoutvec, int *len, int *datatype, void *context);

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

static struct {
  int (*Op_create_with_context)(WithContext *, void *, int, int *);
  int (*Op_free)(int *);
  int (*Type_create_struct)(int, const int[], const MPI_Aint[], const int[], int *);
  int (*Group_incl)(int, int, const int[], int *);
  int (*Group_excl)(int, int, const int[], int *);
  int (*Group_translate_ranks)(int, int, const int[], int, int[]);
  int (*Group_compare)(int, int, int *);
  int (*Rsend)(const void *, int, int, int, int, int);
  int (*Testall)(int, int[], int *, MPI_Status[]);
} split;

__attribute__((constructor)) static void resolve_ops(void) {
  *(void **)&split.Op_create_with_context = ompi_abi_split_function("STASIS_MPI_Op_create_with_context");
  OMPI_ABI_RESOLVE(split, Op_free);
  OMPI_ABI_RESOLVE(split, Type_create_struct);
  OMPI_ABI_RESOLVE(split, Group_incl);
  OMPI_ABI_RESOLVE(split, Group_excl);
  OMPI_ABI_RESOLVE(split, Group_translate_ranks);
  OMPI_ABI_RESOLVE(split, Group_compare);
  OMPI_ABI_RESOLVE(split, Rsend);
  OMPI_ABI_RESOLVE(split, Testall);
}

static void call_program_op(void *invec, void *inoutvec, int *len, int *datatype, void *context) {
  MPI_Datatype handle = ompi_abi_handle("a user operation", *datatype);
  ((MPI_User_function *)context)(invec, inoutvec, len, &handle);
}

EXPORTED int MPI_Op_create(MPI_User_function *function, int commute, MPI_Op *op) {
  MAKES(op, split.Op_create_with_context(call_program_op, (void *)function, commute, &made));
}
FORWARDED(MPI_Op_create)
EXPORTED int MPI_Op_free(MPI_Op *op) { THROUGH(op, split.Op_free(&vid)); }
FORWARDED(MPI_Op_free)

EXPORTED int MPI_Type_create_struct(int count, const int blocklengths[], const MPI_Aint displacements[],
                                    const MPI_Datatype types[], MPI_Datatype *newtype) {
  if (count < 0) return OMPI_ABI_ERR_ARG;
  int on_stack[64] = {0}, *ids = count <= 64 ? on_stack : malloc((size_t)count * sizeof *ids);
  if (!ids) ompi_abi_fatal(__func__, "no memory for the datatypes' ids");
  for (int i = 0; i < count; i++) ids[i] = VID(types[i]);
  int made = 0;
  int rc = CLASS(split.Type_create_struct(count, blocklengths, displacements, ids, &made));
  if (ids != on_stack) free(ids);
  if (rc == OMPI_ABI_SUCCESS) *newtype = HANDLE(made);
  return rc;
}
FORWARDED(MPI_Type_create_struct)

EXPORTED int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  MAKES(newgroup, split.Group_incl(VID(group), n, ranks, &made));
}
FORWARDED(MPI_Group_incl)
EXPORTED int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup) {
  MAKES(newgroup, split.Group_excl(VID(group), n, ranks, &made));
}
FORWARDED(MPI_Group_excl)
EXPORTED int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]) {
  return CLASS(split.Group_translate_ranks(VID(group1), n, ranks1, VID(group2), ranks2));
}
FORWARDED(MPI_Group_translate_ranks)
EXPORTED int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result) {
  return CLASS(split.Group_compare(VID(group1), VID(group2), result));
}
FORWARDED(MPI_Group_compare)

EXPORTED int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return CLASS(split.Rsend(buf, count, VID(datatype), dest, tag, VID(comm)));
}
FORWARDED(MPI_Rsend)

EXPORTED int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  WITH_REQUEST_IDS(count, requests, STATUSES_FILLED(statuses, *flag ? count : 0, split.Testall(count, ids, flag, statuses)));
}
FORWARDED(MPI_Testall)
