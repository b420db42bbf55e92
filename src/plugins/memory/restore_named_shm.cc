// The restart half of named_shm.h: the /dev/shm files the computation mapped shared, made again
// with their bytes as of the checkpoint.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/memory/restore_memory.h"

namespace stasis::restore {
namespace {

StasisShmFile saved_header(const image::Image& img, int index) {
  std::vector<char> bytes = img.fd_data(index, STASIS_FD_DATA_SHM_FILE);
  StasisShmFile header;
  if (bytes.size() != sizeof header)
    throw Error(fmt::format("{}: saved shared memory file {} has a malformed description", img.path(), index));
  std::memcpy(&header, bytes.data(), sizeof header);
  header.path[sizeof header.path - 1] = 0;
  if (std::strncmp(header.path, "/dev/shm/", 9) != 0 || std::strchr(header.path + 9, '/'))
    throw Error(fmt::format("{}: saved shared memory file {} is not a file directly in /dev/shm", img.path(), header.path));
  return header;
}

// Written beside the file and renamed over it: a process still mapping the old file (another
// run of the program) keeps its own bytes.
void write_file(const image::Image& img, const StasisShmFile& header, const std::vector<char>& bytes) {
  std::string path = header.path;
  std::string temporary = path + ".stasis-restart-XXXXXX";
  int fd = mkstemp(temporary.data());
  if (fd < 0)
    throw Error(fmt::format("cannot recreate the shared memory file {}: {}", path, std::strerror(errno)));
  bool ok = fchmod(fd, header.mode) == 0;
  for (size_t done = 0; ok && done < bytes.size();) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && close(fd) == 0;
  if (!ok || rename(temporary.c_str(), path.c_str()) != 0) {
    int saved_errno = errno;
    unlink(temporary.c_str());
    throw Error(fmt::format("cannot recreate the shared memory file {} ({} bytes, saved in {}): {}", path,
                            bytes.size(), img.path(), std::strerror(saved_errno)));
  }
}

}  // namespace

void recreate_named_shm_files(const std::vector<image::Image>& images) {
  std::set<std::string> made;
  for (const auto& img : images)
    for (int index = 0; img.has_fd_data(index, STASIS_FD_DATA_SHM_FILE); index++) {
      StasisShmFile header = saved_header(img, index);
      std::vector<char> bytes = img.fd_data(index, STASIS_FD_DATA_SHM_FILE_BYTES);
      if (bytes.size() != header.size)
        throw Error(fmt::format("{}: the shared memory file {} should hold {} bytes, the image has {}",
                                img.path(), header.path, header.size, bytes.size()));
      if (!made.insert(header.path).second)
        throw Error(fmt::format("{}: the shared memory file {} was saved twice in this checkpoint (two "
                                "files had that name)", img.path(), header.path));
      write_file(img, header, bytes);
    }
}

}  // namespace stasis::restore
