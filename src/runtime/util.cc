// Lock-free, allocation-free helpers for the checkpoint path (see rt.h).
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <time.h>

#include "common/fixed_text.h"
#include "runtime/rt.h"

namespace stasis::rt {

size_t str_len(const char* s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

void str_copy(char* dst, const char* src, size_t cap) {
  size_t i = 0;
  for (; i + 1 < cap && src[i]; i++) dst[i] = src[i];
  if (cap) dst[i] = 0;
}

bool str_starts(const char* s, const char* prefix) {
  while (*prefix)
    if (*s++ != *prefix++) return false;
  return true;
}

bool str_ends(const char* s, const char* suffix) {
  size_t a = str_len(s), b = str_len(suffix);
  return a >= b && str_eq(s + a - b, suffix);
}

bool str_eq(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

char** environment_entry(char** envp, const char* name, size_t name_len) {
  for (char** e = envp; e && *e; e++) {
    size_t i = 0;  // byte by byte: an entry may be shorter than the name
    while (i < name_len && (*e)[i] == name[i]) i++;
    if (i == name_len && (*e)[i] == '=') return e;
  }
  return nullptr;
}

void format_uint(char* out, unsigned long v) {
  out[0] = 0;
  FixedText(out, 21) << v;  // 20 digits at most
}

namespace {
int g_restart_stderr = 0;  // `stasis restart`'s own stderr while a restart is under way, else 0
}  // namespace

void report_to_restart(int fd) {
  if (fd == 0 && g_restart_stderr > 0) STASIS_SYS1(SYS_close, g_restart_stderr);
  g_restart_stderr = fd > 0 ? fd : 0;
}

void LogLine::emit_restart_failure() {
  if (g_restart_stderr > 0) write_to(g_restart_stderr);
  else emit();
}

// The runtime's own lines never go to the program's descriptors: its stdout and stderr are its
// output (a VM's serial console, a pipe another program parses). In order of preference:
//  1. the coordinator, which logs the line and adds it to the reply of the command under way,
//     when this process is joined and this is the process itself (a forked image writer or a
//     vfork child shares the connection's descriptor but not its send lock);
//  2. `stasis restart`'s own stderr while a restart is under way;
//  3. appended to coordinator.log in the checkpoint directory (where a daemon coordinator logs),
//     or dropped when there is none to open.
void LogLine::emit() {
  if (sys_getpid() == g_real_pid && coordinator_joined() &&
      send_to_coordinator(STASIS_MSG_LOG, 0, buf_, static_cast<uint32_t>(size()))) {
    clear();
    return;
  }
  if (g_restart_stderr > 0) {
    write_to(g_restart_stderr);
    return;
  }
  char path[STASIS_IMAGE_PATH_MAX + 32];
  path[0] = 0;
  if (g_config.ckpt_dir[0]) FixedText(path, sizeof path) << g_config.ckpt_dir << "/coordinator.log";
  long fd = path[0] ? STASIS_SYS3(SYS_open, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)
                    : -1;
  if (fd >= 0) {
    write_to(static_cast<int>(fd));
    STASIS_SYS1(SYS_close, fd);
  }
  clear();
}

// One write of "stasis[pid]: <line>\n", so that lines of several processes never interleave.
void LogLine::write_to(int fd) {
  char out[sizeof buf_ + 48] = "stasis[";
  format_uint(out + 7, static_cast<unsigned long>(sys_getpid()));
  size_t p = str_len(out);
  out[p++] = ']';
  out[p++] = ':';
  out[p++] = ' ';
  const size_t len = size();
  __builtin_memcpy(out + p, buf_, len);
  out[p + len] = '\n';
  STASIS_SYS3(SYS_write, fd, out, p + len + 1);
  clear();
}

bool Arena::create(size_t bytes) {
  // Shared, so a forked image writer and the process see the same scratch (the writer's
  // outcome travels back through it); a shared mapping also never merges with the program's.
  long addr = STASIS_SYS6(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (addr < 0 && addr > -4096) return false;
  base_ = reinterpret_cast<char*>(addr);
  size_ = bytes;
  used_ = 0;
  return true;
}

void Arena::destroy() {
  if (base_) STASIS_SYS2(SYS_munmap, base_, size_);
  base_ = nullptr;
  size_ = used_ = 0;
}

void* Arena::alloc(size_t bytes) {
  size_t start = (used_ + 63) & ~size_t(63);
  if (start + bytes > size_) return nullptr;
  used_ = start + bytes;
  return base_ + start;
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns) {
  struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
  STASIS_SYS4(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, timeout_ns < 0 ? nullptr : &ts);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  STASIS_SYS3(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff);
}

void sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  STASIS_SYS2(SYS_nanosleep, &ts, nullptr);
}

long read_small_file(const char* path, char* buf, size_t cap) {
  long fd = STASIS_SYS3(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return fd;
  size_t len = 0;
  while (len + 1 < cap) {
    long n = STASIS_SYS3(SYS_read, fd, buf + len, cap - 1 - len);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  STASIS_SYS1(SYS_close, fd);
  buf[len] = 0;
  return static_cast<long>(len);
}

uint64_t parse_hex(const char*& p) {
  uint64_t v = 0;
  for (;; p++) {
    int d;
    if (*p >= '0' && *p <= '9') d = *p - '0';
    else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
    else break;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

uint64_t parse_status_hex(const char* text, const char* field) {
  size_t flen = str_len(field);
  for (const char* line = text; *line;) {
    if (str_starts(line, field) && line[flen] == ':') {
      const char* p = line + flen + 1;
      while (*p == ' ' || *p == '\t') p++;
      return parse_hex(p);
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return 0;
}

const char* read_proc_stat(long pid, char* buf, size_t cap) {
  char path[48] = "/proc/";
  if (pid == 0) str_copy(path + 6, "self", 8);
  else format_uint(path + 6, static_cast<unsigned long>(pid));
  str_copy(path + str_len(path), "/stat", 8);
  if (read_small_file(path, buf, cap) <= 0) return nullptr;
  const char* after = nullptr;
  for (const char* c = buf; *c; c++)
    if (*c == ')') after = c;  // the last one ends the name
  return after;
}

uint64_t proc_stat_field(const char* after_comm, int field) {
  const char* p = after_comm;
  int current = 2;
  while (*p && current < field) {
    if (*p == ' ') current++;
    p++;
  }
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  return v;
}

}  // namespace stasis::rt
