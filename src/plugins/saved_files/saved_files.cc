// Files whose contents go into the image (checkpoint side): regular files deleted while open,
// memfds, and, with `stasis launch --save-files[=PATTERN]`, named files the program has open.
// The image writer reads their bytes from the program's own descriptor (FdDataList::add_file).
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/statfs.h>

#include "plugins/files/checkpoint_sources.h"
#include "plugins/saved_files/records.h"
#include "plugins/saved_files/saved_files.h"

namespace stasis::rt {
namespace {

// STASIS_SAVE_FILES (set by `launch --save-files`; empty when unset) and TMPDIR, from the
// runtime's settings (runtime/settings.h).
const char* const g_save_files_pattern = g_settings.save_files.text;
char g_tmpdir[STASIS_IMAGE_PATH_MAX];  // without a trailing '/'; empty: none, or "/"

// After read_settings, which has priority.
__attribute__((constructor)) void read_tmpdir() {
  if (const char* tmpdir = g_settings.tmpdir.text; tmpdir[0] == '/') {
    str_copy(g_tmpdir, tmpdir, sizeof g_tmpdir);
    for (size_t n = str_len(g_tmpdir); n > 0 && g_tmpdir[n - 1] == '/'; n--) g_tmpdir[n - 1] = 0;
  }
}

// `path` is `dir` itself or lies below it (dir without a trailing '/').
bool lies_under(const char* path, const char* dir) {
  const size_t n = str_len(dir);
  return n > 0 && str_starts(path, dir) && (path[n] == '/' || path[n] == 0);
}

// Matches c against the bracket expression that starts after '[' at p; returns the end of the
// expression, or nullptr when p starts no complete expression (the '[' is then an ordinary one).
const char* match_bracket(const char* p, char c, bool* matched) {
  const bool negated = *p == '!' || *p == '^';
  if (negated) p++;
  bool found = false;
  for (bool first = true; *p && (first || *p != ']'); first = false) {
    const char low = *p++;
    char high = low;
    if (p[0] == '-' && p[1] && p[1] != ']') {
      high = p[1];
      p += 2;
    }
    if (low <= c && c <= high) found = true;
  }
  if (*p != ']') return nullptr;
  *matched = found != negated;
  return p + 1;
}

// fnmatch(3) with no flags ('*' and '?' also match '/'), which must not be called here because
// it may allocate.
bool glob_matches(const char* pattern, const char* text) {
  const char *star = nullptr, *star_text = nullptr;
  while (*text) {
    if (*pattern == '*') {
      star = ++pattern;
      star_text = text;
      continue;
    }
    bool matched = false;
    const char* after = nullptr;
    if (*pattern == '[') after = match_bracket(pattern + 1, *text, &matched);
    if (after) {
      if (matched) {
        pattern = after;
        text++;
        continue;
      }
    } else if (*pattern && (*pattern == '?' || *pattern == *text)) {
      pattern++;
      text++;
      continue;
    }
    if (!star) return false;
    pattern = star;
    text = ++star_text;
  }
  while (*pattern == '*') pattern++;
  return *pattern == 0;
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// A named file open write-only is output: the program never reads it back through that
// descriptor, and it is reopened by path like any other file.
bool readable_for_saving(uint32_t flags) { return (flags & O_ACCMODE) != O_WRONLY && !(flags & O_PATH); }

bool save_files_requested(const char* path, uint32_t flags) {
  return readable_for_saving(flags) && g_save_files_pattern[0] && glob_matches(g_save_files_pattern, path);
}

// A descriptor that reads the file `fd` holds: `fd` itself when it can read, otherwise the file
// opened again for reading through /proc/self/fd (which works for deleted files and memfds too),
// kept until resume (checkpoint_sources.h). Negative errno when the file cannot be read (its mode
// forbids it) or too many are kept.
long readable_source(int fd, uint32_t flags) {
  if ((flags & O_ACCMODE) != O_WRONLY) return fd;
  char proc_path[48] = "/proc/self/fd/";
  format_uint(proc_path + 14, static_cast<unsigned long>(fd));
  long copy = STASIS_SYS3(SYS_open, proc_path, O_RDONLY | O_CLOEXEC, 0);
  if (copy >= 0 && !hold_checkpoint_source(static_cast<int>(copy))) {
    STASIS_SYS1(SYS_close, copy);
    return -EMFILE;
  }
  return copy;
}

}  // namespace

bool is_temporary_path(const char* path) {
  if (str_starts(path, "/dev/shm/")) {
    for (const char* c = path + 9; *c; c++)
      if (*c == '/') return false;
    return path[9] != 0;
  }
  return lies_under(path, "/tmp") || lies_under(path, "/var/tmp") || lies_under(path, g_tmpdir);
}

// A temporary file may be gone at restart (its owner removed its session directory when a
// restarted run ended, or the restart runs on another node): it goes with the checkpoint, to be
// made again only where it is missing.
// Open write-only too: a compiler's assembly output in /tmp, which the assembler reads after a
// restart, is gone if the killed run went on and removed it.
bool temporary_file_saved(const char* path, uint32_t flags) {
  return !(flags & O_PATH) && is_temporary_path(path);
}

bool named_file_saved(const char* path, uint32_t flags) {
  return save_files_requested(path, flags) || temporary_file_saved(path, flags);
}

int descriptor_holding_file(uint64_t dev, uint64_t ino) {
  int holder = -1;
  for_each_proc_number("/proc/self/fd", [&](long fd, const char*, long dir) {
    struct stat st;
    if (fd != dir && !is_runtime_fd(static_cast<int>(fd)) && STASIS_SYS2(SYS_fstat, fd, &st) == 0 &&
        st.st_dev == dev && st.st_ino == ino)
      holder = static_cast<int>(fd);
    return holder < 0;
  });
  return holder;
}

int capture_saved_file_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!S_ISREG(probe.st.st_mode)) return 0;
  const bool memfd = str_starts(probe.link, "/memfd:");
  uint64_t variant;
  if (memfd) variant = STASIS_SAVED_FILE_MEMFD;
  else if (probe.deleted) variant = STASIS_SAVED_FILE_DELETED;
  else if (probe.link[0] == '/' && save_files_requested(probe.link, r.flags)) variant = STASIS_SAVED_FILE_NAMED;
  else if (probe.link[0] == '/' && temporary_file_saved(probe.link, r.flags)) variant = STASIS_SAVED_FILE_TEMPORARY;
  else return 0;
  const char* what = memfd ? "a memfd" : probe.deleted ? "a file deleted while open" : "a saved file";
  struct statfs fs;
  if (STASIS_SYS2(SYS_fstatfs, probe.fd, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC) {
    error << "descriptor " << probe.fd << " is " << what << " on hugetlbfs (" << probe.link
          << "), which this version of Stasis cannot restore; not checkpointing";
    return -1;
  }
  if (r.flags & O_PATH) {
    error << "descriptor " << probe.fd << " is " << what << " (" << probe.link
          << ") open with O_PATH, so its contents cannot be read into the checkpoint; not checkpointing";
    return -1;
  }
  r.kind = STASIS_FD_SAVED_FILE;
  r.offset = STASIS_SYS3(SYS_lseek, probe.fd, 0, SEEK_CUR);
  StasisSavedFileData saved{};
  saved.variant = variant;
  saved.mode = probe.st.st_mode & 07777;
  if (memfd) {
    long seals = STASIS_SYS2(SYS_fcntl, probe.fd, F_GET_SEALS);
    saved.seals = seals > 0 ? static_cast<uint64_t>(seals) : 0;
  }
  set_kind_data(r, saved);
  // The file is already saved through another open file description: restart reopens that one.
  for (uint32_t i = 0; i < data.count(); i++) {
    struct stat other;
    if (data[i].tag == STASIS_FD_DATA_FILE_BYTES && STASIS_SYS2(SYS_fstat, data[i].fd, &other) == 0 &&
        same_file(other, probe.st)) {
      saved.same_file_as_plus_one = 1 + static_cast<uint64_t>(data[i].fd);
      set_kind_data(r, saved);
      return 1;
    }
  }
  const long source = readable_source(probe.fd, r.flags);
  if (source < 0) {
    error << "descriptor " << probe.fd << " is " << what << " (" << probe.link
          << ") open write-only, and the file cannot be opened again to read its contents (errno "
          << -source << "); not checkpointing";
    return -1;
  }
  if (!data.add_file(probe.fd, STASIS_FD_DATA_FILE_BYTES, static_cast<int>(source), r.size)) {
    error << "too much descriptor state to save";
    return -1;
  }
  return 1;
}

}  // namespace stasis::rt
