// Pseudo-terminals (checkpoint side): a master (/dev/ptmx) or a slave (/dev/pts/N) the computation
// opened itself. Terminals inherited from outside were taken as STASIS_FD_EXTERNAL before this
// runs (restart connects its own there).
//
// Saved per descriptor (kind_data, StasisPtyData in records.h): the pty number, the slave's termios and
// window size, and on the master the lock and packet mode. Bytes in flight:
//  - output the slave side wrote that the master's reader has not read: the master's description
//    owner reads it out and writes it straight back through a slave of its own with output
//    processing (OPOST) off for the moment, so the running program sees the same bytes; restart
//    puts them back the same way (FD_DATA PTY_OUTPUT).
//  - input written to the master that the slave's reader has not read: it went through the line
//    discipline already (echo, line editing) and cannot be read without taking it from the
//    program, so a checkpoint with such bytes is refused; the slave's reader normally takes them
//    at once and the next checkpoint succeeds. An end-of-file not yet read (`script` sends one
//    when its own input ends) carries no bytes and is seen without reading (poll says readable,
//    FIONREAD says 0): it is recorded and sent again at restart.
// Restart side: restore_ptys.cc.
#include <asm/termbits.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>

#include "plugins/ptys/ptys.h"
#include "plugins/ptys/records.h"

namespace stasis::rt {
namespace {

constexpr unsigned kPtmxMajor = 5, kPtmxMinor = 2;  // /dev/ptmx and /dev/pts/ptmx
constexpr unsigned kPtsMajor = 136;                 // UNIX98_PTY_SLAVE_MAJOR; minor = pty number

long ioctl_int(int fd, unsigned long request, int* value) { return STASIS_SYS3(SYS_ioctl, fd, request, value); }

// Bytes the line discipline of `fd` holds for its reader; polling first makes the kernel hand over
// what its flip buffers still hold when nothing is readable yet.
int readable_bytes(int fd, short* revents = nullptr) {
  struct pollfd p = {fd, POLLIN, 0};
  STASIS_SYS3(SYS_poll, &p, 1, 0);
  if (revents) *revents = p.revents;
  int n = 0;
  return ioctl_int(fd, FIONREAD, &n) == 0 ? n : 0;
}

// termios and window size of the slave (TCGETS and TIOCGWINSZ on a master act on its slave).
bool capture_line_settings(int fd, StasisFdRecord& r, LogLine& error) {
  StasisTermios t;
  struct winsize ws = {};
  if (STASIS_SYS3(SYS_ioctl, fd, TCGETS, &t) != 0 || STASIS_SYS3(SYS_ioctl, fd, TIOCGWINSZ, &ws) != 0) {
    error << "cannot read the settings of pseudo-terminal descriptor " << fd << " (" << r.path << ")";
    return false;
  }
  auto pty = kind_data_of<StasisPtyData>(r);
  pty.termios = t;
  pty.winsize = ws.ws_row | static_cast<uint64_t>(ws.ws_col) << 16 | static_cast<uint64_t>(ws.ws_xpixel) << 32 |
                static_cast<uint64_t>(ws.ws_ypixel) << 48;
  set_kind_data(r, pty);
  return true;
}

// Writes `len` bytes into the slave side of `master` as they are (no output processing), so they
// reach the master's reader again. False if they did not all fit.
bool write_back_output(int master, int peer, const char* bytes, long len) {
  StasisTermios saved, raw;
  if (STASIS_SYS3(SYS_ioctl, master, TCGETS, &saved) != 0) return false;
  raw = saved;
  raw.oflag &= ~static_cast<uint32_t>(OPOST);
  STASIS_SYS3(SYS_ioctl, master, TCSETS, &raw);
  long done = 0;
  for (int waits = 0; done < len && waits < 50;) {
    long n = STASIS_SYS3(SYS_write, peer, bytes + done, static_cast<size_t>(len - done));
    if (n > 0) {
      done += n;
      continue;
    }
    struct pollfd p = {peer, POLLOUT, 0};
    STASIS_SYS3(SYS_poll, &p, 1, 20);
    waits++;
  }
  STASIS_SYS3(SYS_ioctl, master, TCSETS, &saved);
  return done == len;
}

// The master's description owner: the slave's output not yet read by the program, saved and put
// back (see the top of this file).
int save_unread_output(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  short revents = 0;
  if (readable_bytes(probe.fd, &revents) <= 0) {
    if (revents & POLLHUP) {
      auto pty = kind_data_of<StasisPtyData>(r);
      pty.flags |= STASIS_PTY_SLAVE_CLOSED;
      set_kind_data(r, pty);
    }
    return 1;
  }
  const long peer = STASIS_SYS3(SYS_ioctl, probe.fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (peer < 0 || (r.flags & O_ACCMODE) == O_WRONLY) {
    if (peer >= 0) STASIS_SYS1(SYS_close, peer);
    error << "pseudo-terminal master descriptor " << probe.fd << " (" << r.path
          << ") has output its reader has not read, which cannot be copied; not checkpointing";
    return -1;
  }
  struct pollfd writable = {static_cast<int>(peer), POLLOUT, 0};
  STASIS_SYS3(SYS_poll, &writable, 1, 0);
  if (!(writable.revents & POLLOUT)) {  // output stopped (^S): what is read could not go back
    STASIS_SYS1(SYS_close, peer);
    error << "pseudo-terminal master descriptor " << probe.fd << " (" << r.path
          << ") has unread output while its output is stopped (^S); not checkpointing";
    return -1;
  }
  int packet = 0, off = 0, on = 1;
  ioctl_int(probe.fd, TIOCGPKT, &packet);
  if (packet) ioctl_int(probe.fd, TIOCPKT, &off);  // plain bytes, without packet headers
  uint32_t cap = 65536;
  char* bytes = static_cast<char*>(data.arena().alloc(cap));
  long len = 0;
  bool complete = bytes != nullptr;
  for (int n; complete && (n = readable_bytes(probe.fd)) > 0;) {
    while (complete && len + n > cap) complete = data.arena().grow(bytes, cap);
    long got = complete ? STASIS_SYS3(SYS_read, probe.fd, bytes + len, static_cast<size_t>(n)) : 0;
    if (got <= 0) break;
    len += got;
  }
  const bool put_back = write_back_output(probe.fd, static_cast<int>(peer), bytes, len);
  if (packet) ioctl_int(probe.fd, TIOCPKT, &on);
  STASIS_SYS1(SYS_close, peer);
  if (!put_back || !complete) {
    error << "pseudo-terminal master descriptor " << probe.fd << " (" << r.path << "): could not "
          << (put_back ? "save all" : "put back") << " the " << len
          << " bytes of output its reader had not read; not checkpointing";
    return -1;
  }
  if (!data.add_ref(probe.fd, STASIS_FD_DATA_PTY_OUTPUT, bytes, static_cast<uint64_t>(len))) {
    error << "too much descriptor state to save";
    return -1;
  }
  return 1;
}

int capture_master(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  r.kind = STASIS_FD_PTY_MASTER;
  int index = -1, locked = 0, packet = 0;
  if (ioctl_int(probe.fd, TIOCGPTN, &index) != 0 || index < 0) {
    error << "descriptor " << probe.fd << " (" << r.path
          << ") is a pseudo-terminal master without a pty number; not checkpointing";
    return -1;
  }
  ioctl_int(probe.fd, TIOCGPTLCK, &locked);
  ioctl_int(probe.fd, TIOCGPKT, &packet);
  StasisPtyData pty{};
  pty.index = static_cast<uint64_t>(index);
  pty.flags = (locked ? uint64_t{STASIS_PTY_LOCKED} : 0) | (packet ? uint64_t{STASIS_PTY_PACKET} : 0);
  set_kind_data(r, pty);
  if (!capture_line_settings(probe.fd, r, error)) return -1;
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != probe.fd) return 1;
  return save_unread_output(probe, r, data, error);
}

int capture_slave(const FdProbe& probe, StasisFdRecord& r, LogLine& error) {
  r.kind = STASIS_FD_PTY_SLAVE;
  StasisPtyData pty{};
  pty.index = minor(probe.st.st_rdev);
  set_kind_data(r, pty);
  int discipline = 0;
  if (ioctl_int(probe.fd, TIOCGETD, &discipline) == 0 && discipline != N_TTY) {
    error << "pseudo-terminal descriptor " << probe.fd << " (" << r.path << ") uses line discipline "
          << discipline << ", which this version of Stasis cannot restore; not checkpointing";
    return -1;
  }
  if (!capture_line_settings(probe.fd, r, error)) return -1;
  short revents = 0;
  const int unread = readable_bytes(probe.fd, &revents);
  if (revents & POLLHUP) {
    error << "pseudo-terminal descriptor " << probe.fd << " (" << r.path
          << ") was hung up (its master is closed); not checkpointing";
    return -1;
  }
  if (unread > 0) {
    error << "pseudo-terminal descriptor " << probe.fd << " (" << r.path << ") has " << unread
          << " bytes of input its reader has not read yet; not checkpointing (try again)";
    return -1;
  }
  auto saved = kind_data_of<StasisPtyData>(r);
  if ((revents & POLLIN) && (saved.termios.lflag & ICANON)) {
    saved.flags |= STASIS_PTY_EOF_PENDING;
    set_kind_data(r, saved);
  }
  return 1;
}

}  // namespace

int capture_pty_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!S_ISCHR(probe.st.st_mode)) return 0;
  const unsigned dev_major = major(probe.st.st_rdev), dev_minor = minor(probe.st.st_rdev);
  if (dev_major == kPtmxMajor && dev_minor == kPtmxMinor) return capture_master(probe, r, data, error);
  if (dev_major == kPtsMajor) return capture_slave(probe, r, error);
  return 0;
}

}  // namespace stasis::rt
