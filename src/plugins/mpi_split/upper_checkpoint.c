/* The split checkpoint from the upper half (README.md, The split checkpoint): the safe point, and
 * the lower half's own inventory, asked through the interface and handed to the runtime to leave
 * out of the image. Part of libstasis_mpi.so. */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lower_tls.h"
#include "stasis/plugin.h"
#include "upper_state.h"

_Static_assert(sizeof(StasisMpiLowerRange) == 2 * sizeof(unsigned long long),
               "a range crosses as two unsigned long long");

API int STASIS_MPI_Lower_inventory(unsigned long long *ranges, int range_capacity, int *range_count, int *tids,
                                   int tid_capacity, int *tid_count) {
  static const char function[] = "STASIS_MPI_Lower_inventory";
  NEED_LOWER(function);
  if (!lower->inventory) {
    complain(function, "the lower half was loaded into the program (one libc): nothing of it can be told apart");
    return MPI_ERR_OTHER;
  }
  int rc = LOWER_CALL(lower, inventory, (StasisMpiLowerRange *)ranges, range_capacity, range_count, tids, tid_capacity,
                      tid_count);
  if (rc != 0) {
    complain(function, "the lower half's lists do not fit, or it lost track of its mappings");
    return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

API int STASIS_MPI_Lower_descriptors(int *fds, int capacity, int *count) {
  static const char function[] = "STASIS_MPI_Lower_descriptors";
  NEED_LOWER(function);
  if (!lower->descriptors) {
    complain(function, "the lower half was loaded into the program (one libc): nothing of it can be told apart");
    return MPI_ERR_OTHER;
  }
  if (LOWER_CALL(lower, descriptors, fds, capacity, count) != 0) {
    complain(function, "the lower half's descriptors do not fit, or it lost track of them");
    return MPI_ERR_OTHER;
  }
  return MPI_SUCCESS;
}

/* The split checkpoint (README.md, The split checkpoint): a plugin of the runtime, registered at
 * MPI_Init when the runtime is there and the lower half can list what it owns. */
enum { SAFE_POINT_PATIENCE_MS = 3000, MAX_LEFT_OUT_RANGES = 4096, MAX_LEFT_OUT_FDS = 4096, MAX_LOWER_THREADS = 64 };
static StasisMpiLowerRange left_out_ranges[MAX_LEFT_OUT_RANGES];
static int left_out_fds[MAX_LEFT_OUT_FDS];
static int lower_threads[MAX_LOWER_THREADS];

static void release_waiting_calls(void) {
  atomic_store(&stasis_mpi_checkpoint_pending, 0);
  syscall(SYS_futex, &stasis_mpi_checkpoint_pending, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Every thread of the program out of the lower half, and kept out, before the checkpoint's
 * signal stops them: its handler must run on the upper half's thread pointer. A call that does
 * not come out in time (a receive or a collective waiting on a rank that is already held at
 * the safe point) fails the checkpoint, naming the call; the job runs on. */
static int reach_safe_point(void) {
  stasis_mpi_is_checkpoint_thread = 1;
  atomic_store(&stasis_mpi_checkpoint_pending, 1);
  for (int waited = 0; atomic_load(&stasis_mpi_calls_in_lower) != 0; waited++) {
    if (waited == SAFE_POINT_PATIENCE_MS) {
      static char refusal[200];
      const char *call = atomic_load(&stasis_mpi_last_lower_call);
      snprintf(refusal, sizeof refusal,
               "split MPI: a thread stayed inside the MPI library (the lower half's %s) for %d ms; blocking calls "
               "are not yet safe points (src/plugins/mpi_split/README.md)",
               call ? call : "?", SAFE_POINT_PATIENCE_MS);
      release_waiting_calls();
      stasis_plugin_refuse(refusal);
      return 1;
    }
    struct timespec pause = {0, 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  return 0;
}

/* The image leaves out what the lower half owns: its memory and its descriptors. Its threads
 * were never stopped (the thread hook exempted them) and are not in the image. */
static int leave_lower_half_out(void) {
  int range_count = 0, thread_count = 0, fd_count = 0;
  if (LOWER_CALL(lower, inventory, left_out_ranges, MAX_LEFT_OUT_RANGES, &range_count, lower_threads,
                 MAX_LOWER_THREADS, &thread_count) != 0 ||
      LOWER_CALL(lower, descriptors, left_out_fds, MAX_LEFT_OUT_FDS, &fd_count) != 0) {
    stasis_plugin_refuse("split MPI: the lower half's lists of mappings, threads or descriptors do not fit, or it "
                         "lost track of them");
    return 1;
  }
  if (!stasis_plugin_leave_out_memory || !stasis_plugin_leave_out_fds ||
      stasis_plugin_leave_out_memory((const uint64_t *)left_out_ranges, (uint32_t)range_count) != 0 ||
      stasis_plugin_leave_out_fds(left_out_fds, (uint32_t)fd_count) != 0) {
    stasis_plugin_refuse("split MPI: the runtime cannot leave the lower half out of the image");
    return 1;
  }
  return 0;
}

/* Every message in flight to this rank is received into the upper half (README.md, Draining):
 * collective over the world, every rank's checkpoint thread at once, while the program's threads
 * are stopped outside the lower half. */
static int drain_messages(uint64_t generation) {
  long long taken = 0;
  if (stasis_mpi_drain_all(&taken) != MPI_SUCCESS) {
    stasis_plugin_refuse("split MPI: the drain of the messages in flight failed (see the rank's stderr)");
    return 1;
  }
  char line[160];
  snprintf(line, sizeof line, "split MPI: checkpoint %llu drained %lld message%s in flight to this rank",
           (unsigned long long)generation, taken, taken == 1 ? "" : "s");
  stasis_plugin_log(line);
  return 0;
}

static int on_checkpoint_event(stasis_event_t event, const stasis_event_data_t *data, void *state) {
  (void)state;
  switch (event) {
    case STASIS_EVENT_PRE_SUSPEND:
      if (finalized) {
        stasis_plugin_refuse("split MPI: this rank called MPI_Finalize; its lower half cannot drain any more");
        return 1;
      }
      return reach_safe_point();
    case STASIS_EVENT_DRAIN: return drain_messages(data ? data->generation : 0);
    case STASIS_EVENT_PRE_CHECKPOINT: return leave_lower_half_out();
    case STASIS_EVENT_RESUME: release_waiting_calls(); return 0;
    default: return 0;
  }
}

static const stasis_plugin_t split_checkpoint_plugin = {STASIS_PLUGIN_API_VERSION, "mpi-split", on_checkpoint_event,
                                                        NULL, NULL};

void stasis_mpi_join_checkpoints(void) {
  if (!stasis_register_plugin || !lower->inventory || !lower->descriptors || !lower->set_thread_hook) return;
  /* Only stores the pointer: no TLS of the lower half is needed for it. */
  if (stasis_plugin_exempt_thread) lower->set_thread_hook(stasis_plugin_exempt_thread);
  stasis_register_plugin(&split_checkpoint_plugin);
}
