// The files plugin, checkpoint side (runs in the preloaded runtime, hostile-territory rules).
// capture_fds() describes every open descriptor; kinds beyond plain files are handled by one
// function per kind, each in its own file (pipes.cc, event_fds.cc, saved_files.cc...). The
// restart side is restore.h.
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "runtime/rt.h"

namespace stasis::rt {

// Variable-length descriptor state gathered while threads are stopped; written as FD_DATA
// records after the FD records (possibly by the forked writer, which shares the descriptors).
struct FdDataItem {
  int32_t fd;
  uint32_t tag;        // StasisFdDataTag
  const void* bytes;   // in the arena, or nullptr with source_fd
  uint64_t len;
  int32_t source_fd;   // >= 0: the first `len` bytes of this file, read when the image is written
};

class FdDataList {
 public:
  bool init(Arena& arena, uint32_t cap);
  // Copies `len` bytes into the arena.
  bool add_copy(int fd, uint32_t tag, const void* bytes, uint64_t len);
  // `bytes` already lives in the arena (or other memory that outlives the write).
  bool add_ref(int fd, uint32_t tag, const void* bytes, uint64_t len);
  // Keeps a reference: the data is read from source_fd when the image is written.
  bool add_file(int fd, uint32_t tag, int source_fd, uint64_t len);
  // Reads every file's bytes into the arena now (for a forked writer: a fork freezes memory, not
  // files). False when they do not fit; items read so far keep their copy.
  bool read_files_now();
  Arena& arena() { return *arena_; }
  uint32_t count() const { return count_; }
  const FdDataItem& operator[](uint32_t i) const { return items_[i]; }

 private:
  Arena* arena_ = nullptr;
  FdDataItem* items_ = nullptr;
  uint32_t count_ = 0, cap_ = 0;
};

// Remembers which descriptors the computation inherited from outside when it was launched
// (they are the outside world's; restart connects its own there). After a restart, `only` is the
// bitmask of descriptors restart connected to the outside (StasisRestartInfo::external_fds).
void note_inherited_fds(const uint64_t* only = nullptr);
// In a process the launched one started: what STASIS_EXTERNAL_INODES says.
void note_external_fds_from_env();
// Describes every open descriptor (except the runtime's own). Fails, naming the descriptor and
// its kind, when one cannot be restored by this version.
bool capture_fds(Arena& arena, StasisFdRecord** out, uint32_t* count, FdDataList& data, LogLine& error);

// One function per kind of descriptor: 1 = captured into `r` (and `data`), 0 = not this kind,
// -1 = this kind but not restorable (error says why).
struct FdProbe {
  int fd;
  const char* link;        // readlink of /proc/self/fd/N
  const struct stat& st;
  bool deleted;            // the link ends in " (deleted)"
};
int capture_pipe_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_socket_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);  // sockets.cc
// At the "drain" barrier, before any process of the computation captures anything: bytes TCP
// holds back (Nagle) are pushed to the peers, so each receiver's copy of its queue has them.
void push_held_back_tcp_bytes();
// After a restart that moved sockets (another host, another port): the addresses the program saw
// for the socket at `fd` before it, while that is still the restored socket; else null.
const StasisTcpData* seen_names(int fd);  // sockets.cc
int capture_event_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_saved_file_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_mqueue_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);  // plugins/ipc
int capture_pty_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);     // ptys.cc
// `launch --save-files[=PATTERN]` asked for the contents of the named file at `path`, open with
// F_GETFL `flags` (saved_files.cc).
bool save_files_requested(const char* path, uint32_t flags);
// A descriptor of the program open on the file (dev, ino), or -1 (saved_files.cc).
int descriptor_holding_file(uint64_t dev, uint64_t ino);

// ---- reading fdinfo (event_fds.cc, locks.cc) ----------------------------------------------------
// Calls fn(line) for each line of /proc/self/fdinfo/<fd>, without its newline.
template <typename Fn>
inline bool for_each_fdinfo_line(int fd, Fn&& fn) {
  char path[48] = "/proc/self/fdinfo/";
  format_uint(path + 18, static_cast<unsigned long>(fd));
  long in = STASIS_SYS3(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
  if (in < 0) return false;
  char buf[4096];
  size_t have = 0;
  for (;;) {
    long n = STASIS_SYS3(SYS_read, in, buf + have, sizeof buf - 1 - have);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    size_t start = 0;
    for (size_t i = 0; i < have; i++)
      if (buf[i] == '\n') {
        buf[i] = 0;
        fn(static_cast<const char*>(buf + start));
        start = i + 1;
      }
    if (start == 0 && have == sizeof buf - 1) start = have;  // no line is this long: skip it
    __builtin_memmove(buf, buf + start, have - start);
    have -= start;
  }
  STASIS_SYS1(SYS_close, in);
  if (have) {
    buf[have] = 0;
    fn(static_cast<const char*>(buf));
  }
  return true;
}

// The text after "name" in `line` (where name starts the line or follows a blank), blanks
// skipped; nullptr if absent.
inline const char* fdinfo_field(const char* line, const char* name) {
  for (const char* p = line; *p; p++) {
    if ((p == line || p[-1] == ' ' || p[-1] == '\t') && str_starts(p, name)) {
      p += str_len(name);
      while (*p == ' ' || *p == '\t') p++;
      return p;
    }
  }
  return nullptr;
}

inline uint64_t parse_decimal(const char* p) {
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + static_cast<uint64_t>(*p - '0');
  return v;
}

// ---- file locks (locks.cc) ----------------------------------------------------------------------
// Notes the flock, POSIX record and OFD locks held through the captured descriptors in the
// runtime's memory, which the image saves; fails, naming the descriptor, on a lock this version
// cannot take back (a lease) or too many locks.
bool capture_held_locks(const StasisFdRecord* fds, uint32_t count, LogLine& error);
// In the restarted process, before its threads run: takes every noted lock again. A lock someone
// else now holds ends the process with a message naming the file and the holder.
void retake_held_locks();

}  // namespace stasis::rt
