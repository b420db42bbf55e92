/* Calls into the lower half with the lower half's thread pointer (README.md, Where the lower half
 * lives). When the lower half is a program of its own (lower_program.c), it has its own libc and
 * TLS: each call from the upper half sets the FS base to the lower half's for the call and back
 * to the caller's after. When it was loaded into the program (dlopen) the two share one libc and
 * stasis_mpi_lower_tls is 0: nothing is switched. */
#ifndef STASIS_MPI_LOWER_TLS_H
#define STASIS_MPI_LOWER_TLS_H

#include <stdatomic.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

extern uint64_t stasis_mpi_lower_tls; /* the lower half's FS base; 0: shared libc */
extern int stasis_mpi_fsgsbase;       /* the CPU and kernel let user space write the FS base */

void stasis_mpi_set_fs_base(uint64_t base);
uint64_t stasis_mpi_get_fs_base(void);

/* The upper half's FS base of the thread last gone into the lower half: where a user reduction
 * operation, called back from inside the library, runs the program's function
 * (upper_ops_types.c). One word for the process: right while one thread at a time calls MPI
 * (MPI_THREAD_SERIALIZED, the most the split mode offers). */
extern uint64_t stasis_mpi_upper_tls_inside;

static inline uint64_t stasis_mpi_enter_lower(void) {
  if (!stasis_mpi_lower_tls) return 0;
  uint64_t upper = stasis_mpi_get_fs_base();
  stasis_mpi_upper_tls_inside = upper;
  stasis_mpi_set_fs_base(stasis_mpi_lower_tls);
  return upper;
}

static inline void stasis_mpi_leave_lower(uint64_t upper) {
  if (upper) stasis_mpi_set_fs_base(upper);
}

/* The split checkpoint's safe point (upper_checkpoint.c): while a checkpoint is pending, no
 * thread of the program enters the lower half (it waits here, in the upper half, where the
 * checkpoint's signal can stop it), but the checkpoint thread itself (the drain, the inventory).
 * The checkpoint goes on once no call is inside. Cost of a call: two atomic additions. */
extern _Atomic int stasis_mpi_calls_in_lower;
extern _Atomic int stasis_mpi_checkpoint_pending; /* a futex word */
extern const char *_Atomic stasis_mpi_last_lower_call;
extern __thread int stasis_mpi_is_checkpoint_thread;
/* Waits (futex) until no checkpoint is pending. */
void stasis_mpi_wait_out_checkpoint(void);

/* MPI_THREAD_MULTIPLE (README.md, Threads; mpiinter): the program's threads take turns in the
 * safe regions, one region at a time, under one lock. Every table, request, collective, drained
 * message and the lower half's one thread pointer is touched only in a region, so the layer and
 * the library see the calls of several threads as serialized calls; a blocking call holds the
 * lock for one test a turn, never while it waits. A thread counts itself inside before it takes
 * the lock and gives the lock back before it counts itself out: a checkpoint, which waits for no
 * thread inside, never finds the lock held. Set at MPI_Init_thread when MPI_THREAD_MULTIPLE is
 * asked for, never after; else the lock is never taken (one well-predicted branch a region). */
extern int stasis_mpi_threads_multiple;
extern _Atomic int stasis_mpi_region_lock; /* 0 free, 1 taken, 2 taken with waiters (a futex word) */
/* Nested regions of this thread hold it once. Initial-exec: one load off the thread pointer, not a
 * __tls_get_addr call (where libstasis_mpi.so is dlopen'ed, as by mpi4py, glibc's static TLS
 * reserve holds these 4 bytes). */
extern __thread int stasis_mpi_region_depth __attribute__((tls_model("initial-exec")));
void stasis_mpi_region_lock_wait(void);
void stasis_mpi_region_lock_wake(void);

static inline void stasis_mpi_region_take(void) {
  if (stasis_mpi_region_depth++) return;
  int free_word = 0;
  if (!atomic_compare_exchange_strong(&stasis_mpi_region_lock, &free_word, 1)) stasis_mpi_region_lock_wait();
}

static inline void stasis_mpi_region_give(void) {
  if (--stasis_mpi_region_depth) return;
  if (atomic_exchange(&stasis_mpi_region_lock, 0) == 2) stasis_mpi_region_lock_wake();
}

static inline void stasis_mpi_safe_point_enter(const char *call) {
  for (;;) {
    atomic_fetch_add(&stasis_mpi_calls_in_lower, 1);
    if (!atomic_load(&stasis_mpi_checkpoint_pending) || stasis_mpi_is_checkpoint_thread) break;
    atomic_fetch_sub(&stasis_mpi_calls_in_lower, 1);
    stasis_mpi_wait_out_checkpoint();
  }
  if (stasis_mpi_threads_multiple) stasis_mpi_region_take();
  atomic_store_explicit(&stasis_mpi_last_lower_call, call, memory_order_relaxed);
}

static inline void stasis_mpi_safe_point_leave(void) {
  if (stasis_mpi_threads_multiple) stasis_mpi_region_give();
  atomic_fetch_sub(&stasis_mpi_calls_in_lower, 1);
}

/* A safe region: between stasis_mpi_safe_point_enter and _leave a thread counts as inside the
 * lower half, so a checkpoint never stops it there. The upper half's state that a checkpoint's
 * drain changes (requests, the drained messages, a collective in progress) is read and written
 * only inside one, and the lower half is called there with LOWER_CALL_IN_REGION (a nested
 * LOWER_CALL could wait for a checkpoint that waits for this region). */
#define LOWER_CALL_IN_REGION(table, fn, ...)                            \
  ({                                                                    \
    uint64_t lower_call_upper_tls_ = stasis_mpi_enter_lower();          \
    __typeof__((table)->fn(__VA_ARGS__)) lower_call_result_ = (table)->fn(__VA_ARGS__); \
    stasis_mpi_leave_lower(lower_call_upper_tls_);                      \
    lower_call_result_;                                                 \
  })

/* lower->fn(args) on the lower half's TLS: LOWER_CALL(lower, fn, args...). */
#define LOWER_CALL(table, fn, ...)                                      \
  ({                                                                    \
    stasis_mpi_safe_point_enter(#fn);                                   \
    uint64_t lower_call_upper_tls_ = stasis_mpi_enter_lower();          \
    __typeof__((table)->fn(__VA_ARGS__)) lower_call_result_ = (table)->fn(__VA_ARGS__); \
    stasis_mpi_leave_lower(lower_call_upper_tls_);                      \
    stasis_mpi_safe_point_leave();                                      \
    lower_call_result_;                                                 \
  })

#ifdef __cplusplus
}
#endif
#endif
