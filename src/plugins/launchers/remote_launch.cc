// Remote launches: a process of the computation that runs ssh, rsh or another remote launcher
// (STASIS_REMOTE_LAUNCHERS, Open MPI's plm_rsh_agent, MPICH's -launcher-exec) gets its remote
// command rewritten, so that the process it starts on the other host runs under
// `stasis launch --join` and joins this computation's coordinator:
//   ssh [OPTIONS] HOST CMD...  ->  ssh [OPTIONS] HOST exec env STASIS_COORD=ADDR:PORT [STASIS_*=...]
//                                  STASIS_EXE launch --join -- /bin/sh -c 'CMD...'
// ssh passes no environment, so the coordinator's address travels on the command line. The
// secret does not (command lines are readable by every user of both hosts): the remote side
// reads it from the coordinator's owner-only secret file under STASIS_RUNTIME_DIR (or
// $HOME/.stasis), which the hosts share like the Stasis installation itself.
//
// Wrappers run in the program's own context, possibly in a vfork child: no malloc, no stdio;
// the rewritten argument vector lives in a private mapping released if the exec fails.
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "plugins/launchers/forwarded_variables.h"
#include "plugins/launchers/remote_launch.h"
#include "runtime/rt.h"
#include "runtime/settings.h"

extern char** environ;

using stasis::rt::g_config;
using stasis::rt::next_symbol;
using stasis::rt::str_copy;
using stasis::rt::str_eq;
using stasis::rt::str_len;
using stasis::rt::str_starts;

namespace {

constexpr size_t kMaxLaunchers = 16;
constexpr size_t kLauncherNameMax = 64;
char g_launchers[kMaxLaunchers][kLauncherNameMax];
size_t g_launcher_count = 0;

const char* base_name(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; p++)
    if (*p == '/') base = p + 1;
  return base;
}

void add_launcher(const char* text, size_t len) {
  while (len > 0 && text[len - 1] == ' ') len--;
  while (len > 0 && *text == ' ') text++, len--;
  if (len == 0 || g_launcher_count == kMaxLaunchers) return;
  // A launcher given as a path ("/opt/x/nsrsh") or with arguments ("ssh -x") is known by the
  // name of its program, which is what exec receives.
  size_t word = 0;
  while (word < len && text[word] != ' ') word++;
  size_t start = 0;
  for (size_t i = 0; i < word; i++)
    if (text[i] == '/') start = i + 1;
  size_t n = word - start;
  if (n == 0 || n >= kLauncherNameMax) return;
  __builtin_memcpy(g_launchers[g_launcher_count], text + start, n);
  g_launchers[g_launcher_count][n] = 0;
  g_launcher_count++;
}

// A list separated by ':' or ',' (Open MPI's agent list, "ssh : rsh", uses ':').
void add_launchers(const char* list) {
  if (!list) return;
  const char* item = list;
  for (const char* p = list;; p++) {
    if (*p == ':' || *p == ',' || *p == 0) {
      add_launcher(item, static_cast<size_t>(p - item));
      item = p + 1;
    }
    if (*p == 0) break;
  }
}

// Runs before main with the program's arguments (glibc passes them to ELF constructors): an MPI
// starter names its agent on its command line, or in the environment as the runtime's settings
// read it (settings.h; not getenv: bash defines its own, which finds nothing before the shell
// has set up its variables, so a launcher that bash starts was not rewritten).
__attribute__((constructor)) void find_remote_launchers(int argc, char** argv) {
  using stasis::rt::g_settings;
  if (!g_settings.coord.set) return;
  add_launchers("ssh:rsh");
  add_launchers(g_settings.remote_launchers.or_else(nullptr));
  add_launchers(g_settings.ompi_rsh_agent.or_else(nullptr));
  add_launchers(g_settings.hydra_launcher_exec.or_else(nullptr));
  for (int i = 1; argv && i + 1 < argc; i++) {
    const char* name = argv[i];
    while (*name == '-') name++;
    if (str_eq(argv[i], "--mca") && i + 2 < argc && str_eq(argv[i + 1], "plm_rsh_agent"))
      add_launchers(argv[i + 2]);
    else if (str_eq(name, "launcher-exec") || str_eq(name, "bootstrap-exec"))
      add_launchers(argv[i + 1]);
  }
}

bool is_remote_launcher(const char* program) {
  const char* name = base_name(program);
  for (size_t i = 0; i < g_launcher_count; i++)
    if (str_eq(name, g_launchers[i])) return true;
  return false;
}

// ssh's options that take a value (rsh's -l and nsrsh's -o/-p/-l/-i are among them).
bool takes_value(char option) {
  for (const char* p = "BbcDEeFIiJLlmOopQRSWw"; *p; p++)
    if (*p == option) return true;
  return false;
}

// Index of the first word of the remote command in `argv` (LAUNCHER [OPTIONS] HOST COMMAND...),
// or 0 when there is none (an interactive login: nothing to run under Stasis).
int remote_command_index(char* const argv[]) {
  int i = 1;
  for (; argv[i] && argv[i][0] == '-' && argv[i][1]; i++) {
    if (str_eq(argv[i], "--")) {
      i++;
      break;
    }
    for (const char* p = argv[i] + 1; *p; p++)
      if (takes_value(*p)) {
        if (p[1] == 0 && argv[i + 1]) i++;
        break;
      }
  }
  if (!argv[i] || !argv[i + 1]) return 0;
  return i + 1;
}

// Text and pointers of the rewritten argument vector, in one private mapping.
class Scratch {
 public:
  ~Scratch() {
    if (base_) STASIS_SYS2(SYS_munmap, base_, size_);
  }
  bool create(size_t bytes) {  // a new mapping, in place of any earlier one
    if (base_) STASIS_SYS2(SYS_munmap, base_, size_);
    base_ = nullptr;
    used_ = 0;
    long p = STASIS_SYS6(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p < 0 && p > -4096) return false;
    base_ = reinterpret_cast<char*>(p);
    size_ = bytes;
    return true;
  }
  char* text_start() { return base_ + used_; }
  bool put(const char* s, size_t n) {
    if (used_ + n > size_) return false;
    __builtin_memcpy(base_ + used_, s, n);
    used_ += n;
    return true;
  }
  bool put(const char* s) { return put(s, str_len(s)); }
  // s in single quotes, for the remote shell, which reads the remote command as one text.
  bool put_quoted(const char* s) {
    if (!put("'")) return false;
    for (const char* p = s; *p; p++)
      if (!(*p == '\'' ? put("'\\''") : put(p, 1))) return false;
    return put("'");
  }
  bool end_word() { return put("", 1); }
  char** pointers(size_t count) {
    used_ = (used_ + 7) & ~size_t{7};
    if (used_ + count * sizeof(char*) > size_) return nullptr;
    auto** out = reinterpret_cast<char**>(base_ + used_);
    used_ += count * sizeof(char*);
    return out;
  }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

// OpenSSH's client (a program named ssh) becomes the ssh relay (../ssh/README.md), which carries
// the session as state of the computation: STASIS_EXE's folder's stasis-ssh-relay, with argv as
// its last words and what it needs before them. STASIS_SSH_RELAY=0 keeps the plain rewrite below
// (an ssh that execs into its remote command, as the multi-host tests' stand-in). Returns argv
// itself when the relay does not apply; sets *exec_path to the relay when it does.
char* const* relay_argv(const char* program, char* const argv[], Scratch& scratch, const char** exec_path) {
  const char* setting = stasis::rt::g_settings.ssh_relay.or_else(nullptr);
  const char* exe = stasis::rt::g_settings.exe.or_else(nullptr);
  if (!str_eq(base_name(program), "ssh") || (setting && str_eq(setting, "0")) || !exe || !*exe) return argv;
  int argc = 0;
  while (argv[argc]) argc++;
  if (!scratch.create(2 * str_len(exe) + 4096 + static_cast<size_t>(argc + 12) * sizeof(char*))) return argv;
  char* relay = scratch.text_start();
  size_t folder = str_len(exe) - str_len(base_name(exe));
  char port[8];
  stasis::rt::format_uint(port, g_config.coord_port);
  if (!scratch.put(exe, folder) || !scratch.put("stasis-ssh-relay") || !scratch.end_word()) return argv;
  if (STASIS_SYS2(SYS_access, relay, X_OK) != 0) {
    stasis::rt::LogLine line;
    (line << "warning: " << relay << " is missing; ssh's session cannot come back after a restart").emit();
    return argv;
  }
  char* coord = scratch.text_start();
  if (!scratch.put(g_config.coord_host) || !scratch.put(":") || !scratch.put(port) || !scratch.end_word()) return argv;
  char** out = scratch.pointers(static_cast<size_t>(argc) + 9);
  if (!out) return argv;
  const char* head[] = {relay, "--coord", coord, "--stasis", exe, "--ssh", program, "--"};
  int at = 0;
  for (const char* word : head) out[at++] = const_cast<char*>(word);
  for (int i = 0; i < argc; i++) out[at++] = argv[i];
  out[at] = nullptr;
  *exec_path = relay;
  return out;
}

// Builds the rewritten vector in `scratch`; returns argv itself when it is not a remote launch
// (not a launcher, no remote command, already rewritten, or no room).
char* const* remote_argv(const char* program, char* const argv[], Scratch& scratch, const char** exec_path) {
  *exec_path = program;
  if (!g_config.active || !argv || !argv[0] || !is_remote_launcher(program)) return argv;
  int command = remote_command_index(argv);
  if (command == 0 || (str_eq(argv[command], "exec") && argv[command + 1] &&
                       str_eq(argv[command + 1], "env") && argv[command + 2] &&
                       str_starts(argv[command + 2], "STASIS_COORD=")))
    return argv;
  if (char* const* relayed = relay_argv(program, argv, scratch, exec_path); relayed != argv) return relayed;
  size_t original_bytes = 0;
  int argc = 0;
  for (; argv[argc]; argc++) original_bytes += str_len(argv[argc]) * 4 + 4;
  if (!scratch.create(original_bytes + 64 * 1024)) return argv;

  using stasis::kForwardedVariables;
  constexpr int kMaxWords = 16 + sizeof kForwardedVariables / sizeof *kForwardedVariables;
  char* words[kMaxWords];
  int count = 0;
  auto word = [&](auto&& fill) {
    char* start = scratch.text_start();
    if (!fill() || !scratch.end_word()) return false;
    words[count++] = start;
    return true;
  };
  char port[8];
  stasis::rt::format_uint(port, g_config.coord_port);
  const char* exe = stasis::rt::g_settings.exe.or_else(nullptr);
  // exec: the remote shell becomes the process of the computation rather than a parent of it
  // that never joins (which would hold every checkpoint at its "children" barrier).
  bool ok = word([&] { return scratch.put("exec"); }) && word([&] { return scratch.put("env"); }) &&
            word([&] {
    return scratch.put("STASIS_COORD=") && scratch.put(g_config.coord_host) && scratch.put(":") &&
           scratch.put(port);
  });
  for (const char* name : kForwardedVariables) {
    bool known = false;
    const char* value = stasis::rt::setting_named(name, &known);
    if (!known) {  // a forwarded variable the runtime never read would silently stay behind
      stasis::rt::LogLine line;
      (line << "internal error: " << name << " is forwarded to other hosts but is no runtime setting").emit();
    }
    if (ok && value)
      ok = word([&] { return scratch.put(name) && scratch.put("=") && scratch.put_quoted(value); });
  }
  ok = ok && word([&] { return scratch.put_quoted(exe && *exe ? exe : "stasis"); }) &&
       word([&] { return scratch.put("launch"); }) && word([&] { return scratch.put("--join"); }) &&
       word([&] { return scratch.put("--"); }) && word([&] { return scratch.put("/bin/sh"); }) &&
       word([&] { return scratch.put("-c"); });
  // The launcher joins its command's words with spaces for the remote shell: so do we, then the
  // whole text becomes one quoted argument of that shell's `sh -c`.
  ok = ok && word([&] {
    if (!scratch.put("'")) return false;
    for (int i = command; argv[i]; i++) {
      if (i > command && !scratch.put(" ")) return false;
      for (const char* p = argv[i]; *p; p++)
        if (!(*p == '\'' ? scratch.put("'\\''") : scratch.put(p, 1))) return false;
    }
    return scratch.put("'");
  });
  char** out = ok ? scratch.pointers(static_cast<size_t>(command + count + 1)) : nullptr;
  if (!out) {
    stasis::rt::LogLine line;
    (line << "warning: the remote command of " << base_name(program)
          << " is too long to run under Stasis; the remote side runs without checkpoints")
        .emit();
    return argv;
  }
  for (int i = 0; i < command; i++) out[i] = argv[i];
  for (int i = 0; i < count; i++) out[command + i] = words[i];
  out[command + count] = nullptr;
  return out;
}

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
ExecveFn g_execve, g_execvpe;
ExecvFn g_execv, g_execvp;
int (*g_fexecve)(int, char* const[], char* const[]);
int (*g_execveat)(int, const char*, char* const[], char* const[], int);

// Calls exec, guarded against the checkpoint signal (enter_exec in runtime/rt.h). A failed exec
// returns with its errno: leaving the guard and dropping the scratch mapping leave errno alone.
template <typename Exec>
int exec_guarded(Exec exec) {
  bool entered = stasis::rt::enter_exec();
  int r = exec();
  stasis::rt::exec_failed(entered);
  return r;
}

// Calls exec with the (possibly rewritten) program and arguments.
template <typename Exec>
int exec_remote_aware(const char* program, char* const argv[], Exec exec) {
  Scratch scratch;
  const char* exec_path = program;
  char* const* args = remote_argv(program, argv, scratch, &exec_path);
  return exec_guarded([&] { return exec(exec_path, args); });
}

// execl's variadic arguments as a vector (on the stack: exec may run in a vfork child).
#define STASIS_COLLECT_ARGS(first, ap, args)                              \
  size_t n_args = 1;                                                      \
  va_start(ap, first);                                                    \
  while (va_arg(ap, const char*)) n_args++;                               \
  va_end(ap);                                                             \
  auto** args = static_cast<char**>(__builtin_alloca((n_args + 1) * sizeof(char*))); \
  args[0] = const_cast<char*>(first);                                     \
  va_start(ap, first);                                                    \
  for (size_t i = 1; i <= n_args; i++) args[i] = va_arg(ap, char*);

}  // namespace

int spawn_remote_aware(StasisSpawnFn real, pid_t* pid, const char* program,
                       const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
                       char* const argv[], char* const envp[]) {
  Scratch scratch;
  const char* exec_path = program;
  char* const* args = remote_argv(program, argv, scratch, &exec_path);
  return real(pid, exec_path, actions, attr, args, envp);
}

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))

STASIS_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  auto real = next_symbol(g_execve, "execve");
  return exec_remote_aware(path, argv, [&](const char* p, char* const* a) { return real(p, a, envp); });
}

STASIS_EXPORT int execv(const char* path, char* const argv[]) {
  auto real = next_symbol(g_execv, "execv");
  return exec_remote_aware(path, argv, [&](const char* p, char* const* a) { return real(p, a); });
}

STASIS_EXPORT int execvp(const char* file, char* const argv[]) {
  auto real = next_symbol(g_execvp, "execvp");
  return exec_remote_aware(file, argv, [&](const char* p, char* const* a) { return real(p, a); });
}

STASIS_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  auto real = next_symbol(g_execvpe, "execvpe");
  return exec_remote_aware(file, argv, [&](const char* p, char* const* a) { return real(p, a, envp); });
}

// By descriptor: no launcher to rewrite, but the same guard.
STASIS_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  auto real = next_symbol(g_fexecve, "fexecve");
  return exec_guarded([&] { return real(fd, argv, envp); });
}

STASIS_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  auto real = next_symbol(g_execveat, "execveat");
  return exec_guarded([&] { return real(dirfd, path, argv, envp, flags); });
}

STASIS_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  STASIS_COLLECT_ARGS(arg, ap, args);
  va_end(ap);
  return execv(path, args);
}

STASIS_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  STASIS_COLLECT_ARGS(arg, ap, args);
  va_end(ap);
  return execvp(file, args);
}

STASIS_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  STASIS_COLLECT_ARGS(arg, ap, args);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return execve(path, args, envp);
}
