/* The Open MPI ABI front's one-sided communication (../upper_rma.c; mpirma): Open MPI's signatures
 * forwarding to the split layer, as front.c does, with a table of their own. Lock types,
 * assertions, attribute keys, flavors and models are Open MPI's values in Stasis's interface too
 * (handles.c asserts them): they pass through. An info argument is not passed on (the split layer
 * ignores hints), so any the program holds is accepted.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */
#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Comm, MPI_Datatype, MPI_Op, MPI_Group, MPI_Win, MPI_Info;
typedef long MPI_Aint;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

static struct {
  int (*Alloc_mem)(MPI_Aint, int, void *);
  int (*Free_mem)(void *);
  int (*Win_create)(void *, MPI_Aint, int, int, int, int *);
  int (*Win_allocate)(MPI_Aint, int, int, int, void *, int *);
  int (*Win_allocate_shared)(MPI_Aint, int, int, int, void *, int *);
  int (*Win_shared_query)(int, int, MPI_Aint *, int *, void *);
  int (*Win_create_dynamic)(int, int, int *);
  int (*Win_attach)(int, void *, MPI_Aint);
  int (*Win_detach)(int, const void *);
  int (*Win_free)(int *);
  int (*Win_get_attr)(int, int, void *, int *);
  int (*Win_get_group)(int, int *);
  int (*Win_fence)(int, int);
  int (*Win_lock)(int, int, int, int);
  int (*Win_unlock)(int, int);
  int (*Win_lock_all)(int, int);
  int (*Win_unlock_all)(int);
  int (*Win_flush)(int, int);
  int (*Win_flush_all)(int);
  int (*Win_flush_local)(int, int);
  int (*Win_flush_local_all)(int);
  int (*Win_sync)(int);
  int (*Put)(const void *, int, int, int, MPI_Aint, int, int, int);
  int (*Get)(void *, int, int, int, MPI_Aint, int, int, int);
  int (*Accumulate)(const void *, int, int, int, MPI_Aint, int, int, int, int);
  int (*Get_accumulate)(const void *, int, int, void *, int, int, int, MPI_Aint, int, int, int, int);
  int (*Fetch_and_op)(const void *, void *, int, int, MPI_Aint, int, int);
  int (*Compare_and_swap)(const void *, const void *, void *, int, int, MPI_Aint, int);
} split;

#define RESOLVE(name) OMPI_ABI_RESOLVE(split, name)

__attribute__((constructor)) static void resolve_rma(void) {
  RESOLVE(Alloc_mem); RESOLVE(Free_mem); RESOLVE(Win_create); RESOLVE(Win_allocate); RESOLVE(Win_allocate_shared);
  RESOLVE(Win_shared_query); RESOLVE(Win_create_dynamic); RESOLVE(Win_attach); RESOLVE(Win_detach);
  RESOLVE(Win_free); RESOLVE(Win_get_attr); RESOLVE(Win_get_group); RESOLVE(Win_fence); RESOLVE(Win_lock);
  RESOLVE(Win_unlock); RESOLVE(Win_lock_all); RESOLVE(Win_unlock_all); RESOLVE(Win_flush); RESOLVE(Win_flush_all);
  RESOLVE(Win_flush_local); RESOLVE(Win_flush_local_all); RESOLVE(Win_sync); RESOLVE(Put); RESOLVE(Get);
  RESOLVE(Accumulate); RESOLVE(Get_accumulate); RESOLVE(Fetch_and_op); RESOLVE(Compare_and_swap);
}

/* The split layer's MPI_INFO_NULL (any info: hints are not passed on). */
#define NO_INFO 0

EXPORTED int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
  (void)info;
  return CLASS(split.Alloc_mem(size, NO_INFO, baseptr));
}
FORWARDED(MPI_Alloc_mem)
EXPORTED int MPI_Free_mem(void *base) { return CLASS(split.Free_mem(base)); }
FORWARDED(MPI_Free_mem)

EXPORTED int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
  (void)info;
  MAKES(win, split.Win_create(base, size, disp_unit, NO_INFO, VID(comm), &made));
}
FORWARDED(MPI_Win_create)
EXPORTED int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                              MPI_Win *win) {
  (void)info;
  MAKES(win, split.Win_allocate(size, disp_unit, NO_INFO, VID(comm), baseptr, &made));
}
FORWARDED(MPI_Win_allocate)
EXPORTED int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                     MPI_Win *win) {
  (void)info;
  MAKES(win, split.Win_allocate_shared(size, disp_unit, NO_INFO, VID(comm), baseptr, &made));
}
FORWARDED(MPI_Win_allocate_shared)
EXPORTED int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
  return CLASS(split.Win_shared_query(VID(win), rank, size, disp_unit, baseptr));
}
FORWARDED(MPI_Win_shared_query)
EXPORTED int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
  (void)info;
  MAKES(win, split.Win_create_dynamic(NO_INFO, VID(comm), &made));
}
FORWARDED(MPI_Win_create_dynamic)
EXPORTED int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) { return CLASS(split.Win_attach(VID(win), base, size)); }
FORWARDED(MPI_Win_attach)
EXPORTED int MPI_Win_detach(MPI_Win win, const void *base) { return CLASS(split.Win_detach(VID(win), base)); }
FORWARDED(MPI_Win_detach)
EXPORTED int MPI_Win_free(MPI_Win *win) { THROUGH(win, split.Win_free(&vid)); }
FORWARDED(MPI_Win_free)
EXPORTED int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag) {
  return CLASS(split.Win_get_attr(VID(win), keyval, attribute_val, flag));
}
FORWARDED(MPI_Win_get_attr)
EXPORTED int MPI_Win_get_group(MPI_Win win, MPI_Group *group) { MAKES(group, split.Win_get_group(VID(win), &made)); }
FORWARDED(MPI_Win_get_group)

EXPORTED int MPI_Win_fence(int assert, MPI_Win win) { return CLASS(split.Win_fence(assert, VID(win))); }
FORWARDED(MPI_Win_fence)
EXPORTED int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
  return CLASS(split.Win_lock(lock_type, rank, assert, VID(win)));
}
FORWARDED(MPI_Win_lock)
EXPORTED int MPI_Win_unlock(int rank, MPI_Win win) { return CLASS(split.Win_unlock(rank, VID(win))); }
FORWARDED(MPI_Win_unlock)
EXPORTED int MPI_Win_lock_all(int assert, MPI_Win win) { return CLASS(split.Win_lock_all(assert, VID(win))); }
FORWARDED(MPI_Win_lock_all)
EXPORTED int MPI_Win_unlock_all(MPI_Win win) { return CLASS(split.Win_unlock_all(VID(win))); }
FORWARDED(MPI_Win_unlock_all)
EXPORTED int MPI_Win_flush(int rank, MPI_Win win) { return CLASS(split.Win_flush(rank, VID(win))); }
FORWARDED(MPI_Win_flush)
EXPORTED int MPI_Win_flush_all(MPI_Win win) { return CLASS(split.Win_flush_all(VID(win))); }
FORWARDED(MPI_Win_flush_all)
EXPORTED int MPI_Win_flush_local(int rank, MPI_Win win) { return CLASS(split.Win_flush_local(rank, VID(win))); }
FORWARDED(MPI_Win_flush_local)
EXPORTED int MPI_Win_flush_local_all(MPI_Win win) { return CLASS(split.Win_flush_local_all(VID(win))); }
FORWARDED(MPI_Win_flush_local_all)
EXPORTED int MPI_Win_sync(MPI_Win win) { return CLASS(split.Win_sync(VID(win))); }
FORWARDED(MPI_Win_sync)

EXPORTED int MPI_Put(const void *origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                     int target_count, MPI_Datatype target_type, MPI_Win win) {
  return CLASS(split.Put(origin, origin_count, VID(origin_type), target, disp, target_count, VID(target_type), VID(win)));
}
FORWARDED(MPI_Put)
EXPORTED int MPI_Get(void *origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                     int target_count, MPI_Datatype target_type, MPI_Win win) {
  return CLASS(split.Get(origin, origin_count, VID(origin_type), target, disp, target_count, VID(target_type), VID(win)));
}
FORWARDED(MPI_Get)
EXPORTED int MPI_Accumulate(const void *origin, int origin_count, MPI_Datatype origin_type, int target, MPI_Aint disp,
                            int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
  return CLASS(split.Accumulate(origin, origin_count, VID(origin_type), target, disp, target_count, VID(target_type), VID(op),
                          VID(win)));
}
FORWARDED(MPI_Accumulate)
EXPORTED int MPI_Get_accumulate(const void *origin, int origin_count, MPI_Datatype origin_type, void *result,
                                int result_count, MPI_Datatype result_type, int target, MPI_Aint disp,
                                int target_count, MPI_Datatype target_type, MPI_Op op, MPI_Win win) {
  return CLASS(split.Get_accumulate(origin, origin_count, VID(origin_type), result, result_count, VID(result_type), target,
                              disp, target_count, VID(target_type), VID(op), VID(win)));
}
FORWARDED(MPI_Get_accumulate)
EXPORTED int MPI_Fetch_and_op(const void *origin, void *result, MPI_Datatype type, int target, MPI_Aint disp,
                              MPI_Op op, MPI_Win win) {
  return CLASS(split.Fetch_and_op(origin, result, VID(type), target, disp, VID(op), VID(win)));
}
FORWARDED(MPI_Fetch_and_op)
EXPORTED int MPI_Compare_and_swap(const void *origin, const void *compare, void *result, MPI_Datatype type,
                                  int target, MPI_Aint disp, MPI_Win win) {
  return CLASS(split.Compare_and_swap(origin, compare, result, VID(type), target, disp, VID(win)));
}
FORWARDED(MPI_Compare_and_swap)
