// Internal interface of the preloaded runtime (libstasis_runtime.so).
//
// Everything reachable from the checkpoint path (suspend, write, resume, restart) obeys the
// hostile-territory rule: user threads are stopped at arbitrary points and may hold libc locks,
// so no malloc, no stdio, no locks user code can hold. Memory comes from the Arena (raw mmap),
// system calls from raw_syscall.h, text output from LogLine.
#pragma once
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>

#include <atomic>

#include "common/fixed_text.h"
#include "common/raw_syscall.h"
#include "image/format.h"
#include "plugins/pids/pids.h"
#include "protocol/protocol.h"
#include "restart/loader_protocol.h"
#include "runtime/next_symbols.h"
#include "runtime/settings.h"
#include "stasis/plugin.h"

namespace stasis::rt {

constexpr int kCoordinatorFd = STASIS_COORDINATOR_FD;
constexpr int kPidTableFd = STASIS_PID_TABLE_FD;
int dirty_tracking_fd();  // the userfaultfd of incremental checkpoints, -1 if none
inline bool is_runtime_fd(int fd) {
  return fd == kCoordinatorFd || fd == kPidTableFd || fd == dirty_tracking_fd();
}

struct Config {
  bool active = false;
  char coord_host[64] = {};
  uint16_t coord_port = 0;
  uint8_t secret[32] = {};
  char secret_hex[72] = {};
  char ckpt_dir[STASIS_IMAGE_PATH_MAX] = {};
  char compress[16] = {};
  int checkpoint_signal = 0;
  double interval_seconds = 0;  // STASIS_INTERVAL (launch --interval)
  bool forked_checkpoints = true;  // STASIS_FORKED_CHECKPOINT=0 writes images in place
  uint32_t original_pid = 0;
  int tcb_tid_offset = -1;  // offset of glibc's cached tid in struct pthread, -1 if unknown
};
extern Config g_config;
// The kernel pid space this process reported when it last joined (StasisProcessInfo::pid_space),
// as 8 hex digits of its hash: image names carry it, since a pid names a process only within its
// space and every host of a computation writes into one checkpoint directory.
void note_kernel_pid_space(const char* space);
const char* kernel_pid_space_tag();
extern StasisRestartInfo g_restart_info;  // filled in by the restart loader
extern std::atomic<uint64_t> g_generation;

// During a restart, LogLine::emit_restart_failure writes to `stasis restart`'s own stderr at
// descriptor `fd` (descriptor 2 is the program's); fd 0 closes it (the restart is over).
void report_to_restart(int fd);

// ---- text output without stdio --------------------------------------------------------------
class LogLine {
 public:
  LogLine() : text_((buf_[0] = 0, buf_), sizeof buf_ - 1) {}  // one byte kept for emit's newline
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  template <typename T>
  LogLine& operator<<(T value) {
    text_ << value;
    return *this;
  }
  LogLine& hex(unsigned long v) {
    text_.hex(v);
    return *this;
  }
  const char* c_str() const { return buf_; }
  size_t size() const { return text_.size(); }
  void clear() {
    buf_[0] = 0;
    text_ = FixedText(buf_, sizeof buf_ - 1);
  }
  // Sends "<line>" to the coordinator's log (and the reply of the command under way); never
  // to the program's stdout or stderr (see util.cc for where it goes otherwise).
  void emit();
  // The same for a restart that failed: on `stasis restart`'s own stderr while the restart is
  // under way (see report_to_restart), else as emit().
  void emit_restart_failure();

 private:
  void write_to(int fd);
  char buf_[1024];
  FixedText text_;
};

// ---- memory for the checkpoint path ----------------------------------------------------------
// A bump allocator over one private mapping made when a checkpoint starts and unmapped when it
// ends. The image skips it (it is scratch, not program state).
class Arena {
 public:
  bool create(size_t bytes);
  void destroy();
  void* alloc(size_t bytes);  // 64-byte aligned; nullptr when exhausted
  // Doubles an array allocated here (the arena only bumps, so it is copied into a bigger block);
  // false when exhausted (the array is left as it was).
  template <typename T>
  bool grow(T*& items, uint32_t& cap) {
    auto* bigger = static_cast<T*>(alloc(sizeof(T) * cap * 2));
    if (!bigger) return false;
    __builtin_memcpy(static_cast<void*>(bigger), items, sizeof(T) * cap);
    items = bigger;
    cap *= 2;
    return true;
  }
  uint64_t start() const { return reinterpret_cast<uint64_t>(base_); }
  uint64_t end() const { return reinterpret_cast<uint64_t>(base_) + size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

// ---- small helpers (raw syscalls) ------------------------------------------------------------
inline long sys_gettid() { return STASIS_SYS0(SYS_gettid); }
inline long sys_getpid() { return STASIS_SYS0(SYS_getpid); }
inline uint64_t monotonic_ns() {
  timespec now{};
  STASIS_SYS2(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}
// The entry of the environment block `envp` that assigns the name made of `name`'s first
// `name_len` bytes ("NAME=..."), or null. For code that must not call getenv (a shell's own
// getenv finds nothing before it set up its variables; user threads may be stopped in setenv).
char** environment_entry(char** envp, const char* name, size_t name_len);
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns = -1);
void futex_wake_all(std::atomic<uint32_t>* word);
void sleep_ns(long ns);
size_t str_len(const char* s);
void str_copy(char* dst, const char* src, size_t cap);
bool str_starts(const char* s, const char* prefix);
bool str_ends(const char* s, const char* suffix);
bool str_eq(const char* a, const char* b);
// Reads a whole small file (/proc/...) into buf (NUL-terminated); returns length or -errno.
long read_small_file(const char* path, char* buf, size_t cap);
// Parses lowercase hex digits at p, advancing p past them.
uint64_t parse_hex(const char*& p);
// Parses "Name:\t<hex>" from a /proc status text.
uint64_t parse_status_hex(const char* text, const char* field);
void format_uint(char* out, unsigned long v);
// Reads /proc/PID/stat (pid 0: this process) into buf; returns the text from the closing
// parenthesis of the command name on (the name may hold spaces and ')'), or nullptr.
const char* read_proc_stat(long pid, char* buf, size_t cap);
// Field `field` (1-based as in proc(5), 4 and up) of that text as a number; its state letter.
uint64_t proc_stat_field(const char* after_comm, int field);
inline char proc_stat_state(const char* after_comm) { return after_comm[1] ? after_comm[2] : 0; }

// Calls visit(number, name, dir_fd) for each numeric entry of a /proc directory (descriptors,
// tasks) until visit returns false. Returns false when the directory cannot be opened.
template <typename Visit>
bool for_each_proc_number(const char* dir_path, Visit visit) {
  long dir = STASIS_SYS3(SYS_open, dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return false;
  alignas(8) char buf[4096];
  bool going = true;
  for (long got; going && (got = STASIS_SYS3(SYS_getdents64, dir, buf, sizeof buf)) > 0;) {
    for (long off = 0; going && off < got;) {
      auto* d = reinterpret_cast<struct dirent64*>(buf + off);
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      long number = 0;
      for (const char* p = d->d_name; *p; p++) number = number * 10 + (*p - '0');
      going = visit(number, static_cast<const char*>(d->d_name), dir);
    }
  }
  STASIS_SYS1(SYS_close, dir);
  return true;
}

// The next definition of a library function (libc's, behind a wrapper of the runtime), looked
// up into `slot` on the wrapper's first call: in the symbol tables of the objects behind the
// runtime, listed by a constructor that runs before any other of the runtime's (next_symbols.cc),
// so the lookup takes no lock and is safe in a signal handler. dlsym serves only what it cannot
// settle (none of the wrapped functions on this glibc; runtime.NextSymbols.*). Resolving
// every wrapper's function in the constructors instead cost every process's start 20-40 us.
template <typename Fn>
Fn next_symbol(Fn& slot, const char* name) {
  if (!slot) slot = reinterpret_cast<Fn>(resolve_next_definition(name));
  return slot;
}

// ---- threads (suspend.cc) --------------------------------------------------------------------
void install_suspend_handler();
// Stops every thread but the calling one; fills `error` and returns false on failure.
bool suspend_user_threads(LogLine& error);
// Called by the checkpoint thread: fill records of the suspended threads (slot order).
uint32_t suspended_thread_records(StasisThreadRecord* out, uint32_t cap);
// The XSAVE components the suspended threads' frames hold in use (xsave_frame.cc).
uint64_t suspended_threads_xfeatures_in_use(const StasisCpuStateRecord& layout);
uint64_t frame_xfeatures_in_use(const ucontext_t* uc, const StasisCpuStateRecord& layout);
// In a restored thread: its frame's XSAVE area made to fit this CPU (xsave_frame.h).
void fit_frame_to_this_cpu(ucontext_t* uc);
void capture_own_thread_state(StasisThreadRecord* rec);
void restore_own_thread_state(const StasisThreadRecord* rec);
void resume_user_threads();
// After restart: waits until every restored user thread re-registered its kernel state.
void wait_for_restored_threads();
// After a restart, once the pid table is attached: each restored thread keeps its old tid.
void map_restored_tids();
bool threads_are_suspended();
// In a forked child: the thread slots are the parent's threads' (none of which is here).
void forget_parent_threads();
// After restart, until the user threads resume: the new tid of the thread that had `saved_tid`
// at the checkpoint, or 0.
long restored_tid_of(uint32_t saved_tid);

// ---- checkpoint writing (checkpoint.cc) ------------------------------------------------------
struct CheckpointResult {
  char image_path[STASIS_IMAGE_PATH_MAX];
  uint64_t image_bytes;
  uint64_t memory_bytes;
  uint64_t parent_generation;  // the image is an increment of this generation's (0: full)
  uint64_t write_nanoseconds;  // from opening the image to its rename being durable
  uint64_t image_checksum;     // END's chain of every record header (ImageWriter::image_checksum)
};
// Returns 0 after writing the image (forked: after starting a writer process, whose result
// wait_for_writer() collects), 1 when execution continues here after a restart, or -1 with
// `error` set.
// compression: a StasisCompressionSetting. offered_parent: the generation an incremental image
// may build on (0: write a full image).
int write_checkpoint(const char* dir, uint32_t compression, bool forked, uint64_t offered_parent,
                     CheckpointResult* result, LogLine& error);
bool writer_pending();
long writer_pid();  // the forked image writer, 0 if none
void stop_writer();  // the checkpoint failed elsewhere: wait_for_writer() then reports failure
// A forked writer starts writing only once the computation runs again (release_writer(), at
// "resume"): on a host with more processes than cores, writers that began at once took the CPU
// from the processes still capturing, and every process's pause is the slowest one's.
void release_writer();
int wait_for_writer(CheckpointResult* result, LogLine& error);
// In a forked child: the writer and its scratch memory are the parent's.
void forget_parent_writer();
// Re-creates process-wide kernel state from the saved process record (after restart).
void restore_process_state();

// ---- coordinator link (runtime.cc) -----------------------------------------------------------
// The coordinator connection's descriptor (kCoordinatorFd), made at once; connect_to_coordinator
// then connects and authenticates it (in the checkpoint thread, off the program's path).
bool reserve_coordinator_fd(LogLine& error);
bool connect_to_coordinator(bool restarted, LogLine& error);
// This host's relay (host_relay.cc), with STASIS_RELAY=1: a connected Unix socket to it, or -1
// (none there: then start_host_relay_if_missing(), called once joined, starts one).
bool relay_wanted();
void may_start_host_relay(bool launched);  // true only in the process `stasis launch` started
int connect_to_host_relay();
void start_host_relay_if_missing();
// One message on the process's connection, from any thread (false when it cannot be sent).
bool send_to_coordinator(uint16_t type, uint64_t arg, const void* payload, uint32_t len);
// Whether the process's connection is joined (and not lost): only then may others send on it.
bool coordinator_joined();
void join_as_new_process(bool forked);

// ---- the checkpoint thread, started when needed (runtime.cc, deferred_thread.cc) -------------
void prepare_checkpoint_thread();  // in plain code, once per program image
bool start_checkpoint_thread(LogLine& error);
void start_checkpoint_thread_now(bool join_at_once);
// Set while the process has no checkpoint thread yet and is to start one when needed.
extern std::atomic<bool> g_thread_deferred;
// Whether the process `ppid` has the checkpoint signal's handler (runs the runtime).
bool parent_runs_stasis(long ppid);
// Defers the thread (false: the parent is gone, start it now).
bool defer_checkpoint_thread(long parent_at_start);
// In plain code (the wrappers, the application API): the deferred thread starts.
void start_deferred_checkpoint_thread(bool join_at_once);
// In the checkpoint signal's handler: true if the process had no thread (the signal asked it to
// start one, which it did where that is safe).
bool checkpoint_signal_before_thread(const ucontext_t* uc);
// The mask the program set (the sigprocmask wrappers, while the thread is deferred).
void note_program_signal_mask();
// The checkpoint thread: sends `signal` to those of `pids` (its children) still without a
// checkpoint thread (the checkpoint signal at the "children" barrier, SIGKILL at `stasis kill`).
void signal_threadless_children(const uint32_t* pids, uint32_t count, int signal);

// ---- ending or replacing the process (runtime.cc) --------------------------------------------
// The kernel's pid of the process whose memory this is (a vfork child shares it, with another).
extern long g_real_pid;
// exit, _exit and exec wait while a forked writer still writes this process's image: the
// checkpoint counts it only once it is committed.
void wait_until_image_committed();
// exit's handlers and _exit: the process may end at any moment from now on, so its checkpoints
// write in place (a thread stopped past exit's handlers ends right after "resume"); then waits
// for the image under way.
void prepare_to_end();
// Around exec: a pending checkpoint signal would outlive execve, which resets its handler, and
// kill the new program. So exec runs as a critical section the checkpoint thread waits for
// (after waiting for the image to be committed). Returns whether it entered one, for
// exec_failed() to leave when exec returns.
bool enter_exec();
void exec_failed(bool entered);

// Virtual pids (the pid table, pids inside signals and /proc paths): plugins/pids/pids.h, above.

// ---- external plugins (plugins.cc) -----------------------------------------------------------
void load_plugins_from_env();
// Calls every plugin; returns 0, or the first failure with `error` naming the plugin.
int plugins_event(stasis_event_t event, const stasis_event_data_t* data, LogLine& error);
// The barriers plugins add, comma-separated, for the coordinator.
void plugin_barrier_names(char* out, size_t cap);

// ---- application API state -------------------------------------------------------------------
extern std::atomic<uint32_t> g_checkpoints_done;  // futex word bumped after each checkpoint
extern std::atomic<uint32_t> g_restarts_done;
extern std::atomic<uint32_t> g_suspend_requested;
extern std::atomic<uint32_t> g_delay_depth;

}  // namespace stasis::rt

extern "C" int stasis_context_save(StasisCpuContext* ctx);
// The application API's critical sections (include/stasis/stasis.h), which the runtime uses too.
extern "C" void stasis_runtime_delay_checkpoints();
extern "C" void stasis_runtime_allow_checkpoints();
// libc's sigaction, bypassing the runtime's own wrapper (wrappers.cc).
int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old);
