/* The lower half's one-sided communication (README.md, One-sided communication): windows, their
 * epochs and operations, converted between the neutral interface (lower_half_api.h) and the
 * library's handles and constants. Built into the lower half with lower_half.c; no state. */
#define _GNU_SOURCE
#include <mpi.h>

#include "lower_handles.h"
#include "lower_rma.h"

/* Lock types and assertions cross in Open MPI's values (abi/mpi.h); MPICH's differ. */
static int lock_type_down(int type) { return type == 1 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED; }
static int assert_down(int assert) {
  return (assert & 1 ? MPI_MODE_NOCHECK : 0) | (assert & 2 ? MPI_MODE_NOPRECEDE : 0) |
         (assert & 4 ? MPI_MODE_NOPUT : 0) | (assert & 8 ? MPI_MODE_NOSTORE : 0) |
         (assert & 16 ? MPI_MODE_NOSUCCEED : 0);
}

int lower_win_create(void *base, long size, int disp_unit, StasisMpiRealHandle comm, StasisMpiRealHandle *win,
                     int *model) {
  MPI_Win made = MPI_WIN_NULL;
  int rc = MPI_Win_create(base, (MPI_Aint)size, disp_unit, MPI_INFO_NULL, AS(MPI_Comm, comm), &made);
  *win = REAL(made);
  *model = 0;
  if (rc == MPI_SUCCESS) {
    int *value = 0, flag = 0;
    if (MPI_Win_get_attr(made, MPI_WIN_MODEL, &value, &flag) == MPI_SUCCESS && flag && value)
      *model = *value == MPI_WIN_UNIFIED;
  }
  return rc;
}

int lower_win_free(StasisMpiRealHandle *win) {
  MPI_Win real = AS(MPI_Win, *win);
  int rc = MPI_Win_free(&real);
  *win = REAL(real);
  return rc;
}

int lower_win_epoch(int kind, int lock_type, int target, int assert, StasisMpiRealHandle win) {
  MPI_Win w = AS(MPI_Win, win);
  switch (kind) {
    case STASIS_MPI_LOWER_FENCE: return MPI_Win_fence(assert_down(assert), w);
    case STASIS_MPI_LOWER_LOCK: return MPI_Win_lock(lock_type_down(lock_type), target, assert_down(assert), w);
    case STASIS_MPI_LOWER_UNLOCK: return MPI_Win_unlock(target, w);
    case STASIS_MPI_LOWER_LOCK_ALL: return MPI_Win_lock_all(assert_down(assert), w);
    case STASIS_MPI_LOWER_UNLOCK_ALL: return MPI_Win_unlock_all(w);
    case STASIS_MPI_LOWER_FLUSH: return MPI_Win_flush(target, w);
    case STASIS_MPI_LOWER_FLUSH_ALL: return MPI_Win_flush_all(w);
    case STASIS_MPI_LOWER_FLUSH_LOCAL: return MPI_Win_flush_local(target, w);
    case STASIS_MPI_LOWER_FLUSH_LOCAL_ALL: return MPI_Win_flush_local_all(w);
    case STASIS_MPI_LOWER_SYNC: return MPI_Win_sync(w);
    default: return MPI_ERR_ARG;
  }
}

int lower_win_access(const StasisMpiLowerAccess *a) {
  MPI_Win w = AS(MPI_Win, a->win);
  MPI_Datatype origin_type = AS(MPI_Datatype, a->origin_type), result_type = AS(MPI_Datatype, a->result_type),
               target_type = AS(MPI_Datatype, a->target_type);
  MPI_Op op = AS(MPI_Op, a->op);
  int target = peer_down(a->target);
  MPI_Aint disp = (MPI_Aint)a->target_disp;
  switch (a->kind) {
    case STASIS_MPI_LOWER_PUT:
      return MPI_Put(a->origin, a->origin_count, origin_type, target, disp, a->target_count, target_type, w);
    case STASIS_MPI_LOWER_GET:
      return MPI_Get(a->result, a->result_count, result_type, target, disp, a->target_count, target_type, w);
    case STASIS_MPI_LOWER_ACCUMULATE:
      return MPI_Accumulate(a->origin, a->origin_count, origin_type, target, disp, a->target_count, target_type, op,
                            w);
    case STASIS_MPI_LOWER_GET_ACCUMULATE:
      return MPI_Get_accumulate(a->origin, a->origin_count, origin_type, a->result, a->result_count, result_type,
                                target, disp, a->target_count, target_type, op, w);
    case STASIS_MPI_LOWER_FETCH_AND_OP:
      return MPI_Fetch_and_op(a->origin, a->result, origin_type, target, disp, op, w);
    case STASIS_MPI_LOWER_COMPARE_AND_SWAP:
      return MPI_Compare_and_swap(a->origin, a->compare, a->result, origin_type, target, disp, w);
    default: return MPI_ERR_ARG;
  }
}

int lower_win_allocate_shared(long size, int disp_unit, StasisMpiRealHandle comm, void *baseptr,
                              StasisMpiRealHandle *win) {
  MPI_Win made = MPI_WIN_NULL;
  int rc = MPI_Win_allocate_shared((MPI_Aint)size, disp_unit, MPI_INFO_NULL, AS(MPI_Comm, comm), baseptr, &made);
  *win = REAL(made);
  return rc;
}

int lower_win_shared_query(StasisMpiRealHandle win, int rank, long *size, int *disp_unit, void *baseptr) {
  MPI_Aint real_size = 0;
  int rc = MPI_Win_shared_query(AS(MPI_Win, win), peer_down(rank), &real_size, disp_unit, baseptr);
  *size = (long)real_size;
  return rc;
}

int lower_win_create_dynamic(StasisMpiRealHandle comm, StasisMpiRealHandle *win) {
  MPI_Win made = MPI_WIN_NULL;
  int rc = MPI_Win_create_dynamic(MPI_INFO_NULL, AS(MPI_Comm, comm), &made);
  *win = REAL(made);
  return rc;
}

int lower_win_attach(StasisMpiRealHandle win, void *base, long size) {
  return MPI_Win_attach(AS(MPI_Win, win), base, (MPI_Aint)size);
}

int lower_win_detach(StasisMpiRealHandle win, const void *base) { return MPI_Win_detach(AS(MPI_Win, win), base); }
