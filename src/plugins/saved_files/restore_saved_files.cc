// Files whose contents are in the image, restart side. A memfd is created again with its name,
// contents, mode and seals; a file deleted while open becomes an unnamed file (O_TMPFILE) with
// its contents, never linked; a file saved by `launch --save-files` is put back at its path when
// it is missing or differs; a temporary file (/tmp, /var/tmp, $TMPDIR, /dev/shm) is made again
// at its path only when it is missing. Each record gets its own open file description (reopened through
// /proc/self/fd, as the program's own reopen would), so flags and offset are its own, and two
// descriptions of one file still share it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>
#include "common/error.h"
#include "plugins/files/restore.h"
#include "plugins/saved_files/records.h"

namespace fs = std::filesystem;

namespace stasis::restore {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";
constexpr std::string_view kMemfdPrefix = "/memfd:";

std::string_view without_deleted_suffix(std::string_view path) {
  if (path.ends_with(kDeletedSuffix)) path.remove_suffix(kDeletedSuffix.size());
  return path;
}

uint64_t variant_of(const StasisFdRecord& rec) { return kind_data_of<StasisSavedFileData>(rec).variant; }
mode_t mode_of(const StasisFdRecord& rec) { return static_cast<mode_t>(kind_data_of<StasisSavedFileData>(rec).mode); }

// The descriptor that holds this file's contents through another description, or -1.
int same_file_as(const StasisFdRecord& rec) {
  return static_cast<int>(kind_data_of<StasisSavedFileData>(rec).same_file_as_plus_one) - 1;
}

std::vector<char> saved_contents(const image::Image& img, const StasisFdRecord& rec) {
  std::vector<char> bytes = img.fd_data(rec.fd, STASIS_FD_DATA_FILE_BYTES);
  if (bytes.size() != rec.size)
    throw Error(fmt::format("{}: the image holds {} bytes of {} (descriptor {}), which had {}", img.path(),
                            bytes.size(), rec.path, rec.fd, rec.size));
  return bytes;
}

// Writes `bytes` as the whole file; blocks of zeros stay holes (a sparse memfd stays sparse).
void write_contents(int fd, const std::vector<char>& bytes, const std::string& what) {
  if (ftruncate(fd, static_cast<off_t>(bytes.size())) != 0)
    throw Error(fmt::format("cannot size {} to {} bytes: {}", what, bytes.size(), std::strerror(errno)));
  constexpr size_t kBlock = 4096;
  for (size_t at = 0; at < bytes.size(); at += kBlock) {
    const size_t len = std::min(kBlock, bytes.size() - at);
    const char* block = bytes.data() + at;
    if (std::all_of(block, block + len, [](char c) { return c == 0; })) continue;
    for (size_t done = 0; done < len;) {
      ssize_t n = pwrite(fd, block + done, len - done, static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(fmt::format("cannot write the saved contents of {}: {}", what, std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
  }
}

int create_memfd(const StasisFdRecord& rec) {
  std::string name(without_deleted_suffix(rec.path).substr(kMemfdPrefix.size()));
  // Always sealable: adding the saved seals (F_SEAL_SEAL among them for a memfd made without
  // MFD_ALLOW_SEALING) gives the same state.
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    throw Error(fmt::format("cannot create the memfd {} for descriptor {}: {}", name, rec.fd, std::strerror(errno)));
  return fd;
}

// An unnamed file in the deleted file's directory if it still exists and allows it, else beside
// the image, else in /tmp.
int create_unlinked_file(const image::Image& img, const StasisFdRecord& rec) {
  const fs::path original(without_deleted_suffix(rec.path));
  int last_errno = 0;
  for (const fs::path& dir : {original.parent_path(), fs::path(img.path()).parent_path(), fs::path("/tmp")}) {
    if (dir.empty()) continue;
    int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, mode_of(rec) & 0777);
    if (fd >= 0) return fd;
    last_errno = errno;
  }
  throw Error(fmt::format("cannot create an unnamed file for {} (descriptor {}) in {}, beside the image "
                          "or in /tmp: {}", rec.path, rec.fd, original.parent_path().string(),
                          std::strerror(last_errno)));
}

// Creates the file of a memfd or deleted-file record with its saved contents, mode and seals;
// returns a read-write descriptor on it.
int create_unnamed_file(const image::Image& img, const StasisFdRecord& rec) {
  const bool memfd = variant_of(rec) == STASIS_SAVED_FILE_MEMFD;
  int fd = memfd ? create_memfd(rec) : create_unlinked_file(img, rec);
  try {
    write_contents(fd, saved_contents(img, rec), rec.path);
    if (fchmod(fd, mode_of(rec)) != 0)
      throw Error(fmt::format("cannot give {} its mode {:o}: {}", rec.path, mode_of(rec), std::strerror(errno)));
    if (uint64_t seals = kind_data_of<StasisSavedFileData>(rec).seals; memfd && seals &&
        fcntl(fd, F_ADD_SEALS, static_cast<int>(seals)) != 0)
      throw Error(fmt::format("cannot seal the memfd {} (seals {:#x}): {}", rec.path, seals, std::strerror(errno)));
  } catch (...) {
    close(fd);
    throw;
  }
  return fd;
}

// A new open file description of the file `fd` holds, with the record's flags and offset.
// (O_NOFOLLOW was about the original name's last component; /proc/self/fd/N is a link.)
int reopen_as_recorded(int fd, const StasisFdRecord& rec) {
  const int flags = static_cast<int>(rec.flags) & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_TMPFILE | O_NOFOLLOW);
  int reopened = open(fmt::format("/proc/self/fd/{}", fd).c_str(), flags | O_CLOEXEC);
  if (reopened < 0)
    throw Error(fmt::format("cannot reopen the recreated {} as descriptor {}: {}", rec.path, rec.fd,
                            std::strerror(errno)));
  if (lseek(reopened, rec.offset, SEEK_SET) != rec.offset) {
    close(reopened);
    throw Error(fmt::format("cannot put descriptor {} ({}) back at offset {}", rec.fd, rec.path, rec.offset));
  }
  return reopened;
}

std::vector<char> read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A file saved by --save-files is put back at its path when it is missing or differs from the
// saved contents (and said so); an identical file is left alone.
void put_back_named_file(const image::Image& img, const StasisFdRecord& rec) {
  const fs::path path(rec.path);
  const std::vector<char> saved = saved_contents(img, rec);
  std::string_view why = "was missing";
  if (fs::exists(path)) {
    const std::vector<char> now = read_whole_file(path);
    if (now == saved) return;
    // What the killed run appended after the checkpoint: open_regular_file cuts it back.
    const bool appending = (rec.flags & O_ACCMODE) != O_RDONLY &&
                           ((rec.flags & O_APPEND) || static_cast<uint64_t>(rec.offset) == rec.size);
    if (appending && now.size() > saved.size() && std::equal(saved.begin(), saved.end(), now.begin())) return;
    why = "differed from the checkpoint";
  }
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // Written beside it, then renamed over it: a restart that fails halfway leaves no torn file.
  const std::string temporary = rec.path + std::string(".stasis-restore");
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_of(rec) & 0777);
  if (fd < 0)
    throw Error(fmt::format("{} (descriptor {}) {} and cannot be recreated: {}", rec.path, rec.fd, why,
                            std::strerror(errno)));
  try {
    write_contents(fd, saved, rec.path);
    fchmod(fd, mode_of(rec));
    if (fsync(fd) != 0 || rename(temporary.c_str(), rec.path) != 0)
      throw Error(fmt::format("cannot put {} back in place: {}", rec.path, std::strerror(errno)));
  } catch (...) {
    close(fd);
    unlink(temporary.c_str());
    throw;
  }
  close(fd);
  fmt::print(stderr, "stasis restart: {} (descriptor {}) {}; recreated it from the checkpoint\n", rec.path,
             rec.fd, why);
}

// A temporary file is made again only when it is missing (its owner removed it when a restarted
// run ended, or this is another node): an existing one is the program's to find as it is, like
// any file it reopens. Made beside its path and linked there, so a file that appears meanwhile
// is never replaced.
std::set<std::string> g_made_temporary_files;  // by this restart: their mtime is now, not a change

void make_missing_temporary_file(const image::Image& img, const StasisFdRecord& rec) {
  if (fs::exists(fs::symlink_status(rec.path))) return;
  create_missing_directories(rec.path, fmt::format("{} (descriptor {})", rec.path, rec.fd));
  const std::string temporary = rec.path + std::string(".stasis-restore-XXXXXX");
  std::string name = temporary;
  int fd = mkstemp(name.data());
  if (fd < 0)
    throw Error(fmt::format("{} (descriptor {}) is missing and cannot be recreated: {}", rec.path, rec.fd,
                            std::strerror(errno)));
  try {
    write_contents(fd, saved_contents(img, rec), rec.path);
    if (fchmod(fd, mode_of(rec)) != 0 || (link(name.c_str(), rec.path) != 0 && errno != EEXIST))
      throw Error(fmt::format("cannot recreate {} (descriptor {}): {}", rec.path, rec.fd, std::strerror(errno)));
  } catch (...) {
    close(fd);
    unlink(name.c_str());
    throw;
  }
  close(fd);
  unlink(name.c_str());
  g_made_temporary_files.insert(rec.path);
}

}  // namespace

void check_saved_file(const image::Image& img, const StasisFdRecord& rec) {
  const uint64_t variant = variant_of(rec);
  if (variant != STASIS_SAVED_FILE_DELETED && variant != STASIS_SAVED_FILE_MEMFD &&
      variant != STASIS_SAVED_FILE_NAMED && variant != STASIS_SAVED_FILE_TEMPORARY)
    throw Error(fmt::format("{}: descriptor {} ({}) is a saved file of unknown variant {}", img.path(), rec.fd,
                            rec.path, variant));
  if (variant == STASIS_SAVED_FILE_MEMFD && !std::string_view(rec.path).starts_with(kMemfdPrefix))
    throw Error(fmt::format("{}: descriptor {} is a memfd named {}, not /memfd:NAME", img.path(), rec.fd, rec.path));
  if (rec.same_description_as >= 0) return;  // a dup: restart dups the description's first holder
  if (int holder = same_file_as(rec); holder >= 0) {
    const auto& fds = img.fds();
    if (holder >= rec.fd || std::none_of(fds.begin(), fds.end(), [&](const StasisFdRecord& f) {
          return f.fd == holder && f.kind == STASIS_FD_SAVED_FILE && same_file_as(f) < 0;
        }))
      throw Error(fmt::format("{} is corrupt: descriptor {} ({}) shares the file of descriptor {}, which "
                              "holds no saved file", img.path(), rec.fd, rec.path, holder));
    return;
  }
  if (rec.size > 0 && !img.has_fd_data(rec.fd, STASIS_FD_DATA_FILE_BYTES))
    throw Error(fmt::format("{} is corrupt: the contents of {} (descriptor {}) are missing", img.path(),
                            rec.path, rec.fd));
}

int open_saved_file(const image::Image& img, const StasisFdRecord& rec) {
  const int holder = same_file_as(rec);
  if (variant_of(rec) == STASIS_SAVED_FILE_NAMED) {
    if (holder < 0) put_back_named_file(img, rec);
    return open_regular_file(img, rec);
  }
  if (variant_of(rec) == STASIS_SAVED_FILE_TEMPORARY) {
    if (holder < 0) make_missing_temporary_file(img, rec);
    return open_regular_file(img, rec);
  }
  // Descriptors are placed in ascending order: the holder is in place already.
  if (holder >= 0) return reopen_as_recorded(holder, rec);
  int created = create_unnamed_file(img, rec);
  try {
    int fd = reopen_as_recorded(created, rec);
    close(created);
    return fd;
  } catch (...) {
    close(created);
    throw;
  }
}

bool reopened_as_found(const StasisFdRecord& rec) {
  return rec.kind == STASIS_FD_SAVED_FILE && variant_of(rec) == STASIS_SAVED_FILE_TEMPORARY &&
         !g_made_temporary_files.count(rec.path);
}

void create_missing_directories(const std::string& path, const std::string& what) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty() || fs::is_directory(parent)) return;
  create_missing_directories(parent.string(), what);
  if (mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error(fmt::format("cannot make the directory {} for {}: {}", parent.string(), what, std::strerror(errno)));
}

const StasisFdRecord* saved_file_mapped_by(const image::Image& img, const StasisRegionRecord& region) {
  if (region.kind != STASIS_REGION_FILE_SHARED) return nullptr;
  for (const auto& f : img.fds())
    if (f.kind == STASIS_FD_SAVED_FILE && f.dev == region.file_dev && f.ino == region.file_ino) return &f;
  return nullptr;
}

std::string mapped_file_path(const image::Image& img, const StasisRegionRecord& region) {
  // Descriptors are in place (without close-on-exec) when the loader maps memory.
  if (const StasisFdRecord* file = saved_file_mapped_by(img, region)) return fmt::format("/proc/self/fd/{}", file->fd);
  return region.path;
}

void describe_saved_file(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  switch (variant_of(rec)) {
    case STASIS_SAVED_FILE_DELETED: state["variant"] = "deleted"; break;
    case STASIS_SAVED_FILE_MEMFD: state["variant"] = "memfd"; break;
    case STASIS_SAVED_FILE_NAMED: state["variant"] = "named"; break;
    case STASIS_SAVED_FILE_TEMPORARY: state["variant"] = "temporary"; break;
    default: state["variant"] = variant_of(rec);
  }
  state["mode"] = fmt::format("{:04o}", mode_of(rec));
  if (uint64_t seals = kind_data_of<StasisSavedFileData>(rec).seals) state["seals"] = fmt::format("{:#x}", seals);
  if (same_file_as(rec) >= 0) state["same_file_as"] = same_file_as(rec);
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_FILE_BYTES))
    state["saved_bytes"] = img.fd_data(rec.fd, STASIS_FD_DATA_FILE_BYTES).size();
}

}  // namespace stasis::restore
