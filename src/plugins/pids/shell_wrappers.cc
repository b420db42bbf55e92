// system, popen and pclose on virtual pids. libc's keep the child's kernel pid inside (on the
// waiting thread's stack, in the FILE), and a restart gives the child another one: the wait
// after the restart then fails with ECHILD. These do what POSIX says those functions do, with
// the runtime's posix_spawn and waitpid, whose pids are virtual and stay valid across restarts.
// Program path, not checkpoint path: they may lock and allocate like the libc functions.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
pid_t wait_for_child(pid_t pid, int* status) {
  pid_t r;
  do r = waitpid(pid, status, 0);  // the runtime's: translated, and repeated across a restart
  while (r < 0 && errno == EINTR);
  return r;
}
}  // namespace

// ---- system ----------------------------------------------------------------------------------
// While any thread is in system(), SIGINT and SIGQUIT are ignored in the process; the last one
// out puts the program's dispositions back (as libc does, with a count under a lock).
namespace {
pthread_mutex_t g_system_lock = PTHREAD_MUTEX_INITIALIZER;
int g_system_callers = 0;
struct sigaction g_saved_intr, g_saved_quit;
}  // namespace

STASIS_EXPORT int system(const char* command) {
  if (command == nullptr) return access("/bin/sh", X_OK) == 0 ? 1 : 0;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  pthread_mutex_lock(&g_system_lock);
  if (g_system_callers++ == 0) {
    sigaction(SIGINT, &ignore, &g_saved_intr);
    sigaction(SIGQUIT, &ignore, &g_saved_quit);
  }
  bool intr_ignored = g_saved_intr.sa_handler == SIG_IGN;
  bool quit_ignored = g_saved_quit.sa_handler == SIG_IGN;
  pthread_mutex_unlock(&g_system_lock);
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &chld, &old_mask);

  // The shell starts with the caller's mask and default SIGINT/SIGQUIT unless the program
  // ignores them.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  if (!intr_ignored) sigaddset(&defaults, SIGINT);
  if (!quit_ignored) sigaddset(&defaults, SIGQUIT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &old_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  char sh[] = "sh", dash_c[] = "-c", dashes[] = "--";
  char* argv[] = {sh, dash_c, dashes, const_cast<char*>(command), nullptr};
  pid_t pid = -1;
  int status = -1;
  int rc = posix_spawn(&pid, "/bin/sh", nullptr, &attr, argv, environ);  // the runtime's
  posix_spawnattr_destroy(&attr);
  int saved_errno = 0;
  if (rc == 0) {
    if (wait_for_child(pid, &status) < 0) {
      saved_errno = errno;
      status = -1;
    }
  } else {
    status = W_EXITCODE(127, 0);  // as libc: the shell could not be run
  }

  pthread_mutex_lock(&g_system_lock);
  if (--g_system_callers == 0) {
    sigaction(SIGINT, &g_saved_intr, nullptr);
    sigaction(SIGQUIT, &g_saved_quit, nullptr);
  }
  pthread_mutex_unlock(&g_system_lock);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (saved_errno) errno = saved_errno;
  return status;
}

// ---- popen / pclose --------------------------------------------------------------------------
// The streams popen made and their children's (virtual) pids. A later popen's child closes the
// descriptors of the others (POSIX), and pclose waits for the stream's own child.
namespace {
struct PipeStream {
  FILE* stream;
  int fd;
  pid_t pid;
  PipeStream* next;
};
pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;
PipeStream* g_streams = nullptr;
}  // namespace

STASIS_EXPORT FILE* popen(const char* command, const char* mode) {
  bool reading = false, writing = false, close_on_exec = false;
  for (const char* m = mode; *m; m++) {
    if (*m == 'r') reading = true;
    else if (*m == 'w') writing = true;
    else if (*m == 'e') close_on_exec = true;
  }
  if (reading == writing) {
    errno = EINVAL;
    return nullptr;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  int parent_end = reading ? fds[0] : fds[1];
  int child_end = reading ? fds[1] : fds[0];
  int child_number = reading ? STDOUT_FILENO : STDIN_FILENO;
  if (child_end == child_number) {  // dup2 onto itself would leave it close-on-exec
    int moved = fcntl(child_end, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) {
      int e = errno;
      close(fds[0]);
      close(fds[1]);
      errno = e;
      return nullptr;
    }
    close(child_end);
    child_end = moved;
  }
  auto* entry = static_cast<PipeStream*>(malloc(sizeof(PipeStream)));
  if (!entry) {
    close(parent_end);
    close(child_end);
    errno = ENOMEM;
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, child_number);
  pthread_mutex_lock(&g_streams_lock);
  for (PipeStream* s = g_streams; s; s = s->next)
    if (s->fd != child_number) posix_spawn_file_actions_addclose(&actions, s->fd);
  char sh[] = "sh", dash_c[] = "-c", dashes[] = "--";
  char* argv[] = {sh, dash_c, dashes, const_cast<char*>(command), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, environ);  // the runtime's
  posix_spawn_file_actions_destroy(&actions);
  close(child_end);
  FILE* stream = nullptr;
  if (rc == 0) {
    if (!close_on_exec) fcntl(parent_end, F_SETFD, 0);
    stream = fdopen(parent_end, reading ? "r" : "w");
  }
  if (!stream) {
    int e = rc != 0 ? rc : errno;
    close(parent_end);
    if (rc == 0) wait_for_child(pid, nullptr);
    pthread_mutex_unlock(&g_streams_lock);
    free(entry);
    errno = e;
    return nullptr;
  }
  *entry = {stream, parent_end, pid, g_streams};
  g_streams = entry;
  pthread_mutex_unlock(&g_streams_lock);
  return stream;
}

STASIS_EXPORT int pclose(FILE* stream) {
  pthread_mutex_lock(&g_streams_lock);
  PipeStream** link = &g_streams;
  while (*link && (*link)->stream != stream) link = &(*link)->next;
  PipeStream* entry = *link;
  if (entry) *link = entry->next;
  pthread_mutex_unlock(&g_streams_lock);
  if (!entry) {  // not a stream of popen's
    errno = ECHILD;
    return -1;
  }
  pid_t pid = entry->pid;
  free(entry);
  fclose(stream);
  int status = 0;
  return wait_for_child(pid, &status) < 0 ? -1 : status;
}

