// The capture table: every kind of descriptor the runtime can save, one row each (capture.h says
// what a row is). Order matters: the first row that takes a descriptor wins, so a kind that looks
// like another comes before it (a POSIX message queue looks like a regular file; a pipe or
// terminal inherited from outside is the outside's, not the computation's). Adding a kind of
// descriptor: its folder under src/plugins/, one row here, one in the restore table
// (restore_table.cc).
#include "plugins/eventfd/eventfd.h"
#include "plugins/events/events.h"
#include "plugins/files/files.h"
#include "plugins/ipc/ipc.h"
#include "plugins/kvm/kvm.h"
#include "plugins/locks/locks.h"
#include "plugins/pipes/pipes.h"
#include "plugins/ptys/ptys.h"
#include "plugins/saved_files/saved_files.h"
#include "plugins/sockets/sockets.h"

namespace stasis::rt {

constexpr CaptureKind kCaptureKinds[] = {
    {"kvm", capture_kvm_fd, nullptr},        // /dev/kvm would pass for a plain device: refused
    {"mqueue", capture_mqueue_fd, nullptr},  // looks regular
    {"files", capture_plain_fd, nullptr},    // regular files, directories, devices, the outside's
    {"ptys", capture_pty_fd, nullptr},
    {"pipes", capture_pipe_fd, nullptr},
    {"sockets", capture_socket_fd, nullptr},
    {"eventfd", capture_eventfd, nullptr},
    {"epoll", capture_epoll_fd, nullptr},
    {"signalfd", capture_signalfd_fd, nullptr},
    {"timerfd", capture_timerfd_fd, nullptr},
    {"inotify", capture_inotify_fd, nullptr},
    {"saved_files", capture_saved_file_fd, nullptr},  // what is left that is a file: its bytes
    {"locks", nullptr, capture_held_locks},  // the locks held through every descriptor
};
constexpr unsigned kCaptureKindCount = sizeof kCaptureKinds / sizeof kCaptureKinds[0];

}  // namespace stasis::rt
