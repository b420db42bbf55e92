// The checkpoint sequence inside one process, top-down. Runs in the checkpoint thread while every
// user thread is parked in the suspend handler (see plugins/threads/suspend.cc).
//
//   refuse what cannot be restored (child processes, unsupported descriptors)
//   capture descriptors, process state, thread records
//   save the checkpoint thread's own context  <- a restart resumes here, returning 1
//   write THREAD*, FD*, (REGION, PAGES*)*, PROCESS, END to DIR/<comm>-<pid>.stasis.tmp
//   fsync, rename to DIR/<comm>-<pid>.stasis, fsync DIR
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "plugins/files/files.h"
#include "plugins/infiniband/verbs_guard.h"
#include "plugins/ipc/ipc.h"
#include "plugins/memory/dirty_tracking.h"
#include "plugins/memory/fork_exclusions.h"
#include "plugins/memory/memory.h"
#include "plugins/memory/shared_memory.h"
#include "plugins/process/process_state.h"
#include "plugins/threads/xsave_frame.h"
#include "runtime/image_writer.h"
#include "runtime/rt.h"

namespace stasis::rt {
namespace {
// Virtual (MAP_NORESERVE): only what a checkpoint uses is ever backed, and a forked writer's
// copies of saved files' contents live here, as do the compression threads' buffers, contexts
// and stacks (~11 MiB a thread).
constexpr size_t kArenaBytes = 512u << 20;

Arena g_arena;
StasisProcessRecord g_process;
StasisThreadRecord g_threads[STASIS_MAX_THREADS];
uint32_t g_own_thread_index;

void build_image_path(char* out, size_t cap, const char* dir, const char* comm, long pid,
                      const char* suffix) {
  str_copy(out, dir, cap);
  size_t n = str_len(out);
  str_copy(out + n, "/", cap - n);
  n = str_len(out);
  for (const char* c = comm; *c && n + 1 < cap; c++)  // keep the name a plain file name
    out[n++] = (*c == '/' || *c == ' ') ? '_' : *c;
  out[n] = 0;
  str_copy(out + n, "-", cap - n);
  n = str_len(out);
  if (n + 24 < cap) format_uint(out + n, static_cast<unsigned long>(pid));
  n = str_len(out);
  // The pid is unique in its pid space only: two hosts (or pid namespaces) may both have it.
  str_copy(out + n, "-", cap - n);
  str_copy(out + str_len(out), kernel_pid_space_tag(), cap - str_len(out));
  n = str_len(out);
  str_copy(out + n, suffix, cap - n);
}

// The image's compression: what the "checkpoint" barrier asks (a StasisCompressionSetting),
// else this process's own ($STASIS_COMPRESS, else zstd).
uint32_t image_compression(uint32_t asked) {
  if (asked == STASIS_COMPRESSION_NONE) return STASIS_COMPRESS_NONE;
  if (asked == STASIS_COMPRESSION_ZSTD) return STASIS_COMPRESS_ZSTD;
  if (asked == STASIS_COMPRESSION_LZ4) return STASIS_COMPRESS_LZ4;
  if (str_eq(g_config.compress, "none")) return STASIS_COMPRESS_NONE;
  if (str_eq(g_config.compress, "lz4")) return STASIS_COMPRESS_LZ4;
  return STASIS_COMPRESS_ZSTD;
}
}  // namespace

namespace {

// Writes the image of the memory as it is now (in place, or in a forked writer whose memory is
// the snapshot). Fills result or error; returns 0 or -1.
int write_image(const char* dir, uint32_t compression, StasisFdRecord* fds, uint32_t fd_count,
                const FdDataList& fd_data, const IncrementPlan& plan, CheckpointResult* result,
                uint64_t* header_checksum, LogLine& error) {
  const uint64_t started_ns = monotonic_ns();
  const uint32_t n = g_own_thread_index;
  char tmp_path[STASIS_IMAGE_PATH_MAX], final_path[STASIS_IMAGE_PATH_MAX];
  build_image_path(final_path, sizeof final_path, dir, g_process.comm, g_process.pid, ".stasis");
  build_image_path(tmp_path, sizeof tmp_path, dir, g_process.comm, g_process.pid, ".stasis.tmp");
  ImageWriter writer;
  bool ok = writer.open(tmp_path, image_compression(compression), g_arena, error);
  if (ok && plan.increment)
    ok = writer.add_record(STASIS_REC_PARENT, plan.parent.parent_generation, &plan.parent, sizeof plan.parent);
  for (uint32_t i = 0; ok && i <= n; i++)
    ok = writer.add_record(STASIS_REC_THREAD, g_threads[i].tid, &g_threads[i], sizeof g_threads[i]);
  for (uint32_t i = 0; ok && i < fd_count; i++)
    ok = writer.add_record(STASIS_REC_FD, static_cast<uint64_t>(fds[i].fd), &fds[i], sizeof fds[i]);
  for (uint32_t i = 0; ok && i < fd_data.count(); i++)
    ok = writer.add_fd_data(fd_data[i].fd, fd_data[i].tag, fd_data[i].bytes, fd_data[i].len,
                            fd_data[i].source_fd, fd_data[i].offset);
  StasisCpuStateRecord cpu = {};
  xsave::describe_this_cpu(&cpu);
  cpu.xfeatures_in_use = suspended_threads_xfeatures_in_use(cpu);
  ok = ok && writer.add_record(STASIS_REC_CPU_STATE, 0, &cpu, sizeof cpu);
  ok = ok && write_memory(writer, g_arena, plan, &g_process.vdso, error);
  ok = ok && writer.add_record(STASIS_REC_PROCESS, g_process.pid, &g_process, sizeof g_process);
  ok = ok && writer.finish();
  if (!ok) {
    if (error.size() == 0) error << "writing " << tmp_path << " failed: " << writer.failure();
    writer.abandon();
    STASIS_SYS1(SYS_unlink, tmp_path);
    return -1;
  }
  long renamed = STASIS_SYS2(SYS_rename, tmp_path, final_path);
  long dir_fd = STASIS_SYS3(SYS_open, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir_fd >= 0) {
    STASIS_SYS1(SYS_fsync, dir_fd);
    STASIS_SYS1(SYS_close, dir_fd);
  }
  if (renamed != 0) {
    error << "cannot rename the image into place (errno " << -renamed << ")";
    return -1;
  }
  str_copy(result->image_path, final_path, sizeof result->image_path);
  result->image_bytes = writer.bytes_written();
  result->memory_bytes = writer.memory_bytes();
  result->parent_generation = plan.increment ? plan.parent.parent_generation : 0;
  result->write_nanoseconds = monotonic_ns() - started_ns;
  result->image_checksum = writer.image_checksum();
  *header_checksum = writer.header_checksum();
  return 0;
}

// What a forked writer hands back to the process, through the (shared) arena: the writer cannot
// reply on the coordinator connection, which belongs to the checkpoint thread.
struct WriterOutcome {
  int32_t status;  // 0 written, 1 failed
  char message[STASIS_MESSAGE_MAX];
  CheckpointResult result;
  uint64_t header_checksum;
};
long g_writer_pid = 0;
WriterOutcome* g_writer_outcome = nullptr;
const IncrementPlan* g_writer_plan = nullptr;
// In the shared arena: 0 until release_writer(). Shared futexes, as it crosses processes.
std::atomic<uint32_t>* g_writer_gate = nullptr;

// The writer's wait for the computation to resume. Bounded: a process that never gets to
// "resume" (its coordinator gone mid-checkpoint without the loss being noticed) must not leave
// a writer waiting forever; writing late is harmless, the image is committed only by "commit".
void wait_at_writer_gate(std::atomic<uint32_t>* gate) {
  constexpr int kMaxWaits = 120;  // of half a second: a minute
  for (int i = 0; i < kMaxWaits && gate->load() == 0; i++) {
    struct timespec half_second = {0, 500000000L};
    STASIS_SYS4(SYS_futex, gate, FUTEX_WAIT, 0, &half_second);
  }
}

// The image of this checkpoint is complete: dirty tracking may build the next one on it.
void image_complete(const CheckpointResult& result, const IncrementPlan& plan, uint64_t header_checksum) {
  g_dirty_tracker.committed(g_generation.load(), result.image_path, header_checksum,
                            plan.increment ? &plan.parent : nullptr);
}

}  // namespace

int write_checkpoint(const char* dir, uint32_t compression, bool forked, uint64_t offered_parent,
                     CheckpointResult* result, LogLine& error) {
  if (!refuse_if_posix_timers(error) || !refuse_if_verbs_in_use(error)) return -1;
  if (!g_arena.create(kArenaBytes)) {
    error << "cannot map checkpoint scratch memory";
    return -1;
  }
  StasisFdRecord* fds = nullptr;
  uint32_t fd_count = 0;
  // The mappings as the pause froze them, read once for the plans below (the writer reads its own).
  Mapping* maps = nullptr;
  uint32_t map_count = read_mappings(g_arena, &maps, error);
  FdDataList* fd_data = static_cast<FdDataList*>(g_arena.alloc(sizeof(FdDataList)));
  if (map_count == 0 || !fd_data || !fd_data->init(g_arena, 4096) ||
      !capture_fds(g_arena, &fds, &fd_count, *fd_data, error) ||
      !capture_process_state({fds, fd_count, maps, map_count, g_arena, *fd_data, dir}, error)) {
    g_arena.destroy();
    return -1;
  }
  g_process = {};
  capture_process_record(&g_process);
  if (!capture_zombies(&g_process, g_writer_pid, error)) {
    g_arena.destroy();
    return -1;
  }
  uint32_t n = suspended_thread_records(g_threads, STASIS_MAX_THREADS - 1);
  g_own_thread_index = n;
  StasisThreadRecord* own = &g_threads[n];
  *own = {};
  capture_own_thread_state(own);
  g_process.thread_count = n + 1;

  LogLine marks_error;
  if (!(forked ? read_memory_marks_for_fork(g_arena, maps, map_count, marks_error)
               : read_memory_marks(g_arena, marks_error))) {
    error << marks_error.c_str();
    g_arena.destroy();
    return -1;
  }
  LogLine not_lent;
  if (forked && !lend_fork_excluded_memory(not_lent)) {
    LogLine line;
    (line << not_lent.c_str() << ": writing this image in place").emit();
    forked = false;
  }
  if (forked && !fd_data->read_files_now()) {
    LogLine line;
    (line << "the files this image saves do not fit in scratch memory: writing it in place").emit();
    forked = false;
    take_back_fork_excluded_memory();
  }
  WriterOutcome* outcome =
      forked ? static_cast<WriterOutcome*>(g_arena.alloc(sizeof(WriterOutcome))) : nullptr;
  auto* gate = forked ? static_cast<std::atomic<uint32_t>*>(g_arena.alloc(sizeof(std::atomic<uint32_t>))) : nullptr;
  if (!gate) outcome = nullptr;  // no room for it: in place
  if (gate) gate->store(0);
  // Who saves memory shared with other processes, decided while all of them are stopped (and a
  // copy of it for a forked writer, which does not freeze shared memory).
  if (!plan_shared_memory(g_arena, maps, map_count, outcome != nullptr, error)) {
    take_back_fork_excluded_memory();
    g_arena.destroy();
    return -1;
  }
  // Last before the snapshot: what the program wrote since the previous image. Only the
  // checkpoint thread runs from here on, and it writes only memory saved whole (plan_increment).
  auto* plan = static_cast<IncrementPlan*>(g_arena.alloc(sizeof(IncrementPlan)));
  if (!plan || !plan_increment(g_arena, offered_parent, plan, error)) {
    if (error.size() == 0) error << "out of checkpoint scratch memory for dirty tracking";
    take_back_fork_excluded_memory();
    drop_shared_memory_copy();
    g_arena.destroy();
    return -1;
  }

  if (stasis_context_save(&own->context) != 0) {
    // Restarted: this is a new kernel thread made by the loader; memory is as written below.
    restore_own_thread_state(&g_threads[g_own_thread_index]);
    g_dirty_tracker.forget();  // nothing is registered in this process
    forget_cached_fork_marks();  // a new process: its marks are the image's, set by the restart
    return 1;
  }

  if (outcome) {
    // A forked writer: its memory is the snapshot, so the program may run on as soon as it
    // exists. exit signal 0: the program gets no SIGCHLD and its wait() never sees the writer.
    withhold_sysv_attachments_from_writer(maps, map_count);  // else the program sees them counted twice
    long pid = STASIS_SYS5(SYS_clone, 0, 0, 0, 0, 0);
    if (pid != 0) {  // the writer has its copy (or none: in place)
      return_sysv_attachments_after_fork();
      take_back_fork_excluded_memory();
    }
    if (pid == 0) {
      STASIS_SYS2(SYS_prctl, PR_SET_NAME, "stasis-writer");  // how `ps` tells it apart
      wait_at_writer_gate(gate);
      LogLine writer_error;
      int r = write_image(dir, compression, fds, fd_count, *fd_data, *plan, &outcome->result,
                          &outcome->header_checksum, writer_error);
      outcome->status = r == 0 ? 0 : 1;
      str_copy(outcome->message, writer_error.c_str(), sizeof outcome->message);
      STASIS_SYS1(SYS_exit_group, outcome->status);
    }
    if (pid > 0) {
      drop_shared_memory_copy();  // the writer's now
      g_writer_pid = pid;
      g_writer_outcome = outcome;  // the arena stays mapped until wait_for_writer()
      g_writer_plan = plan;
      g_writer_gate = gate;
      *result = {};
      return 0;
    }
    // No fork: write in place.
  }
  uint64_t header_checksum = 0;
  int r = write_image(dir, compression, fds, fd_count, *fd_data, *plan, result, &header_checksum, error);
  if (r == 0) image_complete(*result, *plan, header_checksum);
  drop_shared_memory_copy();
  g_arena.destroy();
  return r;
}

bool writer_pending() { return g_writer_pid > 0; }
long writer_pid() { return g_writer_pid; }

void stop_writer() {
  if (g_writer_pid > 0) STASIS_SYS2(SYS_kill, g_writer_pid, SIGKILL);
}

void release_writer() {
  if (g_writer_pid <= 0 || !g_writer_gate || g_writer_gate->load() != 0) return;
  g_writer_gate->store(1);
  STASIS_SYS3(SYS_futex, g_writer_gate, FUTEX_WAKE, 0x7fffffff);
}

int wait_for_writer(CheckpointResult* result, LogLine& error) {
  release_writer();  // "commit" comes after "resume"; never wait on a writer that waits on us
  int status = 0;
  long r;
  do r = STASIS_SYS4(SYS_wait4, g_writer_pid, &status, __WALL, nullptr);
  while (r == -EINTR);
  int rc = 0;
  if (r != g_writer_pid || !WIFEXITED(status)) {
    error << "the image writer (pid " << g_writer_pid << ") died before finishing";
    rc = -1;
  } else if (g_writer_outcome->status != 0) {
    error << g_writer_outcome->message;
    rc = -1;
  }
  if (rc != 0) {
    forget_cached_fork_marks();  // the writer may have failed on their check: read smaps next time
  } else {
    *result = g_writer_outcome->result;
    image_complete(*result, *g_writer_plan, g_writer_outcome->header_checksum);
  }
  g_arena.destroy();
  g_writer_pid = 0;
  g_writer_outcome = nullptr;
  g_writer_gate = nullptr;
  return rc;
}

void forget_parent_writer() {
  if (g_writer_pid == 0) return;
  g_arena.destroy();  // unmaps this copy only: the parent still reads its writer's outcome there
  g_writer_pid = 0;
  g_writer_outcome = nullptr;
  g_writer_plan = nullptr;
  g_writer_gate = nullptr;
}

void restore_process_state() { restore_process_record(&g_process); }

}  // namespace stasis::rt
