// The preloaded runtime: joins the coordinator when the program starts, then runs one checkpoint
// thread that executes the coordinator's barriers (protocol/barriers.h lists them in order).
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hmac.h"
#include "plugins/files/files.h"
#include "plugins/memory/dirty_tracking.h"
#include "plugins/process/process_state.h"
#include "protocol/barriers.h"
#include "protocol/wire.h"
#include "runtime/rt.h"
#include "runtime/mapped_restart.h"
#include "runtime/restart_environment.h"
#include "plugins/launchers/slurm_tasks.h"
#include "plugins/mpi_split/split_launch.h"

namespace stasis::rt {

Config g_config;
StasisRestartInfo g_restart_info;
std::atomic<uint64_t> g_generation{0};
std::atomic<uint32_t> g_checkpoints_done{0};
std::atomic<uint32_t> g_restarts_done{0};
std::atomic<uint32_t> g_suspend_requested{0};
std::atomic<uint32_t> g_delay_depth{0};
std::atomic<uint32_t> g_send_lock{0};
long g_real_pid = 0;

namespace {
// The critical sections (g_delay_depth) the calling thread holds: a forked child inherits the
// count of every thread, but only the forking thread goes on in it.
__thread uint32_t t_delay_depth __attribute__((tls_model("initial-exec")));
}  // namespace

namespace {

// Bumped when "commit" has been answered or the coordinator is gone: exit waits on it.
std::atomic<uint32_t> g_commit_sequence{0};
// From the start of a forked writer until "commit" is answered: until then the coordinator does
// not have this process's image (the writer's end alone is not enough: the answer says it).
std::atomic<bool> g_commit_outstanding{false};
// Set once the process is ending (exit's handlers, _exit): it may be gone at any moment after a
// "resume", before a forked writer's image is committed, so its checkpoints write in place.
std::atomic<bool> g_process_ending{false};

// A new process joins (connects and authenticates) in its checkpoint thread, off the program's
// path: a process that execs or exits at once, as a shell's commands do, never waits for the
// coordinator. A checkpoint that begins meanwhile waits for it (the "children" barrier).
enum JoinState : uint32_t { kJoining, kJoined, kJoinFailed };
std::atomic<uint32_t> g_join_state{kJoining};

// The join is deferred by kJoinDelayNs: most processes a shell, make or a process pool starts
// exec or end within it and never join (a join costs the process a TCP connection and an HMAC
// handshake, and the coordinator as much again). Nothing is lost: a checkpoint that begins
// meanwhile waits in its "children" barrier (asked again every 20 ms) until the process, a live
// child of a member, has joined. The launched process and the application API (stasis_checkpoint)
// join at once; a fork child defers its join too (a shell's child execs at once).
// An orphan is the exception: once its parent is gone no member lists it, so a checkpoint would
// go on without it; a process whose parent changes joins at once (looked at every 2 ms).
constexpr long kJoinDelayNs = 20 * 1000000L;
constexpr long kParentCheckNs = 2 * 1000000L;
std::atomic<uint32_t> g_join_now{0};      // set: the checkpoint thread stops waiting and joins
std::atomic<bool> g_join_started{false};  // the thread has begun connecting
long g_parent_at_start = 0;               // the kernel's ppid when the process started

void join_now() {
  g_join_now.store(1);
  futex_wake_all(&g_join_now);
}

void wait_out_join_delay() {
  const uint64_t deadline = monotonic_ns() + kJoinDelayNs;
  for (uint64_t now = monotonic_ns(); g_join_now.load() == 0 && now < deadline; now = monotonic_ns()) {
    if (STASIS_SYS0(SYS_getppid) != g_parent_at_start) return;  // orphaned: join now
    const uint64_t left = deadline - now;
    futex_wait(&g_join_now, 0, static_cast<long>(left < kParentCheckNs ? left : kParentCheckNs));
  }
}

void wait_until_joined() {
  start_deferred_checkpoint_thread(true);
  join_now();
  while (g_join_state.load() == kJoining) futex_wait(&g_join_state, kJoining, 10 * 1000000L);
}

// Before a fork: a join under way is waited for, as the child would copy its half-made
// connection (a join not begun yet is not: the child replaces the unconnected descriptor with
// its own). A join takes about a millisecond; one stuck on an unreachable coordinator does not
// hold the program's forks for long.
void wait_briefly_until_joined() {
  if (!g_join_started.load()) return;
  for (int tries = 0; tries < 20 && g_join_state.load() == kJoining; tries++)
    futex_wait(&g_join_state, kJoining, 10 * 1000000L);
}
std::atomic<bool> g_connection_lost{false};
// Whether kCoordinatorFd is connected to this host's relay already (connect_to_coordinator
// then only authenticates).
bool g_joined_via_relay = false;

void lock_send() {
  uint32_t expected = 0;
  while (!g_send_lock.compare_exchange_weak(expected, 1)) {
    expected = 0;
    sleep_ns(100000);
  }
}
void unlock_send() { g_send_lock.store(0); }

bool parse_coord(const char* text, char* host, size_t host_cap, uint16_t* port) {
  const char* colon = nullptr;
  for (const char* p = text; *p; p++)
    if (*p == ':') colon = p;
  if (!colon) return false;
  size_t hl = static_cast<size_t>(colon - text);
  if (hl == 0 || hl >= host_cap) return false;
  __builtin_memcpy(host, text, hl);
  host[hl] = 0;
  long v = 0;
  for (const char* p = colon + 1; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
  }
  if (v <= 0 || v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

// Where glibc caches each thread's tid inside struct pthread: searched, not hard-coded, so a
// different glibc build is detected rather than silently corrupted. One thread's search is not
// enough: a pid like 0x7f6d equals the upper half of every mmap-area pointer in the TCB. So the
// main thread notes each offset holding its tid, and the checkpoint thread (whose tid differs)
// keeps the first of those that holds its own tid.
constexpr int kMaxTidOffsetCandidates = 16;
int g_tid_offset_candidates[kMaxTidOffsetCandidates];
int g_tid_offset_candidate_count = 0;
bool g_tid_offset_confirmed = false;

bool tcb_holds_tid_at(int offset, long tid) {
  auto* tcb = reinterpret_cast<const char*>(pthread_self());
  int32_t value;
  __builtin_memcpy(&value, tcb + offset, sizeof value);
  return value == tid;
}

void note_tid_offset_candidates(long tid) {
  g_tid_offset_candidate_count = 0;
  for (int offset = 16; offset < 2048 && g_tid_offset_candidate_count < kMaxTidOffsetCandidates;
       offset += 4)
    if (tcb_holds_tid_at(offset, tid)) g_tid_offset_candidates[g_tid_offset_candidate_count++] = offset;
  g_config.tcb_tid_offset = g_tid_offset_candidate_count > 0 ? g_tid_offset_candidates[0] : -1;
}

// In a thread other than the one that noted the candidates; false if none holds this tid.
bool confirm_tid_offset(long tid) {
  if (g_tid_offset_confirmed) return tcb_holds_tid_at(g_config.tcb_tid_offset, tid);
  for (int i = 0; i < g_tid_offset_candidate_count; i++)
    if (tcb_holds_tid_at(g_tid_offset_candidates[i], tid)) {
      g_config.tcb_tid_offset = g_tid_offset_candidates[i];
      g_tid_offset_confirmed = true;
      return true;
    }
  return false;
}

void report_barrier(const char* name, int status, const char* message,
                    const CheckpointResult* result) {
  static StasisBarrierDone done;
  done = {};
  str_copy(done.name, name, sizeof done.name);
  done.status = status;
  if (message) str_copy(done.message, message, sizeof done.message);
  if (result) {
    str_copy(done.image_path, result->image_path, sizeof done.image_path);
    done.image_bytes = result->image_bytes;
    done.memory_bytes = result->memory_bytes;
    done.parent_generation = result->parent_generation;
    done.write_nanoseconds = result->write_nanoseconds;
    done.image_checksum = result->image_checksum;
  }
  send_to_coordinator(STASIS_MSG_BARRIER_DONE, g_generation.load(), &done, sizeof done);
}

// Critical sections (stasis_delay_checkpoints) end before threads are stopped.
void wait_for_critical_sections() {
  g_suspend_requested.store(1);
  while (g_delay_depth.load() != 0) sleep_ns(1000000);
}

// This kernel's boot id (36 characters; "" if unreadable), read where no thread of the program
// runs: in the constructor, and again at restart (which may be on another machine) before the
// threads resume. Part of the pid space the process reports when it joins.
static char g_boot_id[40];

static void read_boot_id() {
  g_boot_id[0] = 0;
  long n = read_small_file("/proc/sys/kernel/random/boot_id", g_boot_id, sizeof g_boot_id);
  for (long i = 0; i < n && i < static_cast<long>(sizeof g_boot_id); i++)
    if (g_boot_id[i] == '\n') g_boot_id[i] = 0;
  if (n <= 0) g_boot_id[0] = 0;
}


void after_restart() {
  g_real_pid = sys_getpid();
  report_to_restart(g_restart_info.restart_stderr_fd);  // a failure from here on is restart's to print
  wait_for_restored_threads();
  attach_pid_table(/*after_restart=*/true);  // the restarted process sees its old pids
  map_restored_tids();
  if (g_restart_info.loader_end > g_restart_info.loader_start)
    STASIS_SYS2(SYS_munmap, g_restart_info.loader_start,
                g_restart_info.loader_end - g_restart_info.loader_start);
  restore_process_state();
  note_image_mappings();  // before the program can madvise or mremap them
  wrap_program_siginfo_handlers();  // the handlers restore_process_state put back
  retake_held_locks();  // before any thread of the program runs again
  note_inherited_fds(g_restart_info.external_fds);  // now whatever `stasis restart` had there
  for (int fd = 0; fd < 1024; fd++)
    if (g_restart_info.cloexec_fds[fd / 64] & (1ull << (fd % 64)))
      STASIS_SYS3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC);
  str_copy(g_config.coord_host, g_restart_info.coord_host, sizeof g_config.coord_host);
  g_config.coord_port = g_restart_info.coord_port;
  str_copy(g_config.secret_hex, g_restart_info.secret_hex, sizeof g_config.secret_hex);
  stasis_hex_decode(g_config.secret_hex, g_config.secret, sizeof g_config.secret);
  g_generation.store(g_restart_info.generation);
  apply_restart_environment(g_restart_info.setenv_entries);
  update_settings_after_restart(g_restart_info.setenv_entries);  // plugins re-create what it configures
  read_boot_id();  // the program's descriptors are in place, its threads parked: one comes and goes
  LogLine error;
  // Joined before the plugins re-create what they own, so that they can use the name service
  // (their entries belong to this process); the coordinator's "restart" barrier waits in the
  // connection until this thread reads it.
  // `stasis restart` made the connection's descriptor (before lowering the program's limits).
  g_joined_via_relay = false;  // as checkpointed; `stasis restart` made a TCP socket
  bool reserved = STASIS_SYS3(SYS_fcntl, kCoordinatorFd, F_SETFD, FD_CLOEXEC) == 0 || reserve_coordinator_fd(error);
  bool joined = reserved && connect_to_coordinator(true, error);
  g_join_state.store(joined ? kJoined : kJoinFailed);
  g_connection_lost.store(!joined);
  if (!joined) error.emit_restart_failure();
  error.clear();
  stasis_event_data_t event = {g_restart_info.generation, nullptr, 1, nullptr};
  if (plugins_event(STASIS_EVENT_RESTART, &event, error) != 0) error.emit_restart_failure();
  report_to_restart(0);  // closed before any thread of the program runs again
  // Without a coordinator nobody will send "resume": continue on our own.
  if (!joined) resume_user_threads();
  g_restarts_done.fetch_add(1);
  futex_wake_all(&g_restarts_done);
}

bool g_last_checkpoint_ok = false;
std::atomic<bool> g_last_commit_ok{false};

}  // namespace

// Any thread may send (the application API, plugins' name-service entries) on the one
// connection, under g_send_lock, which the checkpoint thread takes for every answer. So no
// thread is ever stopped holding it: the checkpoint signal is blocked from before the lock is
// taken until after it is released, and a suspend that comes meanwhile stops the thread right
// after. (Counting senders as critical sections, as this once did, left a window: a thread
// could take the lock just after the checkpoint thread saw none, and be stopped holding it;
// steady senders could also keep a checkpoint from ever starting.)
bool send_to_coordinator(uint16_t type, uint64_t arg, const void* payload, uint32_t len) {
  const int signal = g_config.checkpoint_signal;
  uint64_t block = signal > 0 ? 1ull << (signal - 1) : 0, saved = 0;
  if (block != 0) STASIS_SYS4(SYS_rt_sigprocmask, SIG_BLOCK, &block, &saved, sizeof block);
  lock_send();
  bool ok = stasis_send_msg(kCoordinatorFd, type, arg, payload, len) == 0;
  unlock_send();
  if (block != 0) STASIS_SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &saved, nullptr, sizeof saved);
  return ok;
}

void wait_until_image_committed() {
  if (!g_config.active || sys_getpid() != g_real_pid) return;  // a vfork child: not its image
  while (g_commit_outstanding.load() && !g_connection_lost.load()) {
    uint32_t seen = g_commit_sequence.load();
    if (!g_commit_outstanding.load()) break;
    futex_wait(&g_commit_sequence, seen, 100 * 1000000L);
  }
}

void prepare_to_end() {
  if (!g_config.active || sys_getpid() != g_real_pid) return;
  g_process_ending.store(true);
  wait_until_image_committed();
}

// From before an exec until the new program's runtime installs its handler, the checkpoint
// signal is ignored (a disposition exec keeps), not the default action, which would end the
// process: a parent's checkpoint signals children without a thread yet (deferred_thread.cc).
void ignore_checkpoint_signal_across_exec() {
  const int sig = g_config.checkpoint_signal;
  if (sig <= 0) return;
  struct { void* handler; unsigned long flags; void* restorer; uint64_t mask; } ignore = {reinterpret_cast<void*>(SIG_IGN), 0, nullptr, 0};
  STASIS_SYS4(SYS_rt_sigaction, sig, &ignore, nullptr, 8);
}

bool enter_exec() {
  keep_pid_table_for_exec();  // the new program looks for the table only at its descriptor
  // A vfork child runs on its parent's memory: the counters are the parent's, and the parent's
  // checkpoint thread never signals the child (another process).
  if (!g_config.active || sys_getpid() != g_real_pid) {
    ignore_checkpoint_signal_across_exec();  // a vfork child: its own table of handlers
    return false;
  }
  for (;;) {  // a checkpoint may run between the wait and the section: wait for its commit too
    wait_until_image_committed();
    stasis_runtime_delay_checkpoints();
    if (!g_commit_outstanding.load()) break;
    stasis_runtime_allow_checkpoints();
  }
  ignore_checkpoint_signal_across_exec();  // no checkpoint suspends the process in the section
  return true;
}

void exec_failed(bool entered) {
  if (g_config.checkpoint_signal > 0) install_suspend_handler();
  if (entered) stasis_runtime_allow_checkpoints();
}

bool coordinator_joined() { return g_join_state.load() == kJoined && !g_connection_lost.load(); }

namespace {
char g_pid_space_tag[9] = "00000000";
}  // namespace

void note_kernel_pid_space(const char* space) {
  uint32_t hash = 2166136261u;  // FNV-1a: short, stable, spread over 32 bits
  for (const char* c = space; *c; c++) hash = (hash ^ static_cast<unsigned char>(*c)) * 16777619u;
  for (int i = 7; i >= 0; i--, hash >>= 4) g_pid_space_tag[i] = "0123456789abcdef"[hash & 15];
}

const char* kernel_pid_space_tag() { return g_pid_space_tag; }

namespace {

// One barrier of the sequences protocol/barriers.h lays out, as the coordinator orders it.
// The checkpoint thread's list of this process's live children ("children" barrier, kill).
constexpr uint32_t kMaxChildren = 16384;
uint32_t g_children[kMaxChildren];

void handle_barrier(const StasisBarrier& barrier, uint64_t generation) {
  const char* name = barrier.name;
  stasis_event_data_t event = {generation, barrier.ckpt_dir, 0, name};
  LogLine error;
  switch (protocol::barrier_named(name)) {
  case protocol::Barrier::Suspend: {
    g_last_checkpoint_ok = false;
    if (plugins_event(STASIS_EVENT_PRE_SUSPEND, &event, error) != 0) {
      report_barrier(name, 1, error.c_str(), nullptr);
      return;
    }
    wait_for_critical_sections();
    // Refused before stopping threads: glibc's SIGEV_THREAD helper thread blocks every signal.
    if (!threads_are_suspended() && (!refuse_if_posix_timers(error) || !suspend_user_threads(error))) {
      report_barrier(name, 1, error.c_str(), nullptr);
      return;
    }
    report_barrier(name, 0, nullptr, nullptr);
    break;
  }
  case protocol::Barrier::Children: {
    // The coordinator goes on only when every live child is a suspended process of the
    // computation (a child forked as the checkpoint began joins it first).
    uint32_t n = live_children(g_children, kMaxChildren, writer_pid());
    signal_threadless_children(g_children, n, g_config.checkpoint_signal);  // their threads start, join
    send_to_coordinator(STASIS_MSG_CHILDREN, generation, g_children, n * sizeof(uint32_t));
    report_barrier(name, 0, nullptr, nullptr);
    break;
  }
  case protocol::Barrier::Drain: {
    push_held_back_tcp_bytes();
    int rc = plugins_event(STASIS_EVENT_DRAIN, &event, error);
    report_barrier(name, rc, rc ? error.c_str() : nullptr, nullptr);
    break;
  }
  case protocol::Barrier::Checkpoint: {
    g_generation.store(generation);
    static CheckpointResult result;
    if (plugins_event(STASIS_EVENT_PRE_CHECKPOINT, &event, error) != 0) {
      report_barrier(name, 1, error.c_str(), nullptr);
      return;
    }
    // Forked unless the computation ends right after (no reason to copy it), this process is
    // ending (a writer's image would be committed after it is gone), or it is disabled.
    bool forked = g_config.forked_checkpoints && !barrier.kill_after && !g_process_ending.load();
    int r = write_checkpoint(barrier.ckpt_dir, barrier.compression, forked, barrier.parent_generation,
                             &result, error);
    if (r == 1) {
      after_restart();
      return;
    }
    g_last_checkpoint_ok = r == 0;
    if (writer_pending()) g_commit_outstanding.store(true);
    report_barrier(name, r == 0 ? 0 : 1, r == 0 ? nullptr : error.c_str(), &result);
    break;
  }
  case protocol::Barrier::Commit: {
    // The image is durable: written in place at "checkpoint", or now, by the forked writer.
    // With abort the checkpoint failed elsewhere: stop the writer rather than wait for it.
    // Only a writer's result is reported here: an image written in place was named at
    // "checkpoint". (`result` is static, so it is in every image: reporting it without a writer
    // once named, after a restart, the image of the generation the process came from.)
    static CheckpointResult result;
    result = {};
    if (barrier.abort) stop_writer();
    bool waited = writer_pending();
    int r = waited ? wait_for_writer(&result, error) : 0;
    report_barrier(name, r == 0 ? 0 : 1, r == 0 ? nullptr : error.c_str(),
                   r == 0 && waited ? &result : nullptr);
    g_last_commit_ok = r == 0 && !barrier.abort;
    g_checkpoints_done.fetch_add(1);  // stasis_checkpoint() returns now
    futex_wake_all(&g_checkpoints_done);
    g_commit_outstanding.store(false);
    g_commit_sequence.fetch_add(1);
    futex_wake_all(&g_commit_sequence);
    break;
  }
  case protocol::Barrier::Resume:
    event.checkpoint_ok = g_last_checkpoint_ok ? 1 : 0;
    plugins_event(STASIS_EVENT_RESUME, &event, error);
    if (threads_are_suspended()) resume_user_threads();
    g_suspend_requested.store(0);
    futex_wake_all(&g_suspend_requested);
    report_barrier(name, 0, nullptr, nullptr);
    release_writer();  // after the answer: the last processes to resume need the CPU first
    break;
  case protocol::Barrier::Restart:
    report_barrier(name, 0, nullptr, nullptr);
    break;
  case protocol::Barrier::Plugin:
  case protocol::Barrier::None: {
    int rc = plugins_event(STASIS_EVENT_BARRIER, &event, error);
    report_barrier(name, rc, rc ? error.c_str() : nullptr, nullptr);
    break;
  }
  }
}

void* checkpoint_thread_main(void*) {
  if (g_config.tcb_tid_offset >= 0 && !confirm_tid_offset(sys_gettid())) {
    LogLine line;
    (line << "warning: cannot locate glibc's cached thread id; pthread_kill after restart may fail")
        .emit();
    g_config.tcb_tid_offset = -1;
  }
  wait_out_join_delay();
  g_join_started.store(true);
  LogLine error;
  bool joined = connect_to_coordinator(false, error);
  g_join_state.store(joined ? kJoined : kJoinFailed);  // forks waiting for the join go on
  futex_wake_all(&g_join_state);
  if (joined) start_host_relay_if_missing();
  if (!joined) {
    (error << "; running without checkpoints").emit();
    g_config.active = false;
    g_config.checkpoint_signal = 0;
    return nullptr;
  }
  for (;;) {
    StasisMsgHeader header;
    if (stasis_recv_header(kCoordinatorFd, &header) != 0) {
      LogLine line;
      (line << "lost the connection to the coordinator at " << g_config.coord_host << ":"
            << static_cast<unsigned>(g_config.coord_port) << "; no further checkpoints")
          .emit();
      if (threads_are_suspended()) resume_user_threads();
      release_writer();
      g_suspend_requested.store(0);  // nobody will send "resume": critical sections may begin
      futex_wake_all(&g_suspend_requested);
      g_commit_outstanding.store(false);  // nor "commit": nobody waits for it
      g_connection_lost.store(true);
      g_commit_sequence.fetch_add(1);
      futex_wake_all(&g_commit_sequence);
      return nullptr;
    }
    static char payload[sizeof(StasisBarrier) + 4096];
    uint32_t len = header.payload_len;
    if (len > sizeof payload) {  // larger messages are not for processes: skip, stay in step
      stasis_discard(kCoordinatorFd, len);
      continue;
    }
    if (stasis_recv_exact(kCoordinatorFd, payload, len) != 0) continue;
    if (header.type == STASIS_MSG_BARRIER && len >= sizeof(StasisBarrier)) {
      StasisBarrier barrier;
      __builtin_memcpy(&barrier, payload, sizeof barrier);
      barrier.name[sizeof barrier.name - 1] = 0;
      barrier.ckpt_dir[sizeof barrier.ckpt_dir - 1] = 0;
      handle_barrier(barrier, header.arg);
    } else if (header.type == STASIS_MSG_KILL) {
      // Children that have not joined (no checkpoint thread yet) get no message of their own.
      signal_threadless_children(g_children, live_children(g_children, kMaxChildren, writer_pid()), SIGKILL);
      STASIS_SYS2(SYS_kill, sys_getpid(), SIGKILL);
    }
  }
}

// A forked child is a new process of the computation: its own connection and checkpoint thread
// (threads do not survive fork). It joins before fork() returns in it, so a checkpoint that
// starts later includes it, and one under way takes it in (see the "children" barrier).
void atfork_child() {
  const long forking_parent = g_real_pid;  // this memory's process until now
  g_real_pid = sys_getpid();
  g_thread_deferred.store(false);  // the parent's, if its thread was deferred: decided below
  if (!g_config.active) {
    if (have_pid_table()) g_config.original_pid = static_cast<uint32_t>(claim_virtual_pid(sys_getpid()));
    return;
  }
  g_config.active = false;
  // What the parent's checkpoint under way left in this copy of its memory belongs to the
  // parent's threads and writer, which are not here.
  forget_parent_threads();
  forget_parent_writer();
  g_suspend_requested.store(0);
  g_delay_depth.store(t_delay_depth);
  g_send_lock.store(0);
  g_connection_lost.store(false);
  g_commit_outstanding.store(false);
  g_process_ending.store(false);
  join_as_new_process(/*forked=*/true);
  may_start_host_relay(false);
  LogLine error;
  g_join_state.store(kJoining);
  g_join_started.store(false);
  g_join_now.store(0);
  g_parent_at_start = STASIS_SYS0(SYS_getppid);
  g_config.active = true;  // before the thread, which clears it if it cannot join
  // The parent's connection (made or being made) is replaced by this process's own descriptor.
  // The thread waits until the child needs it (deferred_thread.cc): most children exec at once.
  // A child whose parent has already ended defers only if its new parent would wake it.
  const bool defer = g_parent_at_start == forking_parent || parent_runs_stasis(g_parent_at_start);
  if (!reserve_coordinator_fd(error) ||
      (!(defer && defer_checkpoint_thread(g_parent_at_start)) && !start_checkpoint_thread(error))) {
    (error << "; this child runs without checkpoints").emit();
    g_config.active = false;
    g_config.checkpoint_signal = 0;
    return;
  }
  stasis_event_data_t event = {g_generation.load(), nullptr, 0, nullptr};
  plugins_event(STASIS_EVENT_ATFORK_CHILD, &event, error);
}

void at_exit() {
  if (!g_config.active) return;
  prepare_to_end();
  LogLine error;
  stasis_event_data_t event = {g_generation.load(), nullptr, 0, nullptr};
  plugins_event(STASIS_EVENT_EXIT, &event, error);
}

__attribute__((constructor)) void stasis_runtime_init() {
  const Settings& s = g_settings;
  if (!s.coord.set || !s.launch_pid.set || srun_stays_outside() || mpi_launcher_stays_outside()) return;
  const char* launch_pid = s.launch_pid.text;
  read_boot_id();
  const bool launched = adopt_srun_task(launch_pid) || adopt_mpi_rank(launch_pid) || atol(launch_pid) == getpid();
  // Every process the launched one starts (fork, exec, posix_spawn, system, popen) carries the
  // STASIS_* environment and joins the computation the same way.
  LogLine error;
  const char* secret = s.secret.or_else(nullptr);
  if (!parse_coord(s.coord.text, g_config.coord_host, sizeof g_config.coord_host, &g_config.coord_port) ||
      !secret || stasis_hex_decode(secret, g_config.secret, sizeof g_config.secret) != 0) {
    (error << "STASIS_COORD or STASIS_SECRET is malformed; running without checkpoints").emit();
    return;
  }
  str_copy(g_config.secret_hex, secret, sizeof g_config.secret_hex);
  if (s.ckpt_dir.set) str_copy(g_config.ckpt_dir, s.ckpt_dir.text, sizeof g_config.ckpt_dir);
  str_copy(g_config.compress, s.compress.or_else("zstd"), sizeof g_config.compress);
  if (s.interval.set) g_config.interval_seconds = atof(s.interval.text);
  if (s.forked_checkpoint.set) g_config.forked_checkpoints = atoi(s.forked_checkpoint.text) != 0;
  g_dirty_tracker.configure(s.incremental.set && atoi(s.incremental.text) != 0,
                            s.full_every.set ? atoi(s.full_every.text) : 0);
  const char* sig = s.signal.or_else(nullptr);
  g_config.checkpoint_signal = sig ? atoi(sig) : SIGRTMAX - 2;
  if (g_config.checkpoint_signal <= 0 || g_config.checkpoint_signal > SIGRTMAX ||
      g_config.checkpoint_signal == SIGKILL || g_config.checkpoint_signal == SIGSTOP) {
    (error << "STASIS_SIGNAL=" << sig << " is not a usable signal; running without checkpoints").emit();
    g_config.checkpoint_signal = 0;
    return;
  }
  g_real_pid = sys_getpid();
  g_parent_at_start = STASIS_SYS0(SYS_getppid);
  if (launched) join_now();  // `stasis launch` and the commands after it expect it at once
  join_as_new_process(/*forked=*/false);
  may_start_host_relay(launched);
  if (pid_table_coordinator(g_config.coord_host, sizeof g_config.coord_host, &g_config.coord_port,
                            g_config.secret_hex, sizeof g_config.secret_hex))
    stasis_hex_decode(g_config.secret_hex, g_config.secret, sizeof g_config.secret);
  // What the launched process inherited from outside, it notes and passes on in the environment;
  // after a restart, the pid table says (the environment is the one from before).
  if (!have_pid_table() && launched) note_inherited_fds();
  else if (!have_pid_table()) note_external_fds_from_env();
  note_tid_offset_candidates(sys_gettid());
  load_plugins_from_env();  // before joining: the coordinator learns the barriers they add
  install_suspend_handler();
  // A fork while the checkpoint thread is joining copies its half-made connection: such a fork
  // waits for the join to end (only forks in the first moments of a process do).
  pthread_atfork(wait_briefly_until_joined, nullptr, atfork_child);
  atexit(at_exit);
  g_config.active = true;  // before the thread, which clears it if it cannot join
  // The descriptor now, while it is surely allowed (the program may lower RLIMIT_NOFILE below
  // it before the thread connects); a child forked meanwhile replaces its copy with its own.
  // An exec'd program starts its thread at once (only a fork child defers it, deferred_thread.cc):
  // a program may make threads the pthread_create wrapper never sees (a split MPI rank's lower
  // half has a libc of its own), and one with threads is not signalled to start it.
  if (!reserve_coordinator_fd(error) || !start_checkpoint_thread(error)) {
    (error << "; running without checkpoints").emit();
    g_config.active = false;
    return;
  }
  stasis_event_data_t event = {0, nullptr, 0, nullptr};
  if (plugins_event(STASIS_EVENT_INIT, &event, error) != 0) error.emit();
}

pthread_attr_t g_thread_attr;
bool g_thread_attr_ready = false;
using PthreadCreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
PthreadCreateFn g_pthread_create = nullptr;

}  // namespace

// What starting the thread needs that allocates or looks up symbols, made in plain code once per
// program image, so that a signal handler can start it (deferred_thread.cc).
void prepare_checkpoint_thread() {
  if (g_thread_attr_ready) return;
  // The checkpoint thread takes no signals. glibc starts it with this mask (it blocks every
  // signal around the clone anyway), which spares the two sigprocmask calls of blocking them in
  // the creating thread around pthread_create.
  sigset_t all;
  sigfillset(&all);
  pthread_attr_init(&g_thread_attr);
  pthread_attr_setdetachstate(&g_thread_attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setsigmask_np(&g_thread_attr, &all);
  next_symbol(g_pthread_create, "pthread_create");  // libc's, behind the runtime's wrapper
  g_thread_attr_ready = true;
}

bool start_checkpoint_thread(LogLine& error) {
  prepare_checkpoint_thread();
  // A parent-death signal the deferral asked for has done its work (it is kept across exec).
  int death_signal = 0;
  if (STASIS_SYS2(SYS_prctl, PR_GET_PDEATHSIG, &death_signal) == 0 && death_signal > 0 &&
      death_signal == g_config.checkpoint_signal)
    STASIS_SYS2(SYS_prctl, PR_SET_PDEATHSIG, 0);
  pthread_t thread;
  int rc = g_pthread_create ? g_pthread_create(&thread, &g_thread_attr, checkpoint_thread_main, nullptr) : ENOSYS;
  if (rc != 0) {
    error << "cannot start the checkpoint thread";
    g_join_state.store(kJoinFailed);  // no fork waits for a join that never happens
  }
  return rc == 0;
}

// The deferred thread's start (deferred_thread.cc), also from the checkpoint signal's handler.
void start_checkpoint_thread_now(bool join_at_once) {
  if (join_at_once) join_now();
  LogLine error;
  if (!start_checkpoint_thread(error)) {
    (error << "; this process runs without checkpoints").emit();
    g_config.active = false;
  }
}

// This process's identity in the computation: its virtual pid is its real pid unless a restarted
// computation already has a process that sees that number (then the pid table says otherwise).
void join_as_new_process(bool forked) {
  // A fork child has its parent's mapping of the table, or there is none (a table comes only with
  // a restart, which restarts its parent too); an exec'd program looks only at the table's
  // descriptor (one failed mmap before any restart), which the exec wrappers keep in place.
  if (!forked) attach_pid_table();
  g_config.original_pid = static_cast<uint32_t>(claim_virtual_pid(sys_getpid()));
}

bool reserve_coordinator_fd(LogLine& error) {
  int relay = connect_to_host_relay();
  g_joined_via_relay = relay >= 0;
  int fd = g_joined_via_relay ? relay : stasis_tcp_socket_for(g_config.coord_host);
  long placed = fd < 0 ? -1 : STASIS_SYS3(SYS_dup3, fd, kCoordinatorFd, O_CLOEXEC);
  if (fd >= 0 && fd != kCoordinatorFd) STASIS_SYS1(SYS_close, fd);
  if (placed < 0) error << "cannot make the coordinator connection's descriptor " << kCoordinatorFd;
  return placed >= 0;
}

// The pid space this process's virtual pids belong to, as it last said when joining (MANIFEST.json's
// "pid_space"): what stasis_plugin_pid_space gives plugins.
char g_virtual_pid_space[STASIS_NAME_MAX];

bool connect_to_coordinator(bool restarted, LogLine& error) {
  if (!g_joined_via_relay &&
      stasis_connect_socket(kCoordinatorFd, g_config.coord_host, g_config.coord_port) != 0) {
    error << "cannot reach the coordinator at " << g_config.coord_host << ":"
          << static_cast<unsigned>(g_config.coord_port);
    return false;
  }
  static StasisProcessInfo info;
  info = {};
  info.pid = static_cast<uint32_t>(sys_getpid());
  info.original_pid = g_config.original_pid;
  info.restarted = restarted ? 1 : 0;
  info.restarted_generation = restarted ? g_restart_info.generation : 0;
  info.restart_process_count = restarted ? g_restart_info.restart_process_count : 0;
  struct utsname_like { char s[6][65]; } uts;
  if (STASIS_SYS1(SYS_uname, &uts) == 0) str_copy(info.hostname, uts.s[1], sizeof info.hostname);
  struct stat pid_namespace;  // a stat, no descriptor: see below
  if (g_boot_id[0] && STASIS_SYS4(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/pid", &pid_namespace, 0) == 0)
    FixedText(info.pid_space, sizeof info.pid_space) << g_boot_id << "/" << pid_namespace.st_ino;
  note_kernel_pid_space(info.pid_space);
  const char* restored_space = pid_table_space();
  str_copy(info.virtual_pid_space, restored_space ? restored_space : info.pid_space, sizeof info.virtual_pid_space);
  str_copy(g_virtual_pid_space, info.virtual_pid_space, sizeof g_virtual_pid_space);  // stasis_plugin_pid_space
  // The thread's name is the program's (inherited when the thread was made): no descriptor is
  // opened here, as this runs beside the program, which may dup2 onto any number meanwhile.
  char comm[17] = {};
  if (STASIS_SYS2(SYS_prctl, PR_GET_NAME, comm) == 0) str_copy(info.program, comm, sizeof info.program);
  str_copy(info.ckpt_dir, g_config.ckpt_dir, sizeof info.ckpt_dir);
  info.interval_seconds = g_config.interval_seconds;
  plugin_barrier_names(info.plugin_barriers, sizeof info.plugin_barriers);
  describe_srun_of_task(info);
  uint64_t client_id = 0;
  char reason[256] = {};
  if (stasis_client_handshake(kCoordinatorFd, g_config.secret, sizeof g_config.secret,
                              STASIS_ROLE_PROCESS, &info, &client_id, reason, sizeof reason) != 0) {
    STASIS_SYS1(SYS_close, kCoordinatorFd);
    // A relay that refuses (one of another computation at the same address, say) or fails: the
    // coordinator itself, once. The socket is made here, beside the program, only on this path.
    if (g_joined_via_relay) {
      g_joined_via_relay = false;
      int fd = stasis_tcp_socket_for(g_config.coord_host);
      long placed = fd < 0 ? -1 : STASIS_SYS3(SYS_dup3, fd, kCoordinatorFd, O_CLOEXEC);
      if (fd >= 0 && fd != kCoordinatorFd) STASIS_SYS1(SYS_close, fd);
      if (placed >= 0) return connect_to_coordinator(restarted, error);
    }
    error << "the coordinator at " << g_config.coord_host << ":"
          << static_cast<unsigned>(g_config.coord_port) << " refused this process: " << reason;
    return false;
  }
  return true;
}

}  // namespace stasis::rt

// ---- application API (include/stasis/stasis.h) -----------------------------------------------
using namespace stasis::rt;

extern "C" __attribute__((visibility("default"))) const char* stasis_plugin_pid_space() {
  return g_virtual_pid_space[0] ? g_virtual_pid_space : nullptr;
}

extern "C" __attribute__((visibility("default"))) int stasis_runtime_is_enabled() {
  return g_config.active ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) int stasis_runtime_checkpoint() {
  if (g_config.active) wait_until_joined();
  if (!g_config.active) return -1;
  uint32_t checkpoints = g_checkpoints_done.load(), restarts = g_restarts_done.load();
  bool sent = send_to_coordinator(STASIS_MSG_REQUEST_CHECKPOINT, 0, nullptr, 0);
  if (!sent) return -1;
  while (g_checkpoints_done.load() == checkpoints && g_restarts_done.load() == restarts)
    futex_wait(&g_checkpoints_done, checkpoints, 10 * 1000000L);
  if (g_restarts_done.load() != restarts) return 2;
  return g_last_commit_ok.load() ? 1 : -1;
}

extern "C" __attribute__((visibility("default"))) void stasis_runtime_delay_checkpoints() {
  for (;;) {
    while (g_suspend_requested.load() != 0) futex_wait(&g_suspend_requested, 1, 10 * 1000000L);
    g_delay_depth.fetch_add(1);
    if (g_suspend_requested.load() == 0) {
      t_delay_depth++;
      return;
    }
    g_delay_depth.fetch_sub(1);
  }
}

extern "C" __attribute__((visibility("default"))) void stasis_runtime_allow_checkpoints() {
  t_delay_depth--;
  g_delay_depth.fetch_sub(1);
}
