// Pipes and FIFOs at restart: one new pipe per saved pipe (by inode), whatever number of ends
// and processes held it, refilled with the bytes that were in flight at the checkpoint.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <map>

#include <nlohmann/json.hpp>
#include "common/error.h"
#include "plugins/pipes/records.h"
#include "plugins/pipes/restore_pipes.h"
#include "plugins/saved_files/restore_saved_files.h"

namespace stasis::restore {
namespace {

struct RestoredPipe {
  int read_end = -1, write_end = -1;
  bool refilled = false;
};
std::map<std::pair<uint64_t, uint64_t>, RestoredPipe> g_pipes;  // (dev, ino) of the saved pipe

uint64_t recreate_mode_plus_one(const StasisFdRecord& rec) {
  return kind_data_of<StasisPipeData>(rec).recreate_mode_plus_one;
}

// A FIFO of a temporary directory is made again where it is missing (its owner removed its
// session directory), with its mode; an existing one is used as it is.
void make_missing_fifo(const StasisFdRecord& rec) {
  const uint64_t mode_plus_one = recreate_mode_plus_one(rec);
  if (mode_plus_one == 0 || access(rec.path, F_OK) == 0) return;
  const std::string what = fmt::format("the FIFO {} (descriptor {})", rec.path, rec.fd);
  create_missing_directories(rec.path, what);
  if (mkfifo(rec.path, static_cast<mode_t>(mode_plus_one - 1) & 07777) != 0 && errno != EEXIST)
    throw Error(fmt::format("{} is missing and cannot be made again: {}", what, std::strerror(errno)));
  chmod(rec.path, static_cast<mode_t>(mode_plus_one - 1) & 07777);  // mkfifo's mode went through the umask
}

RestoredPipe& pipe_for(const StasisFdRecord& rec) {
  RestoredPipe& p = g_pipes[{rec.dev, rec.ino}];
  if (p.read_end >= 0) return p;
  int ends[2];
  if (rec.kind == STASIS_FD_FIFO) {
    make_missing_fifo(rec);
    // A FIFO opened for reading without O_NONBLOCK would wait for a writer: hold a read end of
    // our own first, then every open is immediate.
    ends[0] = open(rec.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    ends[1] = ends[0] < 0 ? -1 : open(rec.path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (ends[0] < 0 || ends[1] < 0)
      throw Error(fmt::format("cannot open the FIFO {}: {}", rec.path, std::strerror(errno)));
  } else if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw Error(fmt::format("cannot create a pipe for descriptor {}: {}", rec.fd, std::strerror(errno)));
  }
  if (uint64_t size = kind_data_of<StasisPipeData>(rec).buffer_size; size > 0)
    fcntl(ends[1], F_SETPIPE_SZ, static_cast<int>(size));
  p.read_end = lift_descriptor(ends[0]);
  p.write_end = lift_descriptor(ends[1]);
  return p;
}

void refill(RestoredPipe& p, const image::Image& img, const StasisFdRecord& rec) {
  if (p.refilled || !img.has_fd_data(rec.fd, STASIS_FD_DATA_PIPE_BYTES)) return;
  std::vector<char> bytes = img.fd_data(rec.fd, STASIS_FD_DATA_PIPE_BYTES);
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = write(p.write_end, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      throw Error(fmt::format("cannot put {} bytes back into the pipe of descriptor {} (only {} fit)",
                              bytes.size(), rec.fd, done));
    done += static_cast<size_t>(n);
  }
  p.refilled = true;
}

}  // namespace

void check_fifo(const image::Image& img, const StasisFdRecord& rec) {
  if (recreate_mode_plus_one(rec) == 0) check_path_exists(img, rec);
}

void create_pipe(const image::Image& img, const StasisFdRecord& rec) { refill(pipe_for(rec), img, rec); }

int open_pipe_end(const image::Image& img, const StasisFdRecord& rec) {
  RestoredPipe& p = pipe_for(rec);
  refill(p, img, rec);
  int mode = rec.flags & O_ACCMODE;
  int fd;
  if (mode == O_RDONLY || mode == O_WRONLY) {
    // A second description of an end (each holder set its own flags) comes from /proc, as the
    // program's own reopen through /proc/self/fd would.
    int end = mode == O_RDONLY ? p.read_end : p.write_end;
    std::string proc = fmt::format("/proc/self/fd/{}", end);
    fd = rec.kind == STASIS_FD_FIFO ? open(rec.path, mode | O_NONBLOCK | O_CLOEXEC)
                                    : open(proc.c_str(), mode | O_NONBLOCK | O_CLOEXEC);
  } else {  // O_RDWR: only FIFOs and /proc reopens
    fd = open(rec.kind == STASIS_FD_FIFO ? rec.path : fmt::format("/proc/self/fd/{}", p.read_end).c_str(),
              O_RDWR | O_NONBLOCK | O_CLOEXEC);
  }
  if (fd < 0)
    throw Error(fmt::format("cannot open an end of the pipe for descriptor {}: {}", rec.fd, std::strerror(errno)));
  fcntl(fd, F_SETFL, rec.flags & (O_NONBLOCK | O_APPEND | O_ASYNC | O_DIRECT));
  return fd;
}

void describe_pipe(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  state["buffer_size"] = kind_data_of<StasisPipeData>(rec).buffer_size;
  if (uint64_t mode_plus_one = recreate_mode_plus_one(rec))
    state["made_again_if_missing"] = fmt::format("{:04o}", mode_plus_one - 1);
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_PIPE_BYTES))
    state["bytes_in_flight"] = img.fd_data(rec.fd, STASIS_FD_DATA_PIPE_BYTES).size();
}

}  // namespace stasis::restore
