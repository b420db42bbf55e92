// Pseudo-terminals at restart: one new pty per pty of the computation, made before the process
// tree is forked (create_ptys), so a master and slaves held by different processes are ends of
// one pty again. Each gets the slave's termios, window size, packet mode and lock back, the output
// its master's reader had not read, and an end-of-file its slave's reader had not read (see
// ptys.cc). Session leaders take their controlling terminal back before they fork, so their
// children inherit it; the foreground group's leader makes its group the foreground again.
#include <asm/termbits.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>
#include "common/error.h"
#include "plugins/files/restore.h"
#include "plugins/ptys/records.h"

namespace stasis::restore {
namespace {

constexpr unsigned kPtsMajor = 136;  // UNIX98_PTY_SLAVE_MAJOR; minor = pty number
// The kernel hands out the lowest free pty number; restart holds up to this many lower ones to
// get a pty its old number (programs that kept the name from ptsname() then still hold it).
constexpr size_t kMaxHeldForNumber = 256;

struct RestoredPty {
  int master = -1;  // close-on-exec, above the descriptor floor
  std::string slave_path;
};
std::map<uint64_t, RestoredPty> g_ptys;  // by the pty number at the checkpoint

int pty_number(int master) {
  int number = -1;
  if (ioctl(master, TIOCGPTN, &number) != 0) throw Error(fmt::format("cannot read a new pty's number: {}", std::strerror(errno)));
  return number;
}

// A new master, numbered `wanted` when that number is free.
int open_master(int wanted) {
  std::vector<int> held;
  int master = -1;
  for (;;) {
    master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) break;
    const int number = pty_number(master);
    if (number >= wanted || held.size() == kMaxHeldForNumber) break;
    held.push_back(master);
  }
  const int error = errno;
  for (int fd : held) close(fd);
  if (master < 0) throw Error(fmt::format("cannot create a pseudo-terminal: {}", std::strerror(error)));
  return master;
}

void set_or_throw(int master, unsigned long request, const void* value, const char* what, uint64_t number) {
  if (ioctl(master, request, value) != 0)
    throw Error(fmt::format("cannot restore the {} of pseudo-terminal {}: {}", what, number, std::strerror(errno)));
}

void write_all(int fd, const char* bytes, size_t len, uint64_t number) {
  for (size_t done = 0; done < len;) {
    ssize_t n = write(fd, bytes + done, len - done);
    if (n <= 0)
      throw Error(fmt::format("cannot put back the {} bytes of unread output of pseudo-terminal {} "
                              "(only {} fit)", len, number, done));
    done += static_cast<size_t>(n);
  }
}

struct SavedPty {
  const image::Image* image = nullptr;
  const StasisFdRecord* master = nullptr;  // the master's first record
  const StasisFdRecord* slave = nullptr;   // any slave record
  uint64_t flags = 0;                      // StasisPtyFlag of every record
};

RestoredPty create_pty(uint64_t number, const SavedPty& saved) {
  const StasisFdRecord& rec = *saved.master;
  const auto pty = kind_data_of<StasisPtyData>(rec);
  const StasisTermios termios = pty.termios;
  const int master = open_master(static_cast<int>(number));
  const int unlock = 0;
  set_or_throw(master, TIOCSPTLCK, &unlock, "lock", number);
  const std::vector<char> output = saved.image->fd_data(rec.fd, STASIS_FD_DATA_PTY_OUTPUT);
  if (!output.empty() || ((saved.flags & STASIS_PTY_SLAVE_CLOSED) && !saved.slave)) {
    // The slave side's unread output goes in as it was read (output processing already happened);
    // closing this slave again leaves the master as it was when no slave was open.
    int peer = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (peer < 0) throw Error(fmt::format("cannot open the slave of a new pseudo-terminal: {}", std::strerror(errno)));
    StasisTermios raw = termios;
    raw.oflag &= ~static_cast<uint32_t>(OPOST);
    set_or_throw(master, TCSETS, &raw, "settings", number);
    write_all(peer, output.data(), output.size(), number);
    close(peer);
  }
  set_or_throw(master, TCSETS, &termios, "settings", number);
  const uint64_t size = pty.winsize;
  const struct winsize ws = {static_cast<unsigned short>(size), static_cast<unsigned short>(size >> 16),
                             static_cast<unsigned short>(size >> 32), static_cast<unsigned short>(size >> 48)};
  set_or_throw(master, TIOCSWINSZ, &ws, "window size", number);
  if ((saved.flags & STASIS_PTY_EOF_PENDING) && write(master, &termios.cc[VEOF], 1) != 1)
    throw Error(fmt::format("cannot put back the end-of-file of pseudo-terminal {}", number));
  const int packet = (saved.flags & STASIS_PTY_PACKET) ? 1 : 0;
  set_or_throw(master, TIOCPKT, &packet, "packet mode", number);
  // Locked again only when no slave was open: every slave open must come first, and they happen
  // in each process later.
  const int lock = 1;
  if ((saved.flags & STASIS_PTY_LOCKED) && !saved.slave) set_or_throw(master, TIOCSPTLCK, &lock, "lock", number);
  std::string slave_path = fmt::format("/dev/pts/{}", pty_number(master));
  return {lift_descriptor(master), std::move(slave_path)};
}

const RestoredPty& restored_pty(const StasisFdRecord& rec) {
  const uint64_t index = kind_data_of<StasisPtyData>(rec).index;
  auto it = g_ptys.find(index);
  if (it == g_ptys.end())
    throw Error(fmt::format("internal error: pseudo-terminal {} of descriptor {} was not created", index, rec.fd));
  return it->second;
}

// The restored pty that was `proc`'s controlling terminal, or nullptr (none, or not one of the
// computation's: a terminal from outside is restart's own business).
const RestoredPty* controlling_terminal(const StasisProcessRecord& proc) {
  if (proc.tty_nr == 0 || major(proc.tty_nr) != kPtsMajor) return nullptr;
  auto it = g_ptys.find(minor(proc.tty_nr));
  return it == g_ptys.end() ? nullptr : &it->second;
}

int open_slave(const RestoredPty& pty, int flags) {
  int fd = open(pty.slave_path.c_str(), flags | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot open {}: {}", pty.slave_path, std::strerror(errno)));
  return fd;
}

}  // namespace

void create_ptys(const std::vector<image::Image>& images) {
  std::map<uint64_t, SavedPty> saved;
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (f.kind != STASIS_FD_PTY_MASTER && f.kind != STASIS_FD_PTY_SLAVE) continue;
      const auto record = kind_data_of<StasisPtyData>(f);
      SavedPty& pty = saved[record.index];
      pty.flags |= record.flags;
      if (f.kind == STASIS_FD_PTY_SLAVE) {
        pty.slave = &f;
      } else if (!pty.master || img.has_fd_data(f.fd, STASIS_FD_DATA_PTY_OUTPUT)) {
        pty.master = &f;  // the description owner's record carries the unread output
        pty.image = &img;
      }
    }
  for (const auto& [number, pty] : saved)
    if (!pty.master)
      throw Error(fmt::format("descriptor {} ({}) is a pseudo-terminal whose master is not part of "
                              "the checkpoint; it cannot be restarted", pty.slave->fd, pty.slave->path));
  for (const auto& [number, pty] : saved) g_ptys[number] = create_pty(number, pty);
}

int open_pty(const image::Image&, const StasisFdRecord& rec) {
  const RestoredPty& pty = restored_pty(rec);
  const int status_flags = static_cast<int>(rec.flags) & (O_NONBLOCK | O_APPEND);
  if (rec.kind == STASIS_FD_PTY_SLAVE) return open_slave(pty, (static_cast<int>(rec.flags) & O_ACCMODE) | status_flags);
  // A pty has one master description: every master descriptor shares it.
  int fd = fcntl(pty.master, F_DUPFD_CLOEXEC, 0);
  if (fd < 0 || fcntl(fd, F_SETFL, status_flags) != 0)
    throw Error(fmt::format("cannot place the master of {} as descriptor {}: {}", pty.slave_path, rec.fd,
                            std::strerror(errno)));
  return fd;
}

void take_controlling_terminal(const StasisProcessRecord& proc) {
  const RestoredPty* pty = controlling_terminal(proc);
  if (!pty || proc.sid != proc.original_pid) return;
  int fd = open_slave(*pty, O_RDWR);
  const bool taken = ioctl(fd, TIOCSCTTY, 0) == 0;
  const int error = errno;
  close(fd);
  if (!taken)
    throw Error(fmt::format("process {}: cannot make {} its controlling terminal again: {}", proc.original_pid,
                            pty->slave_path, std::strerror(error)));
}

void restore_foreground_group(const StasisProcessRecord& proc) {
  const RestoredPty* pty = controlling_terminal(proc);
  if (!pty || proc.foreground_pgid == 0 || proc.pgid != proc.foreground_pgid || proc.pgid != proc.original_pid)
    return;
  int fd = open_slave(*pty, O_RDWR);
  // A background group asking for the terminal gets SIGTTOU unless it blocks it.
  sigset_t ttou, previous;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &previous);
  const bool done = tcsetpgrp(fd, getpgrp()) == 0;
  const int error = errno;
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(fd);
  if (!done)
    throw Error(fmt::format("process {}: cannot make its group the foreground of {} again: {}", proc.original_pid,
                            pty->slave_path, std::strerror(error)));
}

void describe_pty(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto pty = kind_data_of<StasisPtyData>(rec);
  const uint64_t flags = pty.flags, size = pty.winsize;
  state["index"] = pty.index;
  nlohmann::json named = nlohmann::json::array();
  for (const auto& [bit, name] : {std::pair{STASIS_PTY_LOCKED, "locked"}, {STASIS_PTY_PACKET, "packet"},
                                  {STASIS_PTY_EOF_PENDING, "eof_pending"}, {STASIS_PTY_SLAVE_CLOSED, "slave_closed"}})
    if (flags & bit) named.push_back(name);
  state["flags"] = named;
  state["rows"] = size & 0xffff;
  state["columns"] = (size >> 16) & 0xffff;
  const StasisTermios& termios = pty.termios;
  state["termios"] = {{"iflag", fmt::format("{:#o}", termios.iflag)}, {"oflag", fmt::format("{:#o}", termios.oflag)},
                      {"cflag", fmt::format("{:#o}", termios.cflag)}, {"lflag", fmt::format("{:#o}", termios.lflag)}};
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_PTY_OUTPUT))
    state["unread_output_bytes"] = img.fd_data(rec.fd, STASIS_FD_DATA_PTY_OUTPUT).size();
}

}  // namespace stasis::restore
