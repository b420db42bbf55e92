// Processes outside the computation and the regular files they share with it (outside.h): the
// launch's ancestors, and after a restart `stasis restart`'s, each noted with its start time; at
// a checkpoint their descriptors are listed once and compared with the computation's by kcmp.
#include "plugins/files/outside.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "runtime/rt.h"

namespace stasis::rt {
namespace {

struct OutsideProcess {
  int32_t pid;
  uint64_t start_time;  // field 22 of /proc/PID/stat: tells a reused pid from the one noted
};
constexpr int kMaxOutside = 32;
OutsideProcess g_outside[kMaxOutside];
int g_outside_count = 0;
bool g_noted_restart_outside = false;  // `stasis restart`'s ancestors are among them

// The outside processes' regular files, listed at the first look-up of a checkpoint.
struct OutsideHeld {
  int32_t pid, fd;
  uint64_t dev, ino;
};
constexpr uint32_t kMaxHeld = 2048;
OutsideHeld g_held[kMaxHeld];
uint32_t g_held_count = 0;
bool g_held_listed = false;
bool g_held_complete = true;  // false: more than kMaxHeld, some not listed

uint64_t start_time_of(long pid) {
  char stat[512];
  const char* after = read_proc_stat(pid, stat, sizeof stat);
  return after ? proc_stat_field(after, 22) : 0;
}

void note_outside(long pid, uint64_t start_time) {
  if (pid <= 1 || start_time == 0 || g_outside_count == kMaxOutside) return;
  for (int i = 0; i < g_outside_count; i++)
    if (g_outside[i].pid == pid && g_outside[i].start_time == start_time) return;
  g_outside[g_outside_count++] = {static_cast<int32_t>(pid), start_time};
}

// Notes each ancestor of `pid` below init (not `pid` itself).
void note_ancestors_of(long pid) {
  for (int depth = 0; depth < kMaxOutside && pid > 1; depth++) {
    char stat[512];
    const char* after = read_proc_stat(pid, stat, sizeof stat);
    const long parent = after ? static_cast<long>(proc_stat_field(after, 4)) : 0;
    if (parent <= 1) return;
    note_outside(parent, start_time_of(parent));
    pid = parent;
  }
}

// After a restart, the first process of the computation is `stasis restart`'s own (same pid):
// its ancestors are the outside. Its virtual pid is the launch's (STASIS_LAUNCH_PID).
void note_restart_outside() {
  g_noted_restart_outside = true;
  long first = 0;
  for (const char* p = g_settings.launch_pid.text; *p >= '0' && *p <= '9'; p++) first = first * 10 + (*p - '0');
  if (first > 0) note_ancestors_of(real_pid_of(first));
}

void list_outside_files() {
  g_held_listed = true;
  g_held_count = 0;
  g_held_complete = true;
  // A process exec'd since the restart starts with nothing noted.
  if (have_pid_table() && !g_noted_restart_outside) note_restart_outside();
  for (int i = 0; i < g_outside_count; i++) {
    const OutsideProcess& p = g_outside[i];
    if (start_time_of(p.pid) != p.start_time) continue;  // gone, or its pid reused
    char dir_path[48] = "/proc/";
    format_uint(dir_path + 6, static_cast<unsigned long>(p.pid));
    str_copy(dir_path + str_len(dir_path), "/fd", 8);
    for_each_proc_number(dir_path, [&](long fd, const char* name, long dir) {
      struct stat st;
      if (STASIS_SYS4(SYS_newfstatat, dir, name, &st, 0) != 0 || !S_ISREG(st.st_mode)) return true;
      if (g_held_count == kMaxHeld) return g_held_complete = false;
      g_held[g_held_count++] = {p.pid, static_cast<int32_t>(fd), st.st_dev, st.st_ino};
      return true;
    });
  }
}

// Whether descriptor `fd` of process `pid` is open for writing (true when it cannot be told).
bool open_for_writing(int32_t pid, int32_t fd) {
  char path[64] = "/proc/";
  format_uint(path + 6, static_cast<unsigned long>(pid));
  str_copy(path + str_len(path), "/fdinfo/", 16);
  format_uint(path + str_len(path), static_cast<unsigned long>(fd));
  char text[512];
  if (read_small_file(path, text, sizeof text) <= 0) return true;
  for (const char* p = text; *p; p++)
    if ((p == text || p[-1] == '\n') && str_starts(p, "flags:")) {
      p += 6;
      while (*p == ' ' || *p == '\t') p++;
      uint64_t flags = 0;
      for (; *p >= '0' && *p <= '7'; p++) flags = flags * 8 + static_cast<uint64_t>(*p - '0');
      return (flags & O_ACCMODE) != O_RDONLY;
    }
  return true;
}

}  // namespace

void note_outside_processes_at_launch() {
  g_outside_count = 0;
  note_ancestors_of(sys_getpid());
  static char list[kMaxOutside * 32 + 1];  // "PID:START," each
  size_t n = 0;
  for (int i = 0; i < g_outside_count; i++) {
    if (n) list[n++] = ',';
    format_uint(list + n, static_cast<unsigned long>(g_outside[i].pid));
    n = str_len(list);
    list[n++] = ':';
    format_uint(list + n, g_outside[i].start_time);
    n = str_len(list);
  }
  list[n] = 0;
  setenv("STASIS_OUTSIDE_PROCESSES", list, 1);  // before main: single-threaded
}

void note_outside_processes_from_env() {
  g_outside_count = 0;
  const char* list = g_settings.outside_processes.or_else(nullptr);
  uint64_t value = 0, pid = 0;
  for (const char* p = list; p; p++) {
    if (*p >= '0' && *p <= '9') {
      value = value * 10 + static_cast<uint64_t>(*p - '0');
    } else if (*p == ':') {
      pid = value, value = 0;
    } else {
      note_outside(static_cast<long>(pid), value);
      pid = value = 0;
      if (!*p) break;
    }
  }
}

void note_outside_after_restart() {
  note_restart_outside();  // beside the launch's (restored with the memory), which may live on
}

void begin_outside_lookups() { g_held_listed = false; }

OutsideUse outside_use_of(int fd, const struct stat& st) {
  if (!g_held_listed) list_outside_files();
  OutsideUse use = g_held_complete ? OutsideUse::kNone : OutsideUse::kOtherWriter;
  const long self = sys_getpid();
  for (uint32_t i = 0; i < g_held_count; i++) {
    const OutsideHeld& h = g_held[i];
    if (h.dev != st.st_dev || h.ino != st.st_ino) continue;
    const long order = STASIS_SYS5(SYS_kcmp, h.pid, self, 0 /* KCMP_FILE */, h.fd, fd);
    if (order == 0) return OutsideUse::kSharedDescription;
    if (order < 0 || open_for_writing(h.pid, h.fd)) use = OutsideUse::kOtherWriter;
  }
  return use;
}

}  // namespace stasis::rt
