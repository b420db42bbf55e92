#include "plugins/memory/named_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "common/fixed_text.h"
#include "plugins/files/checkpoint_sources.h"
#include "plugins/memory/mappings.h"

namespace stasis::rt {
namespace {

// A temporary file mapped shared (is_temporary_path): POSIX shared memory objects (shm_open, or
// a file made directly in /dev/shm as Open MPI's vader does), session files under /tmp (PMIx's
// dstore segments in Open MPI's session directory). Files in directories of their own in
// /dev/shm are left to hold what they hold at restart: those are tools' machine-wide state
// (softib's fabric directory: its counters must never go back).
bool is_saved_file_mapping(const Mapping& m) {
  return m.shared && !unnamed_file(m) && is_temporary_path(m.path);
}

// The file's data without its holes (SEEK_DATA/SEEK_HOLE), each extent an item at its offset:
// Open MPI's shared-memory segments are 4 MiB files with some 100 KiB written, and a forked
// writer's copy of them is made while the whole computation is stopped. Extents less than
// kJoinGap apart are joined: copying a gap that short costs about what a record and a read
// cost (Open MPI's vader segments have one written page every 32 KiB, one per peer: joined at
// 64 KiB, 32 ranks copied 17 MB in the pause instead of 3). Past kMaxExtents the rest of the
// file is one extent. A file system without holes reports the whole file as data.
bool add_file_extents(FdDataList& data, int key, int fd, uint64_t size) {
  constexpr uint64_t kJoinGap = 16u << 10;
  constexpr uint32_t kMaxExtents = 512;  // a vader segment of 256 ranks has ~260
  uint64_t start = 0, end = 0;  // the extent being gathered; none while end == 0
  uint32_t extents = 0;
  for (uint64_t at = 0; at < size;) {
    long data_at = STASIS_SYS3(SYS_lseek, fd, static_cast<long>(at), SEEK_DATA);
    if (data_at == -ENXIO) break;  // holes only, from `at` to the end
    long hole_at = data_at < 0 ? -1 : STASIS_SYS3(SYS_lseek, fd, data_at, SEEK_HOLE);
    uint64_t from = data_at < 0 ? at : static_cast<uint64_t>(data_at);
    uint64_t to = hole_at < 0 || static_cast<uint64_t>(hole_at) > size ? size : static_cast<uint64_t>(hole_at);
    if (from >= size) break;
    if (to <= from || extents + 1 == kMaxExtents) to = size;  // no progress, or enough extents
    if (end != 0 && from - end < kJoinGap) {
      end = to;
    } else {
      if (end != 0 && !data.add_file(key, STASIS_FD_DATA_SHM_FILE_BYTES, fd, end - start, start)) return false;
      if (end != 0) extents++;
      start = from;
      end = to;
    }
    at = to;
  }
  return end == 0 || data.add_file(key, STASIS_FD_DATA_SHM_FILE_BYTES, fd, end - start, start);
}

bool save(Arena& arena, FdDataList& data, const Mapping& m, uint32_t index, LogLine& error) {
  long fd = STASIS_SYS3(SYS_open, m.path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    error << "the temporary file " << m.path << " is mapped shared but cannot be opened to save it (errno "
          << -fd << "); not checkpointing";
    return false;
  }
  if (!hold_checkpoint_source(static_cast<int>(fd))) {  // read when the image is written; closed at resume
    STASIS_SYS1(SYS_close, fd);
    error << "too many files to read into one checkpoint to save the temporary file " << m.path
          << ", mapped shared; not checkpointing";
    return false;
  }
  struct stat st;
  if (STASIS_SYS2(SYS_fstat, fd, &st) != 0 || st.st_dev != m.dev || st.st_ino != m.inode) {
    error << "the temporary file " << m.path << " now names another file than the one mapped (it was "
          << "replaced), which restart could not map again; not checkpointing";
    return false;
  }
  auto* header = static_cast<StasisShmFile*>(arena.alloc(sizeof(StasisShmFile)));
  if (!header) {
    error << "no checkpoint scratch memory to save " << m.path << "; not checkpointing";
    return false;
  }
  *header = {};
  header->size = static_cast<uint64_t>(st.st_size);
  header->mode = st.st_mode & 07777;
  str_copy(header->path, m.path, sizeof header->path);
  int key = static_cast<int>(index);
  if (!data.add_ref(key, STASIS_FD_DATA_SHM_FILE, header, sizeof *header) ||
      !add_file_extents(data, key, static_cast<int>(fd), header->size)) {
    error << "too many saved contents in one image to save " << m.path << "; not checkpointing";
    return false;
  }
  return true;
}

}  // namespace

void host_marker_path(char* out, size_t cap, const char* generation_dir, const char* kind, uint64_t a, uint64_t b) {
  struct utsname host;
  if (STASIS_SYS1(SYS_uname, &host) != 0) host.nodename[0] = 0;
  out[0] = 0;
  FixedText(out, cap) << generation_dir << "/." << kind << "-" << host.nodename << "-" << a << "-" << b;
}

int claim_for_host(const char* marker, const char* what, uint64_t count, LogLine& error) {
  const long flags = O_WRONLY | O_APPEND | O_CLOEXEC;
  long fd = STASIS_SYS3(SYS_open, marker, flags | O_CREAT | O_EXCL, 0600);
  const int won = fd >= 0 ? 1 : 0;
  if (fd == -EEXIST && count > 0) fd = STASIS_SYS3(SYS_open, marker, flags, 0);
  if (fd == -EEXIST) return 0;
  if (fd < 0) {
    error << "cannot create " << marker << " (errno " << -fd << ") to decide who saves " << what
          << "; not checkpointing";
    return -1;
  }
  static const char kCounted[256] = {};  // what the bytes hold does not matter, their number does
  long written = 0;
  while (count > 0) {
    written = STASIS_SYS3(SYS_write, fd, kCounted, count < sizeof kCounted ? count : sizeof kCounted);
    if (written == -EINTR) continue;
    if (written <= 0) break;
    count -= static_cast<uint64_t>(written);
  }
  STASIS_SYS1(SYS_close, fd);
  if (count > 0) {
    error << "cannot count in " << marker << " (errno " << -written << ") for " << what << "; not checkpointing";
    return -1;
  }
  return won;
}

bool capture_named_shm_files(Arena& arena, const Mapping* maps, uint32_t count, FdDataList& data,
                             const char* generation_dir, LogLine& error) {
  uint32_t saved = 0;
  for (uint32_t i = 0; i < count; i++) {
    const Mapping& m = maps[i];
    if (!is_saved_file_mapping(m)) continue;
    bool seen = false;  // one file mapped several times
    for (uint32_t k = 0; k < i && !seen; k++)
      seen = maps[k].dev == m.dev && maps[k].inode == m.inode && is_saved_file_mapping(maps[k]);
    if (seen) continue;
    char marker[STASIS_IMAGE_PATH_MAX + 128];
    host_marker_path(marker, sizeof marker, generation_dir, "shm", m.dev, m.inode);
    int won = claim_for_host(marker, m.path, 0, error);
    if (won < 0 || (won == 1 && !save(arena, data, m, saved++, error))) {
      return false;  // the checkpoint fails: its sources are closed at the next capture or resume
    }
  }
  return true;
}

}  // namespace stasis::rt
