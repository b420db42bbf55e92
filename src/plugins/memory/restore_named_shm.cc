// The restart half of named_shm.h: the temporary files (/dev/shm objects, session files under
// /tmp) the computation mapped shared, made again with their bytes as of the checkpoint, with
// the directories above them that are missing.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/memory/restore_memory.h"
#include "plugins/saved_files/restore_saved_files.h"

namespace stasis::restore {
namespace {

StasisShmFile saved_header(const image::Image& img, int index) {
  std::vector<char> bytes = img.fd_data(index, STASIS_FD_DATA_SHM_FILE);
  StasisShmFile header;
  if (bytes.size() != sizeof header)
    throw Error(fmt::format("{}: saved shared memory file {} has a malformed description", img.path(), index));
  std::memcpy(&header, bytes.data(), sizeof header);
  header.path[sizeof header.path - 1] = 0;
  const std::string path = header.path;
  if (path.size() < 2 || path[0] != '/' || path.back() == '/' || path.find("/../") != std::string::npos ||
      path.find("/./") != std::string::npos || path.find("//") != std::string::npos || path.ends_with("/.."))
    throw Error(fmt::format("{}: saved shared memory file {} is not a plain absolute path", img.path(), header.path));
  return header;
}

// Always the checkpoint's bytes, as the memory they are: written beside the file and renamed over
// it, so a process still mapping an old file (the killed run, or another restart of this
// checkpoint still running) keeps its own bytes and never shares memory with this run. Pages of
// zeros stay holes: these files live in memory (tmpfs).
void write_file(const image::Image& img, const StasisShmFile& header, const std::vector<char>& bytes) {
  std::string path = header.path;
  create_missing_directories(path, fmt::format("the shared memory file {}", path));
  std::string temporary = path + ".stasis-restart-XXXXXX";
  int fd = mkstemp(temporary.data());
  if (fd < 0)
    throw Error(fmt::format("cannot recreate the shared memory file {}: {}", path, std::strerror(errno)));
  bool ok = fchmod(fd, header.mode) == 0 && ftruncate(fd, static_cast<off_t>(bytes.size())) == 0;
  constexpr size_t kPage = 4096;
  for (size_t at = 0; ok && at < bytes.size(); at += kPage) {
    const size_t len = std::min(kPage, bytes.size() - at);
    if (std::all_of(bytes.data() + at, bytes.data() + at + len, [](char c) { return c == 0; })) continue;
    for (size_t done = 0; ok && done < len;) {
      ssize_t n = pwrite(fd, bytes.data() + at + done, len - done, static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<size_t>(n);
    }
  }
  ok = close(fd) == 0 && ok;
  if (!ok || rename(temporary.c_str(), path.c_str()) != 0) {
    int saved_errno = errno;
    unlink(temporary.c_str());
    throw Error(fmt::format("cannot recreate the shared memory file {} ({} bytes, saved in {}): {}", path,
                            bytes.size(), img.path(), std::strerror(saved_errno)));
  }
}

}  // namespace

std::set<std::string> recreate_named_shm_files(const std::vector<image::Image>& images) {
  std::set<std::string> made;
  for (const auto& img : images)
    for (int index = 0; img.has_fd_data(index, STASIS_FD_DATA_SHM_FILE); index++) {
      StasisShmFile header = saved_header(img, index);
      std::vector<char> bytes = img.fd_data_with_holes(index, STASIS_FD_DATA_SHM_FILE_BYTES, header.size);
      if (bytes.size() != header.size)
        throw Error(fmt::format("{}: the shared memory file {} should hold {} bytes, the image has {}",
                                img.path(), header.path, header.size, bytes.size()));
      if (!made.insert(header.path).second)
        throw Error(fmt::format("{}: the shared memory file {} was saved twice in this checkpoint (two "
                                "files had that name)", img.path(), header.path));
      write_file(img, header, bytes);
    }
  return made;
}

}  // namespace stasis::restore
