// What every kind of descriptor captures with (runtime side, hostile-territory rules): the probe
// of one descriptor, the list of variable-length state written after the FD records, the fdinfo
// reader, and the capture table's row (capture_table.cc walks the rows in order).
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "common/fdinfo.h"
#include "image/kind_data.h"
#include "runtime/rt.h"

namespace stasis::rt {

// Variable-length descriptor state gathered while threads are stopped; written as FD_DATA
// records after the FD records (possibly by the forked writer, which shares the descriptors).
struct FdDataItem {
  int32_t fd;
  uint32_t tag;        // StasisFdDataTag
  const void* bytes;   // in the arena, or nullptr with source_fd
  uint64_t len;
  int32_t source_fd;   // >= 0: `len` bytes of this file from `offset`, read when the image is written
  uint64_t offset;     // where these bytes start in the descriptor's data (a file's extent)
};

class FdDataList {
 public:
  bool init(Arena& arena, uint32_t cap);
  // Copies `len` bytes into the arena.
  bool add_copy(int fd, uint32_t tag, const void* bytes, uint64_t len);
  // `bytes` already lives in the arena (or other memory that outlives the write).
  bool add_ref(int fd, uint32_t tag, const void* bytes, uint64_t len);
  // Keeps a reference: the data is read from source_fd when the image is written. `offset`: the
  // extent of a file saved without its holes (a reader then places each extent at its offset).
  bool add_file(int fd, uint32_t tag, int source_fd, uint64_t len, uint64_t offset = 0);
  // Reads every file's bytes into the arena now (for a forked writer: a fork freezes memory, not
  // files). False when they do not fit; items read so far keep their copy.
  bool read_files_now();
  Arena& arena() { return *arena_; }
  uint32_t count() const { return count_; }
  const FdDataItem& operator[](uint32_t i) const { return items_[i]; }

 private:
  bool room_for_one();  // grows the items when full (one process may save many files' extents)
  Arena* arena_ = nullptr;
  FdDataItem* items_ = nullptr;
  uint32_t count_ = 0, cap_ = 0;
};

// One function per kind of descriptor: 1 = captured into `r` (and `data`), 0 = not this kind,
// -1 = this kind but not restorable (error says why).
struct FdProbe {
  int fd;
  const char* link;        // readlink of /proc/self/fd/N
  const struct stat& st;
  bool deleted;            // the link ends in " (deleted)"
};
using CaptureFdFn = int (*)(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
struct Mapping;  // plugins/memory/mappings.h
// What a process-wide capture step works with: every descriptor captured, the mappings as the
// pause froze them, the scratch arena, the variable-length state of the image, and the
// generation directory the image goes to.
struct ProcessCapture {
  const StasisFdRecord* fds;
  uint32_t fd_count;
  const Mapping* maps;
  uint32_t map_count;
  Arena& arena;
  FdDataList& data;
  const char* generation_dir;
};
using CaptureProcessFn = bool (*)(const ProcessCapture& capture, LogLine& error);
// A shared mapping whose contents the kind saves with its own state (once however many times it
// is mapped: the ipc kind's segments): true when it is one; then, when `r` is given, sets the
// region's kind and identity. The memory kind saves no pages of it; the restart loader brings it
// back through the kind's special-region step (restart/loader_special_regions.h).
using ClaimMappingFn = bool (*)(const Mapping& m, StasisRegionRecord* r);
// One row of the capture table: a kind (or family of kinds) of state. `capture` returns 1 when it
// took the descriptor, 0 when the descriptor is not of this kind, -1 when it is but cannot be
// restored (error says why); the rows are tried in order, the first to answer wins.
// `capture_process` (optional) runs once every descriptor is captured, for process-wide state
// (the locks held through descriptors, the ipc kind's objects, shared /dev/shm files); false fails the
// checkpoint (error says why). `what` names a descriptor of the kind that no row took in the
// refusal ("descriptor 5 is <what> (...)"), when its /proc/self/fd link starts with one of
// the '|'-separated prefixes `links`. `claim_mapping` (optional): see ClaimMappingFn.
struct CaptureKind {
  const char* name;
  CaptureFdFn capture;
  CaptureProcessFn capture_process;
  const char* what = nullptr;
  const char* links = nullptr;
  ClaimMappingFn claim_mapping = nullptr;
};
// The rows, in the order they are tried (capture_table.cc).
extern const CaptureKind kCaptureKinds[];
extern const unsigned kCaptureKindCount;
// Every row's process-wide step, in the table's order; false (error says why) fails the checkpoint.
bool capture_process_state(const ProcessCapture& capture, LogLine& error);
// How the refusal of a descriptor no row took names it, from its /proc/self/fd link.
const char* kind_of_link(const char* link);
// Whether a row claims the mapping `m` (ClaimMappingFn); `r` (optional) is filled in by it.
bool mapping_saved_by_a_kind(const Mapping& m, StasisRegionRecord* r = nullptr);

// syscall(2) called with the number of a call a kind wraps (a library may bypass libc's wrapper,
// as UCX's memory hooks attach the ipc kind's segments): the pids kind's syscall() wrapper hands it to
// the kind. True when a kind took it (`result` as syscall() returns it).
bool kind_syscall(long number, const long (&args)[6], long& result);

// Reading fdinfo: for_each_fdinfo_line and fdinfo_field (common/fdinfo.h).

inline uint64_t parse_decimal(const char* p) {
  uint64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) v = v * 10 + static_cast<uint64_t>(*p - '0');
  return v;
}

}  // namespace stasis::rt
