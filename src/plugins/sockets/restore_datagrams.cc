// Datagram sockets at restart: UDP, and Unix datagram sockets reached by name.
// Every socket is made and bound first, then each gets its queued datagrams again, each sent from
// its sender's address (the sender's own socket when the computation holds it, a stand-in bound
// there otherwise), and only then connected: a connected socket takes datagrams from its peer only.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace std::string_literals;

#include <poll.h>

#include <chrono>
#include <thread>

#include "cli/coord_client.h"
#include "common/error.h"
#include "plugins/sockets/records.h"
#include "plugins/sockets/socket_restore.h"

namespace stasis::restore {
using namespace socket_restore;
namespace socket_restore {

std::map<uint64_t, int> g_datagram;  // saved inode -> its new socket (lifted)

struct DatagramUse {
  const image::Image* img;
  const StasisFdRecord* rec;
};

struct QueuedDatagram {
  std::string sender;  // a struct sockaddr; empty: an unnamed sender
  std::string bytes;
};

std::vector<QueuedDatagram> queued_datagrams(const DatagramUse& use) {
  std::vector<QueuedDatagram> queue;
  if (!use.img->has_fd_data(use.rec->fd, STASIS_FD_DATA_SOCKET_DATAGRAMS)) return queue;
  std::vector<char> saved = use.img->fd_data(use.rec->fd, STASIS_FD_DATA_SOCKET_DATAGRAMS);
  size_t at = 0;
  auto take = [&](size_t n) {
    if (saved.size() - at < n)
      throw Error(fmt::format("{}: the datagrams saved for descriptor {} are damaged", use.img->path(), use.rec->fd));
    std::string bytes(saved.data() + at, n);
    at += n;
    return bytes;
  };
  auto take_length = [&] {
    uint32_t n = 0;
    std::memcpy(&n, take(sizeof n).data(), sizeof n);
    return n;
  };
  while (at < saved.size()) {
    uint32_t len = take_length(), sender_len = take_length();
    std::string sender = take(sender_len);
    queue.push_back({sender, take(len)});
  }
  return queue;
}

std::map<uint64_t, DatagramUse> saved_datagram_sockets(const std::vector<image::Image>& images, uint32_t kind) {
  std::map<uint64_t, DatagramUse> uses;  // one use of each; the owner's, which holds its state
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (f.kind != kind) continue;
      auto [it, fresh] = uses.emplace(f.ino, DatagramUse{&img, &f});
      if (!fresh && (img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_DATAGRAMS) ||
                     img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_PEER_NAME)))
        it->second = {&img, &f};
    }
  return uses;
}

StasisTcpData inet_data(const StasisFdRecord& rec) {
  return kind_data_of<StasisTcpData>(rec);
}

Endpoint endpoint_of(const std::string& sockaddr_bytes) {
  struct sockaddr_storage address = {};
  std::memcpy(&address, sockaddr_bytes.data(), std::min(sockaddr_bytes.size(), sizeof address));
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const struct sockaddr_in&>(address);
    return {kV4MappedPrefix + std::string(reinterpret_cast<const char*>(&v4.sin_addr), 4), ntohs(v4.sin_port)};
  }
  const auto& v6 = reinterpret_cast<const struct sockaddr_in6&>(address);
  return {std::string(reinterpret_cast<const char*>(&v6.sin6_addr), 16), ntohs(v6.sin6_port)};
}

std::string unix_name_of(const std::string& sockaddr_bytes) {
  if (sockaddr_bytes.size() <= offsetof(struct sockaddr_un, sun_path)) return "";
  std::string name = sockaddr_bytes.substr(offsetof(struct sockaddr_un, sun_path));
  if (name[0] == 0) return "@" + name.substr(1);  // abstract: every byte after the NUL
  return name.substr(0, strnlen(name.data(), name.size()));
}

int udp_socket(const StasisTcpData& t) {
  int fd = socket(t.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot create a UDP socket: {}", std::strerror(errno)));
  int on = 1;
  if (t.options & STASIS_TCP_REUSEADDR) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (t.options & STASIS_TCP_REUSEPORT) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
  if (t.options & STASIS_TCP_BROADCAST) setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &on, sizeof on);
  if (t.family == AF_INET6) {
    int v6only = (t.options & STASIS_TCP_V6ONLY) ? 1 : 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  int send = static_cast<int>(t.send_buffer / 2), receive = static_cast<int>(t.receive_buffer / 2);
  if (send > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send, sizeof send);
  if (receive > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive, sizeof receive);
  return fd;
}

void send_datagram(int from, const struct sockaddr* to, socklen_t to_len, const QueuedDatagram& d,
                   const DatagramUse& at) {
  if (sendto(from, d.bytes.data(), d.bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL, to, to_len) !=
      static_cast<ssize_t>(d.bytes.size()))
    throw Error(fmt::format("{}: cannot put a {}-byte datagram back into the socket of descriptor {}: {}",
                            at.img->path(), d.bytes.size(), at.rec->fd, std::strerror(errno)));
}

void note_lost_sender(const DatagramUse& at, const std::string& sender) {
  fmt::print(stderr, "stasis restart: {}: a datagram queued at descriptor {} came from {}, which cannot be "
             "bound here now; after restart it comes from another address\n", at.img->path(), at.rec->fd, sender);
}

void refill_udp(const DatagramUse& use, const std::map<Endpoint, int>& bound) {
  StasisTcpData t = inet_data(*use.rec);
  Endpoint to = moved(local_of(t));
  for (const QueuedDatagram& d : queued_datagrams(use)) {
    if (d.sender.size() < sizeof(sa_family_t)) throw Error(fmt::format("{}: a datagram without its sender", use.img->path()));
    Endpoint sender = endpoint_of(d.sender);
    // The sender's own socket: bound there, or to every address (of either family) at its port.
    auto own = bound.find(sender);
    if (own == bound.end()) own = bound.find(any_address(family_of(sender.first), sender.second));
    if (own == bound.end()) own = bound.find(any_address(AF_INET6, sender.second));
    int from = own != bound.end() ? own->second : -1, stand_in = -1;
    if (from < 0) {
      StasisTcpData like = t;
      like.family = static_cast<uint16_t>(family_of(sender.first));
      like.options = STASIS_TCP_REUSEADDR;
      stand_in = from = udp_socket(like);
      if (!try_bind(from, like, moved(sender))) note_lost_sender(use, describe(sender));
    }
    int family = 0;
    socklen_t family_len = sizeof family;
    getsockopt(from, SOL_SOCKET, SO_DOMAIN, &family, &family_len);
    Endpoint dest = to;
    if (is_any(dest))  // bound to every address: reach it on loopback, in the sender's family
      dest = {family == AF_INET || family_of(sender.first) == AF_INET ? kV4MappedPrefix + "\x7f\0\0\x01"s
                                                                        : std::string(15, '\0') + "\x01"s,
              dest.second};
    struct sockaddr_storage address;
    socklen_t len = socket_address(static_cast<uint16_t>(family), dest, &address);
    send_datagram(from, reinterpret_cast<struct sockaddr*>(&address), len, d, use);
    if (stand_in >= 0) close(stand_in);
  }
}

void refill_unix_datagram(const DatagramUse& use, const std::map<std::string, int>& named) {
  struct sockaddr_un to;
  socklen_t to_len = unix_address(*use.img, use.rec->path, &to);
  for (const QueuedDatagram& d : queued_datagrams(use)) {
    std::string sender = unix_name_of(d.sender);
    auto own = named.find(sender);
    int from = own != named.end() ? own->second : -1, stand_in = -1;
    std::string stand_in_path;
    if (from < 0) {
      stand_in = from = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      struct sockaddr_un address;
      socklen_t len = sender.empty() ? 0 : unix_address(*use.img, sender, &address);
      if (len && bind(from, reinterpret_cast<struct sockaddr*>(&address), len) == 0) {
        if (address.sun_path[0]) stand_in_path = address.sun_path;
      } else if (len) {
        note_lost_sender(use, sender);
      }
    }
    send_datagram(from, reinterpret_cast<struct sockaddr*>(&to), to_len, d, use);
    if (stand_in >= 0) close(stand_in);
    if (!stand_in_path.empty()) unlink(stand_in_path.c_str());
  }
}

void apply_shutdown(int fd, uint64_t state) {
  if (state & 1) shutdown(fd, SHUT_RD);
  if (state & 2) shutdown(fd, SHUT_WR);
}

}  // namespace

void create_datagram_sockets(const std::vector<image::Image>& images, bool several_hosts) {
  auto udp = saved_datagram_sockets(images, STASIS_FD_UDP_SOCKET);
  auto unix_named = saved_datagram_sockets(images, STASIS_FD_UNIX_DATAGRAM);
  std::map<Endpoint, int> bound;       // saved address -> the new UDP socket there
  std::map<std::string, int> named;    // saved name -> the new Unix datagram socket with it
  for (const auto& [ino, use] : udp) {
    StasisTcpData t = inet_data(*use.rec);
    int fd = udp_socket(t);
    Endpoint where = moved(local_of(t));
    if (several_hosts) where = bindable_here(t, where);
    if (where.second != 0 || !is_any(where)) bind_to(fd, t, where, "UDP socket");
    g_datagram[ino] = lift_descriptor(fd);
    bound[local_of(t)] = g_datagram[ino];
  }
  for (const auto& [ino, use] : unix_named) {
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw Error(fmt::format("cannot create a Unix datagram socket: {}", std::strerror(errno)));
    apply_options(fd, *use.rec);
    if (use.rec->path[0]) bind_unix_name(fd, *use.img, *use.rec, "Unix datagram socket");
    g_datagram[ino] = lift_descriptor(fd);
    if (use.rec->path[0]) named[use.rec->path] = g_datagram[ino];
  }
  for (const auto& [ino, use] : udp) refill_udp(use, bound);
  for (const auto& [ino, use] : unix_named) refill_unix_datagram(use, named);
  for (const auto& [ino, use] : udp) {
    StasisTcpData t = inet_data(*use.rec);
    if (t.peer_port == 0) continue;
    struct sockaddr_storage address;
    socklen_t len = socket_address(t.family, where_peer_runs(peer_of(t)), &address);
    if (connect(g_datagram[ino], reinterpret_cast<struct sockaddr*>(&address), len) != 0)
      throw Error(fmt::format("cannot connect the UDP socket of descriptor {} to {} again: {}", use.rec->fd,
                              describe(peer_of(t)), std::strerror(errno)));
  }
  for (const auto& [ino, use] : unix_named) {
    if (const uint64_t peer_ino = kind_data_of<StasisUnixSocketData>(*use.rec).peer_ino; peer_ino != 0) {
      // The peer's own record names it as restart bound it; one outside the computation (syslog's
      // /dev/log) by the name the connection showed.
      auto peer = unix_named.find(peer_ino);
      const image::Image& img = peer != unix_named.end() ? *peer->second.img : *use.img;
      std::string name;
      if (peer != unix_named.end()) name = peer->second.rec->path;
      else if (use.img->has_fd_data(use.rec->fd, STASIS_FD_DATA_SOCKET_PEER_NAME)) {
        std::vector<char> saved = use.img->fd_data(use.rec->fd, STASIS_FD_DATA_SOCKET_PEER_NAME);
        name.assign(saved.data(), strnlen(saved.data(), saved.size()));
      }
      struct sockaddr_un address;
      socklen_t len = unix_address(img, name, &address);
      if (len == 0 || connect(g_datagram[ino], reinterpret_cast<struct sockaddr*>(&address), len) != 0) {
        if (peer != unix_named.end())
          throw Error(fmt::format("cannot connect the Unix datagram socket of descriptor {} to {} again: {}",
                                  use.rec->fd, name, std::strerror(errno)));
        fmt::print(stderr, "stasis restart: {}: descriptor {} was a Unix datagram socket connected to {}, "
                   "outside the computation, which does not take connections now; after restart it is "
                   "not connected\n", use.img->path(), use.rec->fd, name.empty() ? "an unnamed socket" : name);
      }
    }
    apply_shutdown(g_datagram[ino], kind_data_of<StasisUnixSocketData>(*use.rec).shutdown);
  }
}

int open_datagram_socket(const image::Image& img, const StasisFdRecord& rec) {
  return open_made_socket(g_datagram, img, rec, "datagram socket");
}

void note_new_host_addresses(const std::map<std::string, std::string>& old_to_new) {
  for (const auto& [from, to] : old_to_new) {
    // A host given by name (`--hosts 10.0.0.1=node7`) is left out: the runtime compares addresses.
    std::string old_bytes = address_bytes(from), new_bytes = address_bytes(to);
    if (!old_bytes.empty() && !new_bytes.empty()) g_new_host_addresses[old_bytes] = new_bytes;
  }
  if (g_new_host_addresses.size() > STASIS_MAX_ADDRESS_MOVES)
    throw Error(fmt::format("the checkpoint ran on {} hosts; a restart handles at most {}",
                            g_new_host_addresses.size(), STASIS_MAX_ADDRESS_MOVES));
}

void note_moved_socket_names(const image::Image& img, StasisRestartInfo& info) {
  info.address_move_count = 0;
  for (const auto& [from, to] : g_new_host_addresses) {
    StasisAddressMove& move = info.address_moves[info.address_move_count++];
    std::memcpy(move.old_address, from.data(), 16);
    std::memcpy(move.new_address, to.data(), 16);
  }
  for (const auto& f : img.fds()) {
    bool tcp = f.kind == STASIS_FD_TCP_LISTENER || f.kind == STASIS_FD_TCP_CONNECTION;
    if (!tcp && f.kind != STASIS_FD_UDP_SOCKET) continue;
    const std::map<uint64_t, int>& made = tcp ? g_tcp : g_datagram;
    auto restored = made.find(f.ino);
    if (restored == made.end()) continue;
    auto seen = g_seen_names.find(f.ino);
    StasisTcpData shown = seen != g_seen_names.end() ? seen->second : inet_data(f);
    struct sockaddr_storage address;
    socklen_t len = sizeof address;
    if (getsockname(restored->second, reinterpret_cast<struct sockaddr*>(&address), &len) != 0) continue;
    bool same = endpoint_of(std::string(reinterpret_cast<const char*>(&address), len)) == local_of(shown);
    len = sizeof address;
    if (shown.peer_port != 0 && getpeername(restored->second, reinterpret_cast<struct sockaddr*>(&address), &len) == 0)
      same = same && endpoint_of(std::string(reinterpret_cast<const char*>(&address), len)) == peer_of(shown);
    if (same) continue;
    if (info.socket_name_count == STASIS_MAX_SOCKET_NAMES) {
      fmt::print(stderr, "stasis restart: {}: more than {} sockets changed address; descriptor {} shows the "
                 "program its new one\n", img.path(), STASIS_MAX_SOCKET_NAMES, f.fd);
      continue;
    }
    struct stat st;
    if (fstat(restored->second, &st) != 0) continue;
    info.socket_names[info.socket_name_count++] = {f.fd, 0, static_cast<uint64_t>(st.st_ino), shown};
  }
}

}  // namespace stasis::restore
