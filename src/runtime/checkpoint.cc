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

#include "plugins/files/files.h"
#include "plugins/memory/memory.h"
#include "plugins/process/process_state.h"
#include "runtime/image_writer.h"
#include "runtime/rt.h"

namespace stasis::rt {
namespace {
constexpr size_t kArenaBytes = 64u << 20;

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
  str_copy(out + n, suffix, cap - n);
}

uint32_t compression_from(const char* name) {
  if (str_eq(name, "none")) return STASIS_COMPRESS_NONE;
  return STASIS_COMPRESS_ZSTD;
}
}  // namespace

int write_checkpoint(const char* dir, const char* compress, CheckpointResult* result,
                     LogLine& error) {
  if (!refuse_if_children(error) || !refuse_if_posix_timers(error)) return -1;
  if (!g_arena.create(kArenaBytes)) {
    error << "cannot map checkpoint scratch memory";
    return -1;
  }
  StasisFdRecord* fds = nullptr;
  uint32_t fd_count = 0;
  if (!capture_fds(g_arena, &fds, &fd_count, error)) {
    g_arena.destroy();
    return -1;
  }
  g_process = {};
  capture_process_record(&g_process);
  uint32_t n = suspended_thread_records(g_threads, STASIS_MAX_THREADS - 1);
  g_own_thread_index = n;
  StasisThreadRecord* own = &g_threads[n];
  *own = {};
  capture_own_thread_state(own);
  g_process.thread_count = n + 1;

  if (stasis_context_save(&own->context) != 0) {
    // Restarted: this is a new kernel thread made by the loader; memory is as written below.
    restore_own_thread_state(&g_threads[g_own_thread_index]);
    return 1;
  }

  char tmp_path[STASIS_IMAGE_PATH_MAX], final_path[STASIS_IMAGE_PATH_MAX];
  build_image_path(final_path, sizeof final_path, dir, g_process.comm, g_process.pid, ".stasis");
  build_image_path(tmp_path, sizeof tmp_path, dir, g_process.comm, g_process.pid, ".stasis.tmp");
  ImageWriter writer;
  const char* compression_name = compress && compress[0] ? compress : g_config.compress;
  bool ok = writer.open(tmp_path, compression_from(compression_name), g_arena, error);
  for (uint32_t i = 0; ok && i <= n; i++)
    ok = writer.add_record(STASIS_REC_THREAD, g_threads[i].tid, &g_threads[i], sizeof g_threads[i]);
  for (uint32_t i = 0; ok && i < fd_count; i++)
    ok = writer.add_record(STASIS_REC_FD, static_cast<uint64_t>(fds[i].fd), &fds[i], sizeof fds[i]);
  ok = ok && write_memory(writer, g_arena, &g_process.vdso, error);
  ok = ok && writer.add_record(STASIS_REC_PROCESS, g_process.pid, &g_process, sizeof g_process);
  ok = ok && writer.finish();
  if (!ok) {
    if (error.size() == 0) error << "writing " << tmp_path << " failed: " << writer.failure();
    writer.abandon();
    STASIS_SYS1(SYS_unlink, tmp_path);
    g_arena.destroy();
    return -1;
  }
  long renamed = STASIS_SYS2(SYS_rename, tmp_path, final_path);
  long dir_fd = STASIS_SYS3(SYS_open, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir_fd >= 0) {
    STASIS_SYS1(SYS_fsync, dir_fd);
    STASIS_SYS1(SYS_close, dir_fd);
  }
  g_arena.destroy();
  if (renamed != 0) {
    error << "cannot rename the image into place (errno " << -renamed << ")";
    return -1;
  }
  str_copy(result->image_path, final_path, sizeof result->image_path);
  result->image_bytes = writer.bytes_written();
  result->memory_bytes = writer.memory_bytes();
  return 0;
}

void restore_process_state() { restore_process_record(&g_process); }

}  // namespace stasis::rt
