// Pipes and FIFOs (checkpoint side). The bytes in flight are copied with tee(2), which leaves
// them in the pipe: nothing has to be put back at resume, and a reader that runs on never sees
// a difference. Only the holder that owns a read end's description saves them, so a pipe shared
// by many processes is saved once.
#include <fcntl.h>
#include <sys/ioctl.h>

#include "plugins/pipes/pipes.h"
#include "plugins/pipes/records.h"
#include "plugins/saved_files/saved_files.h"

namespace stasis::rt {

int capture_pipe_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!S_ISFIFO(probe.st.st_mode)) return 0;
  r.kind = str_starts(probe.link, "pipe:") ? STASIS_FD_PIPE : STASIS_FD_FIFO;
  long size = STASIS_SYS2(SYS_fcntl, probe.fd, F_GETPIPE_SZ);
  StasisPipeData pipe{size > 0 ? static_cast<uint64_t>(size) : 0, 0};
  // A FIFO in a session directory under /tmp goes when its owner cleans up: restart makes it again.
  if (r.kind == STASIS_FD_FIFO && is_temporary_path(probe.link)) pipe.recreate_mode_plus_one = 1 + (probe.st.st_mode & 07777);
  set_kind_data(r, pipe);
  if ((r.flags & O_ACCMODE) == O_WRONLY) return 1;
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != probe.fd) return 1;
  int pending = 0;
  if (STASIS_SYS3(SYS_ioctl, probe.fd, FIONREAD, &pending) != 0 || pending <= 0) return 1;
  int copy[2];
  if (STASIS_SYS2(SYS_pipe2, copy, O_CLOEXEC | O_NONBLOCK) != 0) {
    error << "cannot create a pipe to copy the contents of descriptor " << probe.fd;
    return -1;
  }
  if (size > 0) STASIS_SYS3(SYS_fcntl, copy[1], F_SETPIPE_SZ, size);
  long teed = STASIS_SYS4(SYS_tee, probe.fd, copy[1], static_cast<unsigned long>(pending), SPLICE_F_NONBLOCK);
  char* bytes = teed > 0 ? static_cast<char*>(data.arena().alloc(static_cast<size_t>(teed))) : nullptr;
  long got = 0;
  while (bytes && got < teed) {
    long n = STASIS_SYS3(SYS_read, copy[0], bytes + got, static_cast<size_t>(teed - got));
    if (n <= 0) break;
    got += n;
  }
  STASIS_SYS1(SYS_close, copy[0]);
  STASIS_SYS1(SYS_close, copy[1]);
  if (teed != pending || got != teed || !bytes) {
    error << "cannot copy the " << pending << " bytes in flight in the pipe of descriptor " << probe.fd;
    return -1;
  }
  if (!data.add_ref(probe.fd, STASIS_FD_DATA_PIPE_BYTES, bytes, static_cast<uint64_t>(got))) {
    error << "too much descriptor state to save";
    return -1;
  }
  return 1;
}

}  // namespace stasis::rt
