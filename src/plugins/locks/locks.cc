// File locks: flock(2) locks, POSIX record locks (fcntl F_SETLK/F_SETLKW) and open file
// description locks (F_OFD_SETLK) the process holds at a checkpoint are taken again by the
// restarted process before any of its threads runs.
//
// /proc/self/fdinfo/N lists the locks held through descriptor N's open file description: flock
// and OFD locks (which belong to the description) and this process's POSIX locks taken through
// it. Each description is read once (dups are skipped). The locks are noted in this file's own
// table, in the runtime's memory: the image saves it with the rest, and the restarted process
// finds it there. Taking them back belongs in the restarted process itself, after the loader:
// POSIX locks belong to a process (and any close of the file by it drops them), flock and OFD
// locks to the description the process holds.
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>

#include "plugins/locks/locks.h"

namespace stasis::rt {
namespace {

enum class LockKind : uint8_t { kPosix, kFlock, kOfd };

struct HeldLock {
  int32_t fd;
  LockKind kind;
  int16_t type;    // F_RDLCK or F_WRLCK
  int64_t start;
  int64_t length;  // 0: up to the end of the file, however far it grows
};

constexpr uint32_t kMaxHeldLocks = 1024;
constinit HeldLock g_held_locks[kMaxHeldLocks];
uint32_t g_held_lock_count = 0;

const char* kind_name(LockKind kind) {
  switch (kind) {
    case LockKind::kPosix: return "POSIX record";
    case LockKind::kFlock: return "flock";
    case LockKind::kOfd: return "OFD";
  }
  return "?";
}

// The next blank-separated word of `p` into `out`; p moves past it.
void next_word(const char*& p, char* out, size_t cap) {
  while (*p == ' ' || *p == '\t') p++;
  size_t n = 0;
  for (; *p && *p != ' ' && *p != '\t'; p++)
    if (n + 1 < cap) out[n++] = *p;
  out[n] = 0;
}

// One "lock:" line of fdinfo: "lock:\t1: POSIX  ADVISORY  WRITE 4711 fe:00:1234 10 14" (the end
// offset is inclusive, or EOF). Returns false, with `error` naming the descriptor, for a kind
// this version cannot take back.
bool parse_lock_line(const char* line, const StasisFdRecord& fd, HeldLock& lock, LogLine& error) {
  const char* p = line + str_len("lock:");
  char id[24], kind[16], mode[16], type[16], pid[24], where[64], start[24], end[24];
  next_word(p, id, sizeof id);
  next_word(p, kind, sizeof kind);
  next_word(p, mode, sizeof mode);
  next_word(p, type, sizeof type);
  next_word(p, pid, sizeof pid);
  next_word(p, where, sizeof where);
  next_word(p, start, sizeof start);
  next_word(p, end, sizeof end);
  lock.fd = fd.fd;
  if (str_eq(kind, "POSIX")) lock.kind = LockKind::kPosix;
  else if (str_eq(kind, "FLOCK")) lock.kind = LockKind::kFlock;
  else if (str_eq(kind, "OFDLCK")) lock.kind = LockKind::kOfd;
  else kind[0] = 0;
  if (str_eq(type, "READ")) lock.type = F_RDLCK;
  else if (str_eq(type, "WRITE")) lock.type = F_WRLCK;
  else kind[0] = 0;
  if (!kind[0] || !str_eq(mode, "ADVISORY")) {
    error << "descriptor " << fd.fd << " (" << fd.path << ") holds a lock or lease of a kind this "
          << "version of Stasis cannot take back (" << line + str_len("lock:\t")
          << "); not checkpointing";
    return false;
  }
  lock.start = static_cast<int64_t>(parse_decimal(start));
  lock.length = str_eq(end, "EOF") ? 0 : static_cast<int64_t>(parse_decimal(end)) - lock.start + 1;
  return true;
}

void describe(LogLine& line, const HeldLock& lock) {
  char path[48] = "/proc/self/fd/", target[256];
  format_uint(path + 14, static_cast<unsigned long>(lock.fd));
  long len = STASIS_SYS3(SYS_readlink, path, target, sizeof target - 1);
  target[len > 0 ? len : 0] = 0;
  line << "the " << kind_name(lock.kind) << (lock.type == F_WRLCK ? " write" : " read")
       << " lock on " << target << " (descriptor " << lock.fd;
  if (lock.kind != LockKind::kFlock) {
    line << ", bytes " << static_cast<long>(lock.start) << "-";
    if (lock.length) line << static_cast<long>(lock.start + lock.length - 1);
    else line << "EOF";
  }
  line << ")";
}

struct flock range_of(const HeldLock& lock) {
  struct flock range = {};
  range.l_type = lock.type;
  range.l_whence = SEEK_SET;
  range.l_start = lock.start;
  range.l_len = lock.length;
  return range;
}

long take(const HeldLock& lock) {
  if (lock.kind == LockKind::kFlock)
    return STASIS_SYS2(SYS_flock, lock.fd, (lock.type == F_WRLCK ? LOCK_EX : LOCK_SH) | LOCK_NB);
  struct flock range = range_of(lock);
  return STASIS_SYS3(SYS_fcntl, lock.fd, lock.kind == LockKind::kOfd ? F_OFD_SETLK : F_SETLK, &range);
}

// Who holds what keeps `lock` from being taken, for the message (a pid; -1 for an OFD lock).
long conflicting_holder(const HeldLock& lock) {
  if (lock.kind == LockKind::kFlock) return 0;
  struct flock range = range_of(lock);
  if (STASIS_SYS3(SYS_fcntl, lock.fd, lock.kind == LockKind::kOfd ? F_OFD_GETLK : F_GETLK, &range) != 0 ||
      range.l_type == F_UNLCK)
    return 0;
  return range.l_pid;
}

}  // namespace

bool capture_held_locks(const StasisFdRecord* fds, uint32_t count, LogLine& error) {
  g_held_lock_count = 0;
  bool ok = true;
  for (uint32_t i = 0; ok && i < count; i++) {
    const StasisFdRecord& fd = fds[i];
    if (fd.same_description_as >= 0) continue;  // its first number listed the description's locks
    for_each_fdinfo_line(fd.fd, [&](const char* line) {
      if (!ok || !str_starts(line, "lock:")) return;
      if (g_held_lock_count == kMaxHeldLocks) {
        error << "the process holds more than " << kMaxHeldLocks << " file locks; not checkpointing";
        ok = false;
        return;
      }
      ok = parse_lock_line(line, fd, g_held_locks[g_held_lock_count], error);
      if (ok) g_held_lock_count++;
    });
  }
  return ok;
}

void retake_held_locks() {
  for (uint32_t i = 0; i < g_held_lock_count; i++) {
    const HeldLock& lock = g_held_locks[i];
    long r = take(lock);
    if (r == 0) continue;
    LogLine line;
    line << "restart failed: cannot take back ";
    describe(line, lock);
    if (r == -EAGAIN || r == -EACCES) {
      long holder = conflicting_holder(lock);
      line << ": another process holds a conflicting lock";
      if (holder > 0) line << " (pid " << holder << ")";
    } else {
      line << " (errno " << -r << ")";
    }
    line.emit_restart_failure();
    STASIS_SYS1(SYS_exit_group, 1);
  }
}

}  // namespace stasis::rt
