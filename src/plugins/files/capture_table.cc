// The capture table: every kind of descriptor the runtime can save, one row each (capture.h says
// what a row is). Order matters: the first row that takes a descriptor wins, so a kind that looks
// like another comes before it (a POSIX message queue looks like a regular file; a pipe or
// terminal inherited from outside is the outside's, not the computation's). Adding a kind of
// descriptor: its folder under src/plugins/, one row here, one in the restore table
// (restore_table.cc).
#include "plugins/files/capture.h"

#include <sys/syscall.h>

#include "plugins/eventfd/eventfd.h"
#include "plugins/events/events.h"
#include "plugins/files/files.h"
#include "plugins/ipc/ipc.h"
#include "plugins/kvm/kvm.h"
#include "plugins/locks/locks.h"
#include "plugins/memory/named_shm.h"
#include "plugins/pipes/pipes.h"
#include "plugins/ptys/ptys.h"
#include "plugins/saved_files/saved_files.h"
#include "plugins/sockets/sockets.h"
#include "plugins/x11/x11.h"

namespace stasis::rt {
namespace {

bool capture_locks(const ProcessCapture& c, LogLine& error) { return capture_held_locks(c.fds, c.fd_count, error); }
bool capture_sysv(const ProcessCapture& c, LogLine& error) {
  return capture_sysv_objects(c.arena, c.maps, c.map_count, c.data, error);
}
bool capture_shm_files(const ProcessCapture& c, LogLine& error) {
  return capture_named_shm_files(c.arena, c.maps, c.map_count, c.data, c.generation_dir, error);
}

}  // namespace

constexpr CaptureKind kCaptureKinds[] = {
    // name        descriptor             process-wide       a refused one is...      its links
    {"kvm",         capture_kvm_fd,        nullptr,           nullptr,  nullptr,  claim_kvm_run_mapping},  // before files: /dev/kvm looks like a plain device
    {"gpu",         capture_gpu_device_fd, capture_vulkan_refusal},  // so would a GPU's (x11 kind): refused
    {"mqueue",      capture_mqueue_fd,     nullptr},  // looks regular
    {"files",       capture_plain_fd,      nullptr},  // regular files, directories, devices, the outside's
    {"ptys",        capture_pty_fd,        nullptr,           "a terminal",            "/dev/pts/|/dev/tty|/dev/ptmx"},
    {"pipes",       capture_pipe_fd,       nullptr,           "a pipe",                "pipe:"},
    {"x11",         capture_x11_fd,        nullptr},  // before sockets: an outside X server's connection is refused
    {"sockets",     capture_socket_fd,     nullptr,           "a socket",              "socket:"},
    {"eventfd",     capture_eventfd,       nullptr,           "an eventfd",            "anon_inode:[eventfd"},
    {"epoll",       capture_epoll_fd,      nullptr,           "an epoll instance",     "anon_inode:[eventpoll"},
    {"signalfd",    capture_signalfd_fd,   nullptr,           "a signalfd",            "anon_inode:[signalfd"},
    {"timerfd",     capture_timerfd_fd,    nullptr,           "a timerfd",             "anon_inode:[timerfd"},
    {"inotify",     capture_inotify_fd,    nullptr,           "an inotify instance",   "anon_inode:inotify"},
    {"saved_files", capture_saved_file_fd, nullptr,           "a memfd",               "/memfd:"},  // what is left that is a file: its bytes
    {"locks",       nullptr,               capture_locks},      // the locks held through every descriptor
    {"ipc",         nullptr,               capture_sysv,      nullptr,  nullptr,  claim_sysv_mapping},  // System V objects
    {"memory",      nullptr,               capture_shm_files},  // /dev/shm files mapped shared
};
constexpr unsigned kCaptureKindCount = sizeof kCaptureKinds / sizeof kCaptureKinds[0];

bool mapping_saved_by_a_kind(const Mapping& m, StasisRegionRecord* r) {
  for (const CaptureKind& row : kCaptureKinds)
    if (row.claim_mapping && row.claim_mapping(m, r)) return true;
  return false;
}

namespace {
// The calls kinds wrap that programs also make through syscall(2), one row each.
struct KindSyscall {
  long number;
  long (*handle)(const long (&args)[6]);
};
constexpr KindSyscall kKindSyscalls[] = {
    {SYS_shmat, [](const long (&a)[6]) { return shmat_syscall(a[0], a[1], a[2]); }},  // ipc
};
}  // namespace

bool kind_syscall(long number, const long (&args)[6], long& result) {
  for (const KindSyscall& row : kKindSyscalls)
    if (row.number == number) {
      result = row.handle(args);
      return true;
    }
  return false;
}

bool capture_process_state(const ProcessCapture& capture, LogLine& error) {
  for (const CaptureKind& row : kCaptureKinds)
    if (row.capture_process && !row.capture_process(capture, error)) return false;
  return true;
}

// The links of a row, '|'-separated prefixes: whether `link` starts with one.
bool starts_with_one_of(const char* link, const char* prefixes) {
  for (const char* p = prefixes; p && *p;) {
    size_t n = 0;
    while (p[n] && p[n] != '|') n++;
    size_t i = 0;
    while (i < n && link[i] == p[i]) i++;
    if (i == n) return true;
    p += n + (p[n] == '|');
  }
  return false;
}

const char* kind_of_link(const char* link) {
  for (const CaptureKind& row : kCaptureKinds)
    if (row.what && starts_with_one_of(link, row.links)) return row.what;
  if (str_starts(link, "anon_inode:")) return "an anonymous-inode descriptor";
  return "an unsupported kind of file";
}

}  // namespace stasis::rt
