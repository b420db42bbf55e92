// TCP at restart: listeners bound and listening again, connections both of whose ends the
// computation holds made again between the same addresses (found by their endpoints) and refilled,
// connections to the outside reset; in a restart on several hosts, a connection whose other end
// another part brings back is made through the coordinator's name service (cross-host TCP).
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
#include <set>
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
#include "plugins/sockets/socket_restore.h"

namespace stasis::restore {
using namespace socket_restore;
namespace socket_restore {

std::map<uint64_t, int> g_tcp;  // saved inode of a TCP socket -> its new socket (lifted)

using Endpoint = std::pair<std::string, uint16_t>;  // 16-byte address, port

Endpoint local_of(const StasisTcpData& t) { return {std::string(reinterpret_cast<const char*>(t.local_address), 16), t.local_port}; }
Endpoint peer_of(const StasisTcpData& t) { return {std::string(reinterpret_cast<const char*>(t.peer_address), 16), t.peer_port}; }

// Addresses are kept in IPv6 form, IPv4 ones mapped (::ffff:a.b.c.d).
const std::string kV4MappedPrefix = std::string(10, '\0') + "\xff\xff";

int family_of(const std::string& address) {
  return address.compare(0, 12, kV4MappedPrefix) == 0 ? AF_INET : AF_INET6;
}

Endpoint any_address(int family, uint16_t port) {
  return {family == AF_INET ? kV4MappedPrefix + std::string(4, '\0') : std::string(16, '\0'), port};
}

bool is_any(const Endpoint& e) { return e.first == any_address(family_of(e.first), 0).first; }

std::string describe(const Endpoint& e) {
  const auto* b = reinterpret_cast<const unsigned char*>(e.first.data());
  if (family_of(e.first) == AF_INET)
    return fmt::format("{}.{}.{}.{}:{}", b[12], b[13], b[14], b[15], e.second);
  std::string text = "[";
  for (int i = 0; i < 16; i += 2) text += fmt::format("{}{:x}", i ? ":" : "", b[i] << 8 | b[i + 1]);
  return text + fmt::format("]:{}", e.second);
}

socklen_t socket_address(uint16_t family, const Endpoint& e, struct sockaddr_storage* out) {
  *out = {};
  if (family == AF_INET) {
    auto* v4 = reinterpret_cast<struct sockaddr_in*>(out);
    v4->sin_family = AF_INET;
    std::memcpy(&v4->sin_addr, e.first.data() + 12, 4);
    v4->sin_port = htons(e.second);
    return sizeof *v4;
  }
  auto* v6 = reinterpret_cast<struct sockaddr_in6*>(out);
  v6->sin6_family = AF_INET6;
  std::memcpy(&v6->sin6_addr, e.first.data(), 16);
  v6->sin6_port = htons(e.second);
  return sizeof *v6;
}

// A part of a restart on several hosts that comes back on another host: its old host's address
// stands for the new one's wherever it binds or connects (old -> new, 16-byte forms).
std::map<std::string, std::string> g_moved_addresses;

Endpoint moved(const Endpoint& e) {
  auto it = g_moved_addresses.find(e.first);
  return it == g_moved_addresses.end() ? e : Endpoint{it->second, e.second};
}

// Every host of a restart on several hosts, this part's and the others' (old -> new address,
// 16-byte forms; unmoved ones too): where a peer of this part runs now.
std::map<std::string, std::string> g_new_host_addresses;

Endpoint where_peer_runs(const Endpoint& e) {
  auto it = g_new_host_addresses.find(e.first);
  return it == g_new_host_addresses.end() ? e : Endpoint{it->second, e.second};
}

// "10.0.0.1" or "fd00::1" in the 16-byte form of StasisTcpData (IPv4 mapped); "" if neither.
std::string address_bytes(const std::string& text) {
  std::string bytes(16, '\0');
  struct in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    bytes.replace(0, 12, kV4MappedPrefix);
    std::memcpy(bytes.data() + 12, &v4, 4);
    return bytes;
  }
  return inet_pton(AF_INET6, text.c_str(), bytes.data()) == 1 ? bytes : std::string();
}

int tcp_socket(const StasisTcpData& t) {
  int fd = socket(t.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot create a TCP socket: {}", std::strerror(errno)));
  int one = 1;
  // The killed run's connections may linger (TIME_WAIT) on these very addresses.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (t.options & STASIS_TCP_REUSEPORT) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (t.family == AF_INET6) {
    int v6only = (t.options & STASIS_TCP_V6ONLY) ? 1 : 0;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  return fd;
}

bool try_bind(int fd, const StasisTcpData& t, const Endpoint& e) {
  struct sockaddr_storage address;
  socklen_t len = socket_address(t.family, e, &address);
  return bind(fd, reinterpret_cast<struct sockaddr*>(&address), len) == 0;
}

// A listener's address must be the same again. The killed run's connections linger in TIME_WAIT
// for up to a minute, and unless the program had set SO_REUSEADDR they keep the port: wait.
void bind_listener(int fd, const StasisTcpData& t, const Endpoint& e) {
  constexpr int kWaitSeconds = 65;
  for (int tenth = 0; !try_bind(fd, t, e); tenth++) {
    if (errno != EADDRINUSE || tenth >= kWaitSeconds * 10)
      throw Error(fmt::format("cannot listen on {} again: {}", describe(e), std::strerror(errno)));
    if (tenth == 0)
      fmt::print(stderr, "stasis restart: {} is still taken (the killed run's connections linger up to "
                 "a minute when the program did not set SO_REUSEADDR); waiting for it\n", describe(e));
    usleep(100000);
  }
}

void bind_to(int fd, const StasisTcpData& t, const Endpoint& e, const char* what) {
  if (!try_bind(fd, t, e))
    throw Error(fmt::format("cannot bind the {} to {} again: {}", what, describe(e), std::strerror(errno)));
}

// A connection keeps the address reuse tcp_socket allowed (as the checkpoint left the program's
// own): should this restart fail or be killed before its next checkpoint, its ends then linger
// without keeping a listener's port from the next restart.
void apply_tcp_options(int fd, const StasisTcpData& t, TcpRole role) {
  int on = 1, reuse = (t.options & STASIS_TCP_REUSEADDR) || role == TcpRole::kConnection ? 1 : 0;
  if (t.options & STASIS_TCP_NODELAY) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (t.options & STASIS_TCP_KEEPALIVE) setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  // The kernel reports twice what was set (bookkeeping overhead): set half to get it back.
  int send = static_cast<int>(t.send_buffer / 2), receive = static_cast<int>(t.receive_buffer / 2);
  if (send > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send, sizeof send);
  if (receive > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive, sizeof receive);
}

// Accepts from `listener` until the connection from `from`'s port arrives (strays are closed).
int accept_from(int listener, const Endpoint& from) {
  for (int tries = 0; tries < 64; tries++) {
    struct sockaddr_storage peer;
    socklen_t len = sizeof peer;
    int fd = accept4(listener, reinterpret_cast<struct sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd < 0) break;
    uint16_t port = port_of(peer);
    if (port == from.second) return fd;
    close(fd);
  }
  throw Error(fmt::format("cannot re-make the TCP connection from {}", describe(from)));
}

// One connection both of whose ends the computation holds, made again between the same addresses.
void remake_connection(const TcpUse& a, const TcpUse& b, const std::map<Endpoint, int>& listeners) {
  // The side a listener of the computation listens for accepts; otherwise a listener of our own,
  // on the accepting side's address, stands in for the one the program closed.
  // An accepted end has its listener's family: an IPv4 and an IPv6-only listener often share a
  // port (MPI ranks listen on both), and only one of them gets the connection.
  auto listener_for = [&](const TcpUse& end) {
    for (const auto& [where, fd] : listeners) {
      int family = 0;
      socklen_t len = sizeof family;
      if (where.second == end.tcp.local_port && (where.first == local_of(end.tcp).first || is_any(where)) &&
          getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) == 0 && family == end.tcp.family)
        return fd;
    }
    return -1;
  };
  const TcpUse* client = &a;
  const TcpUse* server = &b;
  int listener = listener_for(b);
  if (listener < 0 && (listener = listener_for(a)) >= 0) std::swap(client, server);
  bool own_listener = listener < 0;
  if (own_listener) {
    listener = tcp_socket(server->tcp);
    bind_listener(listener, server->tcp, moved(local_of(server->tcp)));
    if (listen(listener, 1) != 0) throw Error("cannot listen to re-make a TCP connection");
  }
  // The connecting end keeps its port when it can; a lingering connection of the killed run may
  // hold it, or (TIME_WAIT with the same addresses at both ends, which the checkpoint let be
  // reused) refuse the connection from it, and then it takes another (only getsockname on that
  // end can tell).
  struct sockaddr_storage address;
  socklen_t len = socket_address(client->tcp.family, moved(local_of(server->tcp)), &address);
  int client_fd = tcp_socket(client->tcp);
  if (!try_bind(client_fd, client->tcp, moved(local_of(client->tcp))) ||
      connect(client_fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0) {
    close(client_fd);
    client_fd = tcp_socket(client->tcp);
    bind_to(client_fd, client->tcp, {moved(local_of(client->tcp)).first, 0}, "end of a TCP connection");
    if (connect(client_fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0)
      throw Error(fmt::format("cannot re-make the TCP connection {} -> {}: {}", describe(local_of(client->tcp)),
                              describe(local_of(server->tcp)), std::strerror(errno)));
  }
  struct sockaddr_storage bound;
  socklen_t bound_len = sizeof bound;
  getsockname(client_fd, reinterpret_cast<struct sockaddr*>(&bound), &bound_len);
  uint16_t client_port = port_of(bound);
  int server_fd = accept_from(listener, {local_of(client->tcp).first, client_port});
  if (own_listener) close(listener);
  apply_tcp_options(client_fd, client->tcp, TcpRole::kConnection);
  apply_tcp_options(server_fd, server->tcp, TcpRole::kConnection);
  refill(server_fd, *client->img, *client->rec, 0);  // bytes queued at an end were sent by the other end
  refill(client_fd, *server->img, *server->rec, 0);
  g_tcp[client->rec->ino] = lift_descriptor(client_fd);
  g_tcp[server->rec->ino] = lift_descriptor(server_fd);
}

// A connection to something outside the computation cannot be made again: the program gets an
// end whose peer is gone. Bytes it had received and not read are still read first, then end of
// file; with nothing queued the peer resets the connection, as a peer that dropped it would.
void orphan_connection(const TcpUse& end) {
  StasisTcpData loopback = end.tcp;
  loopback.options = 0;
  Endpoint any_port = {end.tcp.family == AF_INET ? kV4MappedPrefix + "\x7f\0\0\x01"s : std::string(15, '\0') + "\x01"s, 0};
  int listener = tcp_socket(loopback);
  bind_to(listener, loopback, any_port, "stand-in peer");
  struct sockaddr_storage address;
  socklen_t len = sizeof address;
  if (listen(listener, 1) != 0 || getsockname(listener, reinterpret_cast<struct sockaddr*>(&address), &len) != 0)
    throw Error("cannot make a stand-in peer for a TCP connection");
  int fd = tcp_socket(loopback);
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0)
    throw Error("cannot connect to a stand-in peer for a TCP connection");
  int peer = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  close(listener);
  if (peer < 0) throw Error("cannot accept from a stand-in peer for a TCP connection");
  bool had_bytes = end.img->has_fd_data(end.rec->fd, STASIS_FD_DATA_SOCKET_BYTES);
  refill(peer, *end.img, *end.rec, 0);
  if (!had_bytes) {
    struct linger reset = {1, 0};
    setsockopt(peer, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }
  close(peer);
  fmt::print(stderr, "stasis restart: {}: descriptor {} was a TCP connection {} -> {}, whose peer is "
             "not part of the computation; after restart it reads as {}\n", end.img->path(), end.rec->fd,
             describe(local_of(end.tcp)), describe(peer_of(end.tcp)),
             had_bytes ? "the bytes it had received, then closed by the peer" : "reset by the peer");
  g_tcp[end.rec->ino] = lift_descriptor(fd);
}

// By saved inode: the addresses the program saw for a TCP or UDP socket that an earlier restart
// had moved (FD_DATA SOCKET_SEEN_NAMES of its description's owner).
std::map<uint64_t, StasisTcpData> g_seen_names;

void collect_seen_names(const std::vector<image::Image>& images) {
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (!img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_SEEN_NAMES)) continue;
      std::vector<char> saved = img.fd_data(f.fd, STASIS_FD_DATA_SOCKET_SEEN_NAMES);
      if (saved.size() != sizeof(StasisTcpData))
        throw Error(fmt::format("{}: the addresses saved for descriptor {} are damaged", img.path(), f.fd));
      std::memcpy(&g_seen_names[f.ino], saved.data(), saved.size());
    }
}
// On a host that is not the one it ran on, a listener's own address may not exist: it listens on
// every address at the same port instead.
Endpoint bindable_here(const StasisTcpData& t, const Endpoint& e) {
  if (is_any(e)) return e;
  int probe = tcp_socket(t);
  bool missing = !try_bind(probe, t, {e.first, 0}) && errno == EADDRNOTAVAIL;
  close(probe);
  if (!missing) return e;
  Endpoint any = any_address(t.family, e.second);
  fmt::print(stderr, "stasis restart: {} is not an address of this host; listening on {} instead\n",
             describe(e), describe(any));
  return any;
}

}  // namespace

void create_tcp_sockets(const std::vector<image::Image>& images, const OtherParts* cross) {
  collect_seen_names(images);
  std::map<uint64_t, TcpUse> listeners, connections;  // by saved inode; one use of each
  std::map<uint64_t, std::set<const image::Image*>> holders;  // by saved inode
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (f.kind != STASIS_FD_TCP_LISTENER && f.kind != STASIS_FD_TCP_CONNECTION) continue;
      holders[f.ino].insert(&img);
      TcpUse use{&img, &f, {}};
      use.tcp = kind_data_of<StasisTcpData>(f);
      auto& by_ino = f.kind == STASIS_FD_TCP_LISTENER ? listeners : connections;
      auto [it, fresh] = by_ino.emplace(f.ino, use);
      if (!fresh && img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_BYTES)) it->second = use;
    }
  if (cross && cross->old_address != cross->own_address) {
    std::string from = address_bytes(cross->old_address), to = address_bytes(cross->own_address);
    if (!from.empty() && !to.empty()) g_moved_addresses[from] = to;
  }
  std::map<Endpoint, int> listening;
  for (const auto& [ino, use] : listeners) {
    int fd = tcp_socket(use.tcp);
    Endpoint where = cross ? bindable_here(use.tcp, moved(local_of(use.tcp))) : local_of(use.tcp);
    if (!g_moved_addresses.empty() && !try_bind(fd, use.tcp, where)) {
      // On another host nothing reaches the old address anyway, and the killed run's connections
      // there may hold the port for a minute: any free port will do.
      if (errno != EADDRINUSE) throw Error(fmt::format("cannot listen on {} again: {}", describe(where), std::strerror(errno)));
      fmt::print(stderr, "stasis restart: {} is taken on this host; listening on another port\n", describe(where));
      bind_to(fd, use.tcp, {where.first, 0}, "listener");
    } else if (g_moved_addresses.empty()) {
      bind_listener(fd, use.tcp, where);
    }
    if (listen(fd, use.tcp.backlog ? static_cast<int>(use.tcp.backlog) : SOMAXCONN) != 0)
      throw Error(fmt::format("cannot listen on {} again: {}", describe(where), std::strerror(errno)));
    apply_tcp_options(fd, use.tcp, TcpRole::kListener);
    g_tcp[ino] = lift_descriptor(fd);
    listening[local_of(use.tcp)] = g_tcp[ino];
  }
  // By both endpoints: the connections a listener accepted all have its address as their own.
  std::map<std::pair<Endpoint, Endpoint>, uint64_t> by_endpoints;
  for (const auto& [ino, use] : connections) by_endpoints[{local_of(use.tcp), peer_of(use.tcp)}] = ino;
  std::map<std::pair<Endpoint, Endpoint>, TcpUse> elsewhere;
  if (cross && cross->elsewhere)
    for (const auto& img : *cross->elsewhere)
      for (const auto& f : img.fds())
        if (f.kind == STASIS_FD_TCP_CONNECTION) {
          TcpUse use{&img, &f, {}};
          use.tcp = kind_data_of<StasisTcpData>(f);
          elsewhere.emplace(std::pair{local_of(use.tcp), peer_of(use.tcp)}, use);
        }
  std::unique_ptr<stasis::CoordConnection> coordinator;
  for (const auto& [ino, use] : connections) {
    if (g_tcp.count(ino)) continue;
    auto peer = by_endpoints.find({peer_of(use.tcp), local_of(use.tcp)});
    auto remote = elsewhere.find({peer_of(use.tcp), local_of(use.tcp)});
    if (peer != by_endpoints.end() && peer->second != ino) {
      remake_connection(use, connections.at(peer->second), listening);
    } else if (remote != elsewhere.end()) {
      if (!coordinator) coordinator = std::make_unique<stasis::CoordConnection>(stasis::CoordAddress::parse(cross->coord));
      plan_cross_host(use, remote->second, *cross, *coordinator, holders[ino].size() > 1);
    } else {
      orphan_connection(use);
    }
  }
}

int open_tcp_socket(const image::Image& img, const StasisFdRecord& rec) {
  return open_made_socket(g_tcp, img, rec, "TCP socket");
}

}  // namespace stasis::restore

