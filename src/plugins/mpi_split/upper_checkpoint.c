/* The split checkpoint from the upper half (README.md, The split checkpoint): the safe point, and
 * the lower half's own inventory, asked through the interface and handed to the runtime to leave
 * out of the image. Part of libstasis_mpi.so. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lower_half_loader.h"
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
/* CREATION_DRIVE_MS: how long a checkpoint thread drives the entry barrier of a communicator
 * creation its program thread is held in (upper_collectives.c): below the patience a member inside
 * the blocking creation is waited for, so that this one's creation frees it in time. */
enum { SAFE_POINT_PATIENCE_MS = 3000, CREATION_DRIVE_MS = 1500, MAX_LEFT_OUT_RANGES = 4096, MAX_LEFT_OUT_FDS = 4096, MAX_LOWER_THREADS = 64 };
static StasisMpiLowerRange left_out_ranges[MAX_LEFT_OUT_RANGES];
static int left_out_range_count; /* saved with the image: a restart knows where the old lower half was */
static int left_out_fds[MAX_LEFT_OUT_FDS];
static int lower_threads[MAX_LOWER_THREADS];

/* This checkpoint's safe point made the communicator of a creation the program's thread was held
 * in (every member had arrived): said in the rank's report. */
static int made_at_safe_point;

/* MPI_Wtime at the drain, saved with the image: a restart's MPI_Wtime carries on from it (the time
 * the job was down does not count), whichever library the fresh lower half runs. */
double stasis_mpi_wtime_offset;
static double wtime_at_checkpoint;

static void release_waiting_calls(void) {
  atomic_store(&stasis_mpi_checkpoint_pending, 0);
  syscall(SYS_futex, &stasis_mpi_checkpoint_pending, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Every thread of the program out of the lower half, and kept out, before the checkpoint's
 * signal stops them: its handler must run on the upper half's thread pointer. The blocking
 * point-to-point calls and collectives wait in the upper half (a test a turn), so they come out
 * at once; so does a communicator creation once every member's is made (a held member's by its
 * checkpoint thread, stasis_mpi_collectives_drive). A call that does not come out in time fails
 * the checkpoint, naming the call; the job runs on. */
static int reach_safe_point(void) {
  stasis_mpi_is_checkpoint_thread = 1;
  atomic_store(&stasis_mpi_checkpoint_pending, 1);
  for (int waited = 0; atomic_load(&stasis_mpi_calls_in_lower) != 0; waited++) {
    if (waited == SAFE_POINT_PATIENCE_MS) {
      static char refusal[300];
      const char *call = atomic_load(&stasis_mpi_last_lower_call);
      snprintf(refusal, sizeof refusal,
               "split MPI: a thread stayed inside the MPI library (the lower half's %s) for %d ms; only "
               "point-to-point calls, MPI_Barrier, MPI_Bcast, MPI_Allreduce, MPI_Reduce, MPI_Comm_dup, "
               "MPI_Comm_split, MPI_Comm_create and MPI_Finalize wait at safe points "
               "(src/plugins/mpi_split/README.md)",
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

/* GENERATION_DIR/mpi_split.rank-R holds this rank's process number and its pid space ("VPID
 * SPACE"): which image a restart under a new launcher gives to its rank R. The space tells apart
 * two ranks of one pid on two nodes. Raw calls: the program's threads are stopped. */
static int name_rank_image(const char *generation_dir) {
  char path[4200], text[128];
  int rank = 0;
  if (!generation_dir || LOWER_CALL(lower, comm_rank, handles.comms.entries[STASIS_MPI_INDEX_COMM_WORLD].real, &rank))
    return -1;
  snprintf(path, sizeof path, "%s/mpi_split.rank-%d", generation_dir, rank);
  const char *space = stasis_plugin_pid_space ? stasis_plugin_pid_space() : NULL;
  int length = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), space ? space : "");
  if (length <= 0 || (size_t)length >= sizeof text) return -1;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  int ok = syscall(SYS_write, fd, text, length) == length && syscall(SYS_fsync, fd) == 0;
  syscall(SYS_close, fd);
  return ok ? 0 : -1;
}

/* The image leaves out what the lower half owns: its memory and its descriptors. Its threads
 * were never stopped (the thread hook exempted them) and are not in the image. */
static int leave_lower_half_out(const char *generation_dir) {
  if (name_rank_image(generation_dir) != 0) {
    stasis_plugin_refuse("split MPI: cannot write the rank's mpi_split.rank-R file in the checkpoint directory");
    return 1;
  }
  int range_count = 0, thread_count = 0, fd_count = 0;
  left_out_range_count = 0;
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
  left_out_range_count = range_count;
  return 0;
}

/* Signal handlers the old lower half installed (Open MPI's for SIGABRT, SIGBUS, SIGFPE, SIGSEGV)
 * were restored with the process's dispositions and point into memory that is gone; a fresh
 * Open MPI would not install its own over them (it leaves a signal that has a handler alone).
 * Each goes back to SIG_DFL before the fresh lower half starts; returns how many. */
static int reset_old_lower_handlers(void) {
  int reset = 0;
  for (int sig = 1; sig < 65; sig++) {
    struct sigaction action;
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &action) != 0) continue;
    uint64_t handler = (uint64_t)(uintptr_t)action.sa_handler;
    if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) continue;
    for (int i = 0; i < left_out_range_count; i++) {
      if (handler < left_out_ranges[i].start || handler >= left_out_ranges[i].end) continue;
      struct sigaction default_action;
      memset(&default_action, 0, sizeof default_action);
      default_action.sa_handler = SIG_DFL;
      if (sigaction(sig, &default_action, NULL) == 0) reset++;
      break;
    }
  }
  return reset;
}

/* Every message in flight to this rank is received into the upper half (README.md, Draining):
 * collective over the world, every rank's checkpoint thread at once, while the program's threads
 * are stopped outside the lower half. */
static int drain_messages(uint64_t generation) {
  static char error[300], refusal[400];
  const char *completed = NULL;
  if (stasis_mpi_collectives_settle(&completed, error, sizeof error) != 0) {
    snprintf(refusal, sizeof refusal, "split MPI: a collective in progress cannot be settled: %s", error);
    stasis_plugin_refuse(refusal);
    return 1;
  }
  int windows_completed = 0;
  if (stasis_mpi_rma_complete(&windows_completed, error, sizeof error) != 0) {
    snprintf(refusal, sizeof refusal, "split MPI: the RMA operations in flight cannot be completed: %s", error);
    stasis_plugin_refuse(refusal);
    return 1;
  }
  long long taken = 0;
  wtime_at_checkpoint = LOWER_CALL(lower, wtime) + stasis_mpi_wtime_offset;
  if (stasis_mpi_drain_all(&taken) != MPI_SUCCESS) {
    stasis_plugin_refuse("split MPI: the drain of the messages in flight failed (see the rank's stderr)");
    return 1;
  }
  char line[400];
  int length = snprintf(
      line, sizeof line, "split MPI: checkpoint %llu drained %lld message%s in flight to this rank (rank %d, %s%s)%s%s%s%s",
      (unsigned long long)generation, taken, taken == 1 ? "" : "s", stasis_mpi_own_world_rank,
      stasis_mpi_blocked_in ? "waiting in " : "not waiting in MPI", stasis_mpi_blocked_in ? stasis_mpi_blocked_in : "",
      completed ? "; its " : "", completed ? completed : "", completed ? " was completed first (a member had)" : "",
      made_at_safe_point ? "; its communicator was made at the safe point (every member had arrived)" : "");
  if (windows_completed && length > 0 && (size_t)length < sizeof line)
    snprintf(line + length, sizeof line - (size_t)length, "; RMA completed on %d window%s in an epoch",
             windows_completed, windows_completed == 1 ? "" : "s");
  stasis_plugin_log(line);
  return 0;
}

/* The receives the program had posted and not completed, posted again in the fresh library
 * (the drain completed every send). */
static int post_receives_again(char *error, size_t error_size) {
  for (uint32_t index = handles.requests.predefined_count; index < handles.requests.next_unused; index++) {
    RequestSide *side = &request_side[index];
    if (!handles.requests.entries[index].live || !side->recv_type || side->done) continue;
    StasisMpiRealHandle real_type, real_comm, made;
    if (stasis_mpi_ids_real(&handles.datatypes, side->type, &real_type) != 0 ||
        stasis_mpi_ids_real(&handles.comms, side->comm, &real_comm) != 0) {
      snprintf(error, error_size, "a posted receive's datatype or communicator was not made again");
      return -1;
    }
    if (LOWER_CALL(lower, irecv, side->buf, side->count, real_type, side->source, side->tag, real_comm, &made) != 0) {
      snprintf(error, error_size, "the fresh library refused a posted receive");
      return -1;
    }
    handles.requests.entries[index].real = made;
    side->recv_type = real_type;
    side->parked = 0;
  }
  return 0;
}

/* After a restart the image held the upper half only: a fresh lower half, started as at
 * MPI_Init with the environment the new launcher gave (`stasis restart` puts it in with
 * --setenv), MPI_Init in it, every object made again under its id from the replay log, the
 * posted receives posted again. Messages drained at the checkpoint are in the upper half. */
static int restart_lower_half(void) {
  char error[600];
  int old_size = peers.world_size, size = 0, provided = 0;
  stasis_mpi_lower_tls = 0; /* the old lower half's thread pointer means nothing now */
  atomic_store(&stasis_mpi_calls_in_lower, 0);
  int handlers_reset = reset_old_lower_handlers();
  const StasisMpiLower *fresh = stasis_mpi_load_lower_half(error, sizeof error);
  if (!fresh || !fresh->inventory || !fresh->descriptors || !fresh->set_thread_hook) {
    if (fresh) snprintf(error, sizeof error, "the fresh lower half is not a program of its own");
    goto failed;
  }
  lower = fresh;
  if (stasis_plugin_exempt_thread) lower->set_thread_hook(stasis_plugin_exempt_thread);
  if (LOWER_CALL(lower, init_thread, NULL, NULL, stasis_mpi_lower_thread_level, &provided) != 0) {
    snprintf(error, sizeof error, "MPI_Init failed in the fresh lower half");
    goto failed;
  }
  stasis_mpi_wtime_offset = wtime_at_checkpoint - LOWER_CALL(lower, wtime);
  if (stasis_mpi_remake_objects(error, sizeof error) != 0) goto failed;
  if (LOWER_CALL(lower, comm_size, handles.comms.entries[STASIS_MPI_INDEX_COMM_WORLD].real, &size) != 0 ||
      size != old_size) {
    snprintf(error, sizeof error, "the new MPI_COMM_WORLD has %d ranks, the checkpoint's %d", size, old_size);
    goto failed;
  }
  int windows_remade = 0;
  if (stasis_mpi_rma_restarted(&windows_remade, error, sizeof error) != 0) goto failed;
  if (post_receives_again(error, sizeof error) != 0 || stasis_mpi_collectives_restarted(error, sizeof error) != 0 ||
      stasis_mpi_requests_restarted(error, sizeof error) != 0)
    goto failed;
  release_waiting_calls();
  char restarted[300];
  snprintf(restarted, sizeof restarted,
           "split MPI: restarted over a fresh lower half (%s); its objects were made again (%d window%s); %d signal "
           "handler%s of the old lower half reset", lower->implementation, windows_remade, windows_remade == 1 ? "" : "s",
           handlers_reset, handlers_reset == 1 ? "" : "s");
  stasis_plugin_log(restarted);
  return 0;
failed:;
  char line[700];
  snprintf(line, sizeof line, "split MPI: the restart cannot bring MPI back: %s", error);
  stasis_plugin_log(line);
  return 1;
}

static int on_checkpoint_event(stasis_event_t event, const stasis_event_data_t *data, void *state) {
  (void)state;
  switch (event) {
    case STASIS_EVENT_PRE_SUSPEND:
      if (finalized || atomic_load(&stasis_mpi_finalizing)) {
        stasis_plugin_refuse("split MPI: every rank has reached MPI_Finalize; the job is ending, nothing is saved");
        return 1;
      }
      if (stasis_mpi_rma_refusal()) { /* mpirma */
        static char refusal[300];
        snprintf(refusal, sizeof refusal,
                 "split MPI: a window made by %s is live: the MPI library holds its memory or layout, which a "
                 "checkpoint leaves out (not supported; src/plugins/mpi_split/README.md)",
                 stasis_mpi_rma_refusal());
        stasis_plugin_refuse(refusal);
        return 1;
      }
      if (reach_safe_point() != 0) return 1;
      if (atomic_load(&stasis_mpi_finalizing)) { /* every rank got there while this one came out */
        release_waiting_calls();
        stasis_plugin_refuse("split MPI: every rank has reached MPI_Finalize; the job is ending, nothing is saved");
        return 1;
      }
      made_at_safe_point = stasis_mpi_collectives_drive(CREATION_DRIVE_MS);
      return 0;
    case STASIS_EVENT_DRAIN: return drain_messages(data ? data->generation : 0);
    case STASIS_EVENT_PRE_CHECKPOINT: return leave_lower_half_out(data ? data->ckpt_dir : NULL);
    case STASIS_EVENT_RESUME: release_waiting_calls(); return 0;
    case STASIS_EVENT_RESTART: return restart_lower_half();
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
