// The files plugin, checkpoint side (runs in the preloaded runtime, hostile-territory rules).
// capture_fds() describes every open descriptor; kinds beyond plain files are handled by one
// function per kind, each in its own file (pipes.cc, event_fds.cc, saved_files.cc...). The
// restart side is restore.h.
#pragma once
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
int capture_event_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_saved_file_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_mqueue_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);  // plugins/ipc
// `launch --save-files[=PATTERN]` asked for the contents of the named file at `path`, open with
// F_GETFL `flags` (saved_files.cc).
bool save_files_requested(const char* path, uint32_t flags);
// A descriptor of the program open on the file (dev, ino), or -1 (saved_files.cc).
int descriptor_holding_file(uint64_t dev, uint64_t ino);

}  // namespace stasis::rt
