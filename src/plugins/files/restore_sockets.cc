// Unix sockets at restart. Connected ends are made once, before the process tree is forked, as
// socketpairs of their type with both ends paired as they were (by the inodes sock_diag named at
// the checkpoint), refilled with what was queued at each end, then shut down as they were. A
// process then gets its end (also in processes forked after, which inherit them). A connection
// made through a listener comes back as such a pair too: the same bytes, without the names
// getsockname/getpeername showed. Listeners are bound to their name again. TCP and datagram
// sockets (UDP, named Unix datagram sockets) follow in their own sections below.
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
#include "plugins/files/restore.h"

namespace stasis::restore {
namespace {

std::map<uint64_t, int> g_ends;  // saved inode of an end -> its new socket (restart's own, lifted)

struct EndUse {
  const image::Image* img;
  const StasisFdRecord* rec;
};

// `send_flags`: MSG_DONTWAIT where the bytes must fit at once (a socketpair nobody reads yet).
void send_back(int writer, const StasisFdRecord& rec, const char* data, size_t len, int send_flags) {
  for (size_t done = 0; done < len;) {
    ssize_t n = send(writer, data + done, len - done, send_flags | MSG_NOSIGNAL);
    if (n <= 0)
      throw Error(fmt::format("cannot put {} bytes back into the socket of descriptor {} (only {} fit)",
                              len, rec.fd, done));
    done += static_cast<size_t>(n);
  }
}

// What was queued for reading at the end `rec` (of `img`) goes in through its peer, `writer`:
// a stream's bytes, or a datagram/seqpacket queue message by message.
void refill(int writer, const image::Image& img, const StasisFdRecord& rec, int send_flags) {
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_BYTES)) {
    std::vector<char> bytes = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_BYTES);
    send_back(writer, rec, bytes.data(), bytes.size(), send_flags);
  }
  if (!img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_MESSAGES)) return;
  std::vector<char> messages = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_MESSAGES);
  for (size_t at_byte = 0; at_byte < messages.size();) {
    uint32_t len = 0;
    if (messages.size() - at_byte < sizeof len) throw Error(fmt::format("{}: damaged socket messages", img.path()));
    std::memcpy(&len, messages.data() + at_byte, sizeof len);
    at_byte += sizeof len;
    if (messages.size() - at_byte < len) throw Error(fmt::format("{}: damaged socket messages", img.path()));
    send_back(writer, rec, messages.data() + at_byte, len, send_flags);  // one message, its boundary kept
    at_byte += len;
  }
}

uint16_t port_of(const struct sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET ? reinterpret_cast<const struct sockaddr_in&>(address).sin_port
                                            : reinterpret_cast<const struct sockaddr_in6&>(address).sin6_port);
}

void apply_options(int end, const StasisFdRecord& rec) {
  int sndbuf = static_cast<int>(rec.kind_data[1]) / 2, rcvbuf = static_cast<int>(rec.kind_data[2]) / 2;
  int passcred = static_cast<int>(rec.kind_data[4]);
  // The kernel reports twice what was set (bookkeeping overhead): set half to get it back.
  if (sndbuf > 0) setsockopt(end, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (rcvbuf > 0) setsockopt(end, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (passcred) setsockopt(end, SOL_SOCKET, SO_PASSCRED, &passcred, sizeof passcred);
}

}  // namespace

void create_socket_pairs(const std::vector<image::Image>& images) {
  std::map<uint64_t, EndUse> ends;  // one use of each saved end, preferring the one with its bytes
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (f.kind != STASIS_FD_UNIX_SOCKET) continue;
      auto [it, fresh] = ends.emplace(f.ino, EndUse{&img, &f});
      if (!fresh && (img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_BYTES) ||
                     img.has_fd_data(f.fd, STASIS_FD_DATA_SOCKET_MESSAGES)))
        it->second = {&img, &f};
    }
  std::vector<std::pair<int, const StasisFdRecord*>> made;
  for (const auto& [ino, use] : ends) {
    if (g_ends.count(ino)) continue;  // made with its peer
    uint64_t peer_ino = use.rec->kind_data[0];
    auto peer = peer_ino ? ends.find(peer_ino) : ends.end();
    int pair[2];
    int type = static_cast<int>(use.rec->kind_data[5]);
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pair) != 0)
      throw Error(fmt::format("cannot create a socketpair for descriptor {}: {}", use.rec->fd,
                              std::strerror(errno)));
    apply_options(pair[0], *use.rec);
    if (peer != ends.end()) apply_options(pair[1], *peer->second.rec);
    refill(pair[1], *use.img, *use.rec, MSG_DONTWAIT);  // bytes queued at this end were sent by the peer
    if (peer != ends.end()) refill(pair[0], *peer->second.img, *peer->second.rec, MSG_DONTWAIT);
    g_ends[ino] = lift_descriptor(pair[0]);
    made.emplace_back(g_ends[ino], use.rec);
    if (peer != ends.end()) {
      g_ends[peer_ino] = lift_descriptor(pair[1]);
      made.emplace_back(g_ends[peer_ino], peer->second.rec);
      continue;
    }
    // The peer is gone (closed before the checkpoint) or was never part of the computation: the
    // end reads what was queued, then end of file, as it would have.
    if (peer_ino != 0)
      fmt::print(stderr, "stasis restart: {}: descriptor {} is a Unix socket whose peer was not part "
                 "of the computation; after restart it reads as closed by the peer\n",
                 use.img->path(), use.rec->fd);
    close(pair[1]);
  }
  for (const auto& [end, rec] : made) {  // after every refill: a shut-down sender takes no bytes
    if (rec->kind_data[3] & 1) shutdown(end, SHUT_RD);
    if (rec->kind_data[3] & 2) shutdown(end, SHUT_WR);
  }
}

namespace {

// A process's own descriptor of a socket restart made (`made`: saved inode -> restart's socket).
int open_made_socket(const std::map<uint64_t, int>& made, const image::Image& img, const StasisFdRecord& rec,
                     const char* what) {
  auto socket_fd = made.find(rec.ino);
  if (socket_fd == made.end())
    throw Error(fmt::format("{}: descriptor {} is a {} that restart did not recreate", img.path(), rec.fd, what));
  int fd = fcntl(socket_fd->second, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot open the {} of descriptor {}", what, rec.fd));
  fcntl(fd, F_SETFL, rec.flags & (O_NONBLOCK | O_ASYNC));
  return fd;
}

}  // namespace

int open_socket_end(const image::Image& img, const StasisFdRecord& rec) {
  return open_made_socket(g_ends, img, rec, "Unix socket end");
}

namespace {

// A Unix socket's name as saved ("/path", "relative", "@abstract") as an address. A relative name
// was bound in the program's working directory (restart runs elsewhere). 0: no usable name.
socklen_t unix_address(const image::Image& img, const std::string& saved, struct sockaddr_un* out) {
  *out = {};
  out->sun_family = AF_UNIX;
  std::string name = saved.empty() || saved[0] == '/' || saved[0] == '@' ? saved
                                                                         : fmt::format("{}/{}", img.process().cwd, saved);
  if (name.empty() || name.size() >= sizeof out->sun_path) return 0;
  std::memcpy(out->sun_path, name.data(), name.size());
  if (name[0] == '@') out->sun_path[0] = 0;
  return static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + name.size());
}

// Binds `fd` to the saved name again. The killed run left its socket file behind: it is
// replaced, and only it.
void bind_unix_name(int fd, const image::Image& img, const StasisFdRecord& rec, const char* what) {
  struct sockaddr_un address;
  socklen_t len = unix_address(img, rec.path, &address);
  if (len == 0)
    throw Error(fmt::format("{}: descriptor {} is a {} without a usable name", img.path(), rec.fd, what));
  struct stat st;
  if (address.sun_path[0] && lstat(address.sun_path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      throw Error(fmt::format("{} (the name of {} {}) is now something else than a socket; remove it to "
                              "restart", rec.path, what, rec.fd));
    unlink(address.sun_path);
  }
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0)
    throw Error(fmt::format("cannot bind {} again (descriptor {}, a {}): {}", rec.path, rec.fd, what,
                            std::strerror(errno)));
}

}  // namespace

int open_unix_listener(const image::Image& img, const StasisFdRecord& rec) {
  int fd = socket(AF_UNIX, static_cast<int>(rec.kind_data[1]) | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot create a Unix socket: {}", std::strerror(errno)));
  bind_unix_name(fd, img, rec, "listening Unix socket");
  if (listen(fd, static_cast<int>(rec.kind_data[0])) != 0)
    throw Error(fmt::format("cannot listen on {} again (descriptor {}): {}", rec.path, rec.fd,
                            std::strerror(errno)));
  int passcred = static_cast<int>(rec.kind_data[2]);
  if (passcred) setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &passcred, sizeof passcred);
  fcntl(fd, F_SETFL, rec.flags & (O_NONBLOCK | O_ASYNC));
  return fd;
}

}  // namespace stasis::restore

// ---- TCP ------------------------------------------------------------------------------------
namespace stasis::restore {
namespace {

std::map<uint64_t, int> g_tcp;  // saved inode of a TCP socket -> its new socket (lifted)

struct TcpUse {
  const image::Image* img;
  const StasisFdRecord* rec;
  StasisTcpData tcp;
};
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
enum class TcpRole { kListener, kConnection };
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

// A connection whose other end another part of a restart on several hosts brings back: the end
// whose address sorts first listens on a port of its own and publishes it; the other connects.
struct CrossHostEnd {
  TcpUse mine, peer;
  bool listens = false;
  std::string name;  // in the name service, and the first bytes the connecting end sends
  int listener = -1;
};
std::vector<CrossHostEnd> g_cross_host;

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
std::string g_coord;
constexpr size_t kCrossHostNameBytes = 160;
constexpr auto kCrossHostWait = std::chrono::seconds(120);

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

void plan_cross_host(const TcpUse& mine, const TcpUse& peer, const CrossHostTcp& cross,
                     stasis::CoordConnection& coordinator) {
  CrossHostEnd end{mine, peer};
  Endpoint a = local_of(mine.tcp), b = peer_of(mine.tcp);
  end.listens = a < b;
  end.name = fmt::format("tcp/{}/{}/{}", cross.restart_id, describe(std::min(a, b)), describe(std::max(a, b)));
  if (end.name.size() >= kCrossHostNameBytes) throw Error("internal error: cross-host connection name too long");
  if (end.listens) {
    std::string own = address_bytes(cross.own_address);
    if (own.empty()) throw Error(fmt::format("{} is not a numeric address of this host", cross.own_address));
    int family = family_of(own);
    struct sockaddr_storage address;
    socklen_t len = socket_address(family, any_address(family, 0), &address);
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, reinterpret_cast<struct sockaddr*>(&address), &len) != 0)
      throw Error(fmt::format("cannot listen to re-make the TCP connection {} -> {} across hosts: {}",
                              describe(a), describe(b), std::strerror(errno)));
    end.listener = lift_descriptor(fd);
    coordinator.publish(end.name, fmt::format("{} {}", cross.own_address, port_of(address)));
  }
  g_cross_host.push_back(end);
}

}  // namespace

void create_tcp_sockets(const std::vector<image::Image>& images, const CrossHostTcp* cross) {
  collect_seen_names(images);
  std::map<uint64_t, TcpUse> listeners, connections;  // by saved inode; one use of each
  for (const auto& img : images)
    for (const auto& f : img.fds()) {
      if (f.kind != STASIS_FD_TCP_LISTENER && f.kind != STASIS_FD_TCP_CONNECTION) continue;
      TcpUse use{&img, &f, {}};
      std::memcpy(&use.tcp, f.kind_data, sizeof use.tcp);
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
          std::memcpy(&use.tcp, f.kind_data, sizeof use.tcp);
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
      g_coord = cross->coord;
      plan_cross_host(use, remote->second, *cross, *coordinator);
    } else {
      orphan_connection(use);
    }
  }
}

void connect_cross_host_tcp(const image::Image& img) {
  std::unique_ptr<stasis::CoordConnection> coordinator;
  const auto deadline = std::chrono::steady_clock::now() + kCrossHostWait;
  for (CrossHostEnd& end : g_cross_host) {
    if (end.mine.img != &img) continue;
    Endpoint a = local_of(end.mine.tcp), b = peer_of(end.mine.tcp);
    auto failed = [&](const std::string& why) {
      return Error(fmt::format("cannot re-make the TCP connection {} -> {} across hosts: {}", describe(a),
                               describe(b), why));
    };
    int fd = -1;
    char name[kCrossHostNameBytes] = {};
    if (end.listens) {
      // Strays (anything that connects without the connection's name first) are closed.
      while (fd < 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        struct pollfd p = {end.listener, POLLIN, 0};
        if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0)
          throw failed("the other host's process did not connect within 120 s");
        fd = accept4(end.listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        struct timeval limit = {10, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        if (recv(fd, name, sizeof name, MSG_WAITALL) != static_cast<ssize_t>(sizeof name) ||
            std::string(name, strnlen(name, sizeof name)) != end.name) {
          close(fd);
          fd = -1;
        }
        struct timeval forever = {0, 0};
        if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
      }
      close(end.listener);
    } else {
      if (!coordinator) coordinator = std::make_unique<stasis::CoordConnection>(stasis::CoordAddress::parse(g_coord));
      std::optional<std::string> where;
      while (!(where = coordinator->lookup(end.name))) {
        if (std::chrono::steady_clock::now() > deadline) throw failed("its other end was not published within 120 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      size_t space = where->rfind(' ');
      Endpoint to = {address_bytes(where->substr(0, space)), static_cast<uint16_t>(std::stoul(where->substr(space + 1)))};
      if (to.first.empty()) throw failed(fmt::format("the name service gave \"{}\", not an address", *where));
      struct sockaddr_storage address;
      socklen_t len = socket_address(family_of(to.first), to, &address);
      fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<struct sockaddr*>(&address), len) != 0)
        throw failed(fmt::format("connecting to {}: {}", describe(to), std::strerror(errno)));
      std::memcpy(name, end.name.data(), end.name.size());
      if (send(fd, name, sizeof name, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof name))
        throw failed("the other end closed the connection");
    }
    apply_tcp_options(fd, end.mine.tcp, TcpRole::kConnection);
    refill(fd, *end.peer.img, *end.peer.rec, 0);  // what the other end had received, it gets again
    g_tcp[end.mine.rec->ino] = lift_descriptor(fd);
  }
}

int open_tcp_socket(const image::Image& img, const StasisFdRecord& rec) {
  return open_made_socket(g_tcp, img, rec, "TCP socket");
}

}  // namespace stasis::restore

// ---- Datagrams: UDP, and Unix datagram sockets reached by name ------------------------------
// Every socket is made and bound first, then each gets its queued datagrams again, each sent from
// its sender's address (the sender's own socket when the computation holds it, a stand-in bound
// there otherwise), and only then connected: a connected socket takes datagrams from its peer only.
namespace stasis::restore {
namespace {

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
  StasisTcpData t;
  std::memcpy(&t, rec.kind_data, sizeof t);
  return t;
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
    if (use.rec->kind_data[0] != 0) {
      // The peer's own record names it as restart bound it; one outside the computation (syslog's
      // /dev/log) by the name the connection showed.
      auto peer = unix_named.find(use.rec->kind_data[0]);
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
    apply_shutdown(g_datagram[ino], use.rec->kind_data[3]);
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
