// Device-event sockets (NETLINK_KOBJECT_UEVENT) at restart: a new socket of the same type,
// subscribed to the same groups with the same options and socket filter. The kernel gives it a
// port id of its own (the old one may be another process's now); nothing it had queued comes back.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "common/error.h"
#include "image/kind_data.h"
#include "plugins/sockets/records.h"
#include "plugins/sockets/restore_sockets.h"

namespace stasis::restore {

int open_uevent_socket(const image::Image& img, const StasisFdRecord& rec) {
  const auto saved = kind_data_of<StasisNetlinkData>(rec);
  int fd = socket(AF_NETLINK, static_cast<int>(saved.type) | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
  if (fd < 0) throw Error(fmt::format("cannot create a device-event netlink socket (descriptor {}): {}", rec.fd,
                                      std::strerror(errno)));
  int passcred = static_cast<int>(saved.passcred);
  if (passcred) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &passcred, sizeof passcred);
  int receive_buffer = static_cast<int>(saved.receive_buffer / 2);  // getsockopt reports twice what was set
  if (receive_buffer > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_FILTER)) {
    std::vector<char> code = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_FILTER);
    if (code.empty() || code.size() % sizeof(struct sock_filter) != 0 || code.size() / sizeof(struct sock_filter) > 0xffff)
      throw Error(fmt::format("{}: descriptor {}: a socket filter of {} bytes is not a whole BPF program", img.path(),
                              rec.fd, code.size()));
    struct sock_fprog program = {static_cast<unsigned short>(code.size() / sizeof(struct sock_filter)),
                                 reinterpret_cast<struct sock_filter*>(code.data())};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) != 0)
      throw Error(fmt::format("cannot attach the socket filter of descriptor {} again: {}", rec.fd, std::strerror(errno)));
  }
  // Filter before subscribing: no event reaches the program that its filter would have refused.
  struct sockaddr_nl self = {};
  self.nl_family = AF_NETLINK;
  self.nl_groups = static_cast<uint32_t>(saved.groups);
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&self), sizeof self) != 0)
    throw Error(fmt::format("cannot subscribe descriptor {} to device events (groups {:#x}) again: {}", rec.fd,
                            saved.groups, std::strerror(errno)));
  fcntl(fd, F_SETFL, rec.flags & (O_NONBLOCK | O_ASYNC));
  return fd;
}

}  // namespace stasis::restore
