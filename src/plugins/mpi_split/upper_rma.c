/* One-sided communication (README.md, One-sided communication): windows under virtual ids, over
 * memory of the upper half, their epochs kept here so that a checkpoint can complete every
 * operation in flight and a restart can make each window again over the same memory and open
 * again the epochs each rank held. Part of libstasis_mpi.so. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lower_tls.h"
#include "upper_state.h"

enum { HELD_LOCKS = 64 };

/* A window as the program made it, and the epochs this rank holds on it. Static storage: saved
 * with the program; the attribute values are read through pointers into it (MPI_Win_get_attr). */
typedef struct Window {
  int comm;           /* the window's communicator: the program's, duplicated (replayed); its fences' barrier */
  void *base;         /* the program's memory (MPI_Win_allocate's mapping: `mapped`) */
  MPI_Aint size;
  int disp_unit;
  int flavor;         /* MPI_WIN_FLAVOR_* */
  int model;          /* MPI_WIN_UNIFIED or _SEPARATE, as the library that made it said */
  size_t mapped;      /* the length MPI_Win_allocate mapped at base, else 0 */
  uint64_t made;      /* creation order: windows are made again, fenced and flushed in it */
  const char *served; /* MPI_Win_allocate_shared or _create_dynamic: such a window refuses checkpoints */
  int fence_open;     /* the last fence did not say MPI_MODE_NOSUCCEED: a fence epoch is open */
  int lock_all, lock_all_assert;
  int lock_count;
  struct { int target, type, assert; } locks[HELD_LOCKS];
} Window;

static StasisMpiIdEntry window_entries[WINDOW_CAPACITY];
static StasisMpiIdTable windows;
static Window window_state[WINDOW_CAPACITY];
static uint64_t windows_made;

static void windows_init(void) {
  if (!windows.entries) stasis_mpi_ids_init(&windows, STASIS_MPI_KIND_WIN, window_entries, WINDOW_CAPACITY, STASIS_MPI_PREDEFINED_WIN_COUNT);
}

/* The state of live window `win` made by the program, or NULL (said, naming the function). */
static Window *window_of(const char *function, MPI_Win win, int64_t *index) {
  windows_init();
  int64_t found = stasis_mpi_ids_index(&windows, win);
  if (found < 1) {
    not_live(function, "window", win, MPI_ERR_WIN);
    return NULL;
  }
  if (index) *index = found;
  return &window_state[found];
}

#define WINDOW(function, win, out, index)                                                                       \
  int64_t index;                                                                                                \
  Window *out = window_of(function, win, &index);                                                               \
  if (!out) return MPI_ERR_WIN
/* The handle of the moment (read inside the region: a restart may have come while held). */
#define WIN_NOW(index) (windows.entries[index].real)
#define TYPE_NOW(id) (handles.datatypes.entries[stasis_mpi_ids_index(&handles.datatypes, (id))].real)

static int live_type(const char *function, MPI_Datatype type) {
  return stasis_mpi_ids_index(&handles.datatypes, type) < 1 ? not_live(function, "datatype", type, MPI_ERR_TYPE)
                                                            : MPI_SUCCESS;
}
static int live_op(const char *function, MPI_Op op) {
  return stasis_mpi_ids_index(&handles.ops, op) < 1 ? not_live(function, "operation", op, MPI_ERR_OP) : MPI_SUCCESS;
}

/* Memory for windows and MPI_Alloc_mem is the program's: the library's would be left out of the
 * image with the lower half. */
API int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
  (void)info;
  void *memory = NULL;
  if (size < 0 || posix_memalign(&memory, 64, size ? (size_t)size : 1) != 0) {
    complain("MPI_Alloc_mem", "no memory of that size");
    return MPI_ERR_OTHER; /* MPI_ERR_NO_MEM is not in every library's numbering */
  }
  *(void **)baseptr = memory;
  return MPI_SUCCESS;
}

API int MPI_Free_mem(void *base) {
  free(base);
  return MPI_SUCCESS;
}

/* Makes the library's window over the program's memory, under a new id; the window's
 * communicator is a duplicate of comm (replayed at a restart). Collective. */
static int make_window(const char *function, void *base, MPI_Aint size, int disp_unit, MPI_Comm comm, int flavor,
                       size_t mapped, MPI_Win *win) {
  NEED_LOWER(function);
  windows_init();
  if (size < 0 || disp_unit <= 0) {
    complain(function, "a negative size or a disp_unit below 1");
    return MPI_ERR_ARG;
  }
  MPI_Comm own;
  int rc = MPI_Comm_dup(comm, &own);
  if (rc != MPI_SUCCESS) return rc;
  StasisMpiRealHandle real = 0;
  int model = 0, id = MPI_WIN_NULL;
  /* One region: the library's window and its id together. */
  stasis_mpi_safe_point_enter(function);
  rc = LOWER_CALL_IN_REGION(lower, win_create, base, (long)size, disp_unit,
                            handles.comms.entries[stasis_mpi_ids_index(&handles.comms, own)].real, &real, &model);
  if (rc == 0 && stasis_mpi_ids_add(&windows, real, &id) != 0) {
    LOWER_CALL_IN_REGION(lower, win_free, &real);
    complain(function, "too many live windows for the split layer's table");
    rc = -1;
  }
  if (rc == 0) {
    Window *w = &window_state[stasis_mpi_ids_index(&windows, id)];
    memset(w, 0, sizeof *w);
    *w = (Window){.comm = own, .base = base, .size = size, .disp_unit = disp_unit, .flavor = flavor,
                  .model = model ? MPI_WIN_UNIFIED : MPI_WIN_SEPARATE, .mapped = mapped, .made = ++windows_made};
  }
  stasis_mpi_safe_point_leave();
  if (rc != 0) {
    MPI_Comm_free(&own);
    return rc == -1 ? MPI_ERR_INTERN : library_error(rc);
  }
  *win = id;
  return MPI_SUCCESS;
}

API int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
  (void)info;
  return make_window("MPI_Win_create", base, size, disp_unit, comm, MPI_WIN_FLAVOR_CREATE, 0, win);
}

API int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win) {
  (void)info;
  if (size < 0) return make_window("MPI_Win_allocate", NULL, size, disp_unit, comm, MPI_WIN_FLAVOR_ALLOCATE, 0, win);
  size_t length = size ? (size_t)size : 1;
  void *memory = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    complain("MPI_Win_allocate", "cannot map the window's memory");
    return MPI_ERR_OTHER;
  }
  int rc = make_window("MPI_Win_allocate", memory, size, disp_unit, comm, MPI_WIN_FLAVOR_ALLOCATE, length, win);
  if (rc != MPI_SUCCESS) {
    munmap(memory, length);
    return rc;
  }
  *(void **)baseptr = memory;
  return MPI_SUCCESS;
}

/* Windows whose memory (shared) or layout (dynamic) the library keeps: served, and a checkpoint
 * is refused while one is live (stasis_mpi_rma_refusal). */
static int serve_window(const char *function, int flavor, StasisMpiRealHandle real, void *base, MPI_Aint size,
                        int disp_unit, MPI_Win *win) {
  int id = MPI_WIN_NULL;
  if (stasis_mpi_ids_add(&windows, real, &id) != 0) {
    LOWER_CALL_IN_REGION(lower, win_free, &real);
    complain(function, "too many live windows for the split layer's table");
    return MPI_ERR_INTERN;
  }
  Window *w = &window_state[stasis_mpi_ids_index(&windows, id)];
  memset(w, 0, sizeof *w);
  w->comm = MPI_COMM_NULL;
  w->base = base;
  w->size = size;
  w->disp_unit = disp_unit;
  w->flavor = flavor;
  w->model = MPI_WIN_UNIFIED;
  w->made = ++windows_made;
  w->served = function;
  *win = id;
  return MPI_SUCCESS;
}

/* A window the library makes (shared: size, disp_unit, baseptr; dynamic: none), served. */
static int library_window(const char *function, int flavor, MPI_Aint size, int disp_unit, MPI_Comm comm,
                          void *baseptr, MPI_Win *win) {
  NEED_LOWER(function);
  windows_init();
  if (stasis_mpi_ids_index(&handles.comms, comm) < 1) return not_live(function, "communicator", comm, MPI_ERR_COMM);
  StasisMpiRealHandle real = 0;
  stasis_mpi_safe_point_enter(function);
  StasisMpiRealHandle real_comm = handles.comms.entries[stasis_mpi_ids_index(&handles.comms, comm)].real;
  int rc = flavor == MPI_WIN_FLAVOR_SHARED
               ? LOWER_CALL_IN_REGION(lower, win_allocate_shared, (long)size, disp_unit, real_comm, baseptr, &real)
               : LOWER_CALL_IN_REGION(lower, win_create_dynamic, real_comm, &real);
  if (rc == 0)
    rc = serve_window(function, flavor, real, baseptr ? *(void **)baseptr : MPI_BOTTOM, size, disp_unit, win);
  else
    rc = library_error(rc);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                MPI_Win *win) {
  (void)info;
  return library_window("MPI_Win_allocate_shared", MPI_WIN_FLAVOR_SHARED, size, disp_unit, comm, baseptr, win);
}

API int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
  (void)info;
  return library_window("MPI_Win_create_dynamic", MPI_WIN_FLAVOR_DYNAMIC, 0, 1, comm, NULL, win);
}

API int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
  WINDOW("MPI_Win_shared_query", win, w, index);
  (void)w;
  long got = 0;
  stasis_mpi_safe_point_enter("MPI_Win_shared_query");
  int rc = LOWER_CALL_IN_REGION(lower, win_shared_query, WIN_NOW(index), rank, &got, disp_unit, baseptr);
  stasis_mpi_safe_point_leave();
  *size = (MPI_Aint)got;
  return library_error(rc);
}

API int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) {
  WINDOW("MPI_Win_attach", win, w, index);
  (void)w;
  stasis_mpi_safe_point_enter("MPI_Win_attach");
  int rc = LOWER_CALL_IN_REGION(lower, win_attach, WIN_NOW(index), base, (long)size);
  stasis_mpi_safe_point_leave();
  return library_error(rc);
}

API int MPI_Win_detach(MPI_Win win, const void *base) {
  WINDOW("MPI_Win_detach", win, w, index);
  (void)w;
  stasis_mpi_safe_point_enter("MPI_Win_detach");
  int rc = LOWER_CALL_IN_REGION(lower, win_detach, WIN_NOW(index), base);
  stasis_mpi_safe_point_leave();
  return library_error(rc);
}

/* Collective, and the library's free waits for every member: the members meet at a barrier of
 * the window's communicator first, where a checkpoint can stop them. */
API int MPI_Win_free(MPI_Win *win) {
  static const char function[] = "MPI_Win_free";
  NEED_LOWER(function);
  WINDOW(function, *win, w, index);
  int rc = stasis_mpi_attributes_delete_all(*win); /* the attributes' delete functions first */
  if (rc == MPI_SUCCESS && !w->served) rc = MPI_Barrier(w->comm);
  if (rc != MPI_SUCCESS) return rc;
  stasis_mpi_safe_point_enter(function);
  StasisMpiRealHandle real = WIN_NOW(index);
  rc = LOWER_CALL_IN_REGION(lower, win_free, &real);
  Window freed = *w;
  if (rc == 0) stasis_mpi_ids_remove(&windows, *win);
  stasis_mpi_safe_point_leave();
  if (rc != 0) return library_error(rc);
  if (freed.mapped) munmap(freed.base, freed.mapped);
  *win = MPI_WIN_NULL;
  return freed.served ? MPI_SUCCESS : MPI_Comm_free(&freed.comm);
}

API int MPI_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag) {
  WINDOW("MPI_Win_get_attr", win, w, index);
  (void)index;
  *flag = 1;
  switch (keyval) {
    case MPI_WIN_BASE: *(void **)attribute_val = w->base; break;
    case MPI_WIN_SIZE: *(MPI_Aint **)attribute_val = &w->size; break;
    case MPI_WIN_DISP_UNIT: *(int **)attribute_val = &w->disp_unit; break;
    case MPI_WIN_CREATE_FLAVOR: *(int **)attribute_val = &w->flavor; break;
    case MPI_WIN_MODEL: *(int **)attribute_val = &w->model; break;
    default: return stasis_mpi_window_attribute(win, keyval, attribute_val, flag); /* the program's keyvals */
  }
  return MPI_SUCCESS;
}

API int MPI_Win_get_group(MPI_Win win, MPI_Group *group) {
  WINDOW("MPI_Win_get_group", win, w, index);
  (void)index;
  if (w->served) {
    complain("MPI_Win_get_group", "not offered for windows of MPI_Win_allocate_shared or MPI_Win_create_dynamic");
    return MPI_ERR_WIN;
  }
  return MPI_Comm_group(w->comm, group);
}

/* An epoch call in one region with the state it changes (a checkpoint reads that state). */
static int epoch_call(const char *function, MPI_Win win, int kind, int lock_type, int target, int assert) {
  NEED_LOWER(function);
  WINDOW(function, win, w, index);
  if (kind == STASIS_MPI_LOWER_LOCK && w->lock_count == HELD_LOCKS) {
    complain(function, "more locks held on one window than the split layer keeps (64)");
    return MPI_ERR_INTERN;
  }
  stasis_mpi_safe_point_enter(function);
  int rc = LOWER_CALL_IN_REGION(lower, win_epoch, kind, lock_type, target, assert, WIN_NOW(index));
  if (rc == 0) {
    switch (kind) {
      case STASIS_MPI_LOWER_FENCE: w->fence_open = !(assert & MPI_MODE_NOSUCCEED); break;
      case STASIS_MPI_LOWER_LOCK_ALL: w->lock_all = 1, w->lock_all_assert = assert; break;
      case STASIS_MPI_LOWER_UNLOCK_ALL: w->lock_all = 0; break;
      case STASIS_MPI_LOWER_LOCK:
        w->locks[w->lock_count].target = target;
        w->locks[w->lock_count].type = lock_type;
        w->locks[w->lock_count++].assert = assert;
        break;
      case STASIS_MPI_LOWER_UNLOCK:
        for (int i = 0; i < w->lock_count; i++)
          if (w->locks[i].target == target) {
            w->locks[i] = w->locks[--w->lock_count];
            break;
          }
        break;
      default: break;
    }
  }
  stasis_mpi_safe_point_leave();
  return library_error(rc);
}

/* The members meet at a barrier of the window's communicator first, where a checkpoint can stop
 * them: the library's fence then finds every member arrived. */
API int MPI_Win_fence(int assert, MPI_Win win) {
  WINDOW("MPI_Win_fence", win, w, index);
  (void)index;
  if (!w->served) {
    int rc = MPI_Barrier(w->comm);
    if (rc != MPI_SUCCESS) return rc;
  }
  return epoch_call("MPI_Win_fence", win, STASIS_MPI_LOWER_FENCE, 0, 0, assert);
}
API int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
  return epoch_call("MPI_Win_lock", win, STASIS_MPI_LOWER_LOCK, lock_type, rank, assert);
}
API int MPI_Win_unlock(int rank, MPI_Win win) {
  return epoch_call("MPI_Win_unlock", win, STASIS_MPI_LOWER_UNLOCK, 0, rank, 0);
}
API int MPI_Win_lock_all(int assert, MPI_Win win) {
  return epoch_call("MPI_Win_lock_all", win, STASIS_MPI_LOWER_LOCK_ALL, 0, 0, assert);
}
API int MPI_Win_unlock_all(MPI_Win win) {
  return epoch_call("MPI_Win_unlock_all", win, STASIS_MPI_LOWER_UNLOCK_ALL, 0, 0, 0);
}
API int MPI_Win_flush(int rank, MPI_Win win) {
  return epoch_call("MPI_Win_flush", win, STASIS_MPI_LOWER_FLUSH, 0, rank, 0);
}
API int MPI_Win_flush_all(MPI_Win win) { return epoch_call("MPI_Win_flush_all", win, STASIS_MPI_LOWER_FLUSH_ALL, 0, 0, 0); }
API int MPI_Win_flush_local(int rank, MPI_Win win) {
  return epoch_call("MPI_Win_flush_local", win, STASIS_MPI_LOWER_FLUSH_LOCAL, 0, rank, 0);
}
API int MPI_Win_flush_local_all(MPI_Win win) {
  return epoch_call("MPI_Win_flush_local_all", win, STASIS_MPI_LOWER_FLUSH_LOCAL_ALL, 0, 0, 0);
}
API int MPI_Win_sync(MPI_Win win) { return epoch_call("MPI_Win_sync", win, STASIS_MPI_LOWER_SYNC, 0, 0, 0); }

/* An RMA operation: the ids checked, then the handles of the moment read in its region. */
static int access_call(const char *function, StasisMpiLowerAccess access, MPI_Win win, MPI_Datatype origin_type,
                       MPI_Datatype result_type, MPI_Datatype target_type, MPI_Op op) {
  NEED_LOWER(function);
  WINDOW(function, win, w, index);
  (void)w;
  int rc = live_type(function, origin_type);
  if (rc == MPI_SUCCESS && result_type) rc = live_type(function, result_type);
  if (rc == MPI_SUCCESS && target_type) rc = live_type(function, target_type);
  if (rc == MPI_SUCCESS && op) rc = live_op(function, op);
  if (rc != MPI_SUCCESS) return rc;
  stasis_mpi_safe_point_enter(function);
  access.win = WIN_NOW(index);
  access.origin_type = TYPE_NOW(origin_type);
  access.result_type = result_type ? TYPE_NOW(result_type) : 0;
  access.target_type = target_type ? TYPE_NOW(target_type) : 0;
  access.op = op ? handles.ops.entries[stasis_mpi_ids_index(&handles.ops, op)].real : 0;
  rc = LOWER_CALL_IN_REGION(lower, win_access, &access);
  stasis_mpi_safe_point_leave();
  return library_error(rc);
}

API int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  StasisMpiLowerAccess a = {.kind = STASIS_MPI_LOWER_PUT, .origin = origin_addr, .origin_count = origin_count,
                            .target = target_rank, .target_disp = target_disp, .target_count = target_count};
  return access_call("MPI_Put", a, win, origin_datatype, 0, target_datatype, 0);
}

API int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  /* The lower half reads a Get's buffer and type as the result's. */
  StasisMpiLowerAccess a = {.kind = STASIS_MPI_LOWER_GET, .result = origin_addr, .result_count = origin_count,
                            .target = target_rank, .target_disp = target_disp, .target_count = target_count};
  return access_call("MPI_Get", a, win, origin_datatype, origin_datatype, target_datatype, 0);
}

API int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                       MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  StasisMpiLowerAccess a = {.kind = STASIS_MPI_LOWER_ACCUMULATE, .origin = origin_addr, .origin_count = origin_count,
                            .target = target_rank, .target_disp = target_disp, .target_count = target_count};
  return access_call("MPI_Accumulate", a, win, origin_datatype, 0, target_datatype, op);
}

API int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
                           int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                           int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  StasisMpiLowerAccess a = {.kind = STASIS_MPI_LOWER_GET_ACCUMULATE, .origin = origin_addr,
                            .origin_count = origin_count, .result = result_addr, .result_count = result_count,
                            .target = target_rank, .target_disp = target_disp, .target_count = target_count};
  /* MPI_NO_OP ignores the origin: its datatype may be any, the result's stands in. */
  return access_call("MPI_Get_accumulate", a, win, op == MPI_NO_OP ? result_datatype : origin_datatype,
                     result_datatype, target_datatype, op);
}

API int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                         MPI_Aint target_disp, MPI_Op op, MPI_Win win) {
  StasisMpiLowerAccess a = {.kind = STASIS_MPI_LOWER_FETCH_AND_OP, .origin = origin_addr, .result = result_addr,
                            .target = target_rank, .target_disp = target_disp};
  return access_call("MPI_Fetch_and_op", a, win, datatype, 0, 0, op);
}

API int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                             MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win) {
  StasisMpiLowerAccess a = {.kind = STASIS_MPI_LOWER_COMPARE_AND_SWAP, .origin = origin_addr,
                            .compare = compare_addr, .result = result_addr, .target = target_rank,
                            .target_disp = target_disp};
  return access_call("MPI_Compare_and_swap", a, win, datatype, 0, 0, 0);
}

/* The live windows in creation order (the order every member made them: creation is collective),
 * into order[]; returns how many. */
static int windows_in_order(int64_t order[WINDOW_CAPACITY]) {
  int count = 0;
  windows_init();
  for (uint32_t index = 1; index < windows.next_unused; index++) {
    if (!windows.entries[index].live) continue;
    int at = count++;
    while (at > 0 && window_state[order[at - 1]].made > window_state[index].made) {
      order[at] = order[at - 1];
      at--;
    }
    order[at] = index;
  }
  return count;
}

const char *stasis_mpi_rma_refusal(void) {
  int64_t order[WINDOW_CAPACITY];
  int count = windows_in_order(order);
  for (int i = 0; i < count; i++)
    if (window_state[order[i]].served) return window_state[order[i]].served;
  return NULL;
}

/* At the checkpoint's drain, every rank's checkpoint thread at once, the program's threads out
 * of the library: an open fence epoch is fenced (collective: every member holds the same fence
 * state, and fences in creation order), a passive one flushed. Every operation in flight is then
 * complete at its origin and target before the drain barrier ends, so before any image. */
int stasis_mpi_rma_complete(int *completed, char *error, size_t error_size) {
  int64_t order[WINDOW_CAPACITY];
  int count = windows_in_order(order);
  *completed = 0;
  for (int i = 0; i < count; i++) {
    Window *w = &window_state[order[i]];
    int kind = w->fence_open ? STASIS_MPI_LOWER_FENCE
               : w->lock_all || w->lock_count ? STASIS_MPI_LOWER_FLUSH_ALL
                                              : -1;
    if (kind < 0) continue;
    if (LOWER_CALL(lower, win_epoch, kind, 0, 0, 0, windows.entries[order[i]].real) != 0) {
      snprintf(error, error_size, "the library's %s on window 0x%x failed",
               kind == STASIS_MPI_LOWER_FENCE ? "MPI_Win_fence" : "MPI_Win_flush_all",
               (unsigned)STASIS_MPI_VID(STASIS_MPI_KIND_WIN, order[i]));
      return -1;
    }
    ++*completed;
  }
  return 0;
}

/* After a restart, in the fresh library: every window made again over the same memory under its
 * id, in creation order (collective over each window's communicator, made again by the replay),
 * then the epochs this rank held opened again: a fence epoch by a fence, lock_all and each lock
 * with the program's arguments. */
int stasis_mpi_rma_restarted(int *remade, char *error, size_t error_size) {
  int64_t order[WINDOW_CAPACITY];
  int count = windows_in_order(order);
  *remade = count;
  for (int i = 0; i < count; i++) {
    Window *w = &window_state[order[i]];
    unsigned id = (unsigned)STASIS_MPI_VID(STASIS_MPI_KIND_WIN, order[i]);
    StasisMpiRealHandle comm, real = 0;
    int model = 0;
    if (w->served || stasis_mpi_ids_real(&handles.comms, w->comm, &comm) != 0) {
      snprintf(error, error_size, "window 0x%x: %s", id,
               w->served ? "a window the library's memory holds was saved" : "its communicator was not made again");
      return -1;
    }
    if (LOWER_CALL(lower, win_create, w->base, (long)w->size, w->disp_unit, comm, &real, &model) != 0) {
      snprintf(error, error_size, "the fresh library refused to make window 0x%x again", id);
      return -1;
    }
    stasis_mpi_ids_bind(&windows, STASIS_MPI_VID(STASIS_MPI_KIND_WIN, order[i]), real);
  }
  for (int i = 0; i < count; i++) {
    Window *w = &window_state[order[i]];
    StasisMpiRealHandle real = windows.entries[order[i]].real;
    int rc = w->fence_open ? LOWER_CALL(lower, win_epoch, STASIS_MPI_LOWER_FENCE, 0, 0, 0, real) : 0;
    if (rc == 0 && w->lock_all)
      rc = LOWER_CALL(lower, win_epoch, STASIS_MPI_LOWER_LOCK_ALL, 0, 0, w->lock_all_assert, real);
    for (int l = 0; rc == 0 && l < w->lock_count; l++)
      rc = LOWER_CALL(lower, win_epoch, STASIS_MPI_LOWER_LOCK, w->locks[l].type, w->locks[l].target,
                      w->locks[l].assert, real);
    if (rc != 0) {
      snprintf(error, error_size, "the fresh library refused to open window 0x%x's epochs again",
               (unsigned)STASIS_MPI_VID(STASIS_MPI_KIND_WIN, order[i]));
      return -1;
    }
  }
  return 0;
}
