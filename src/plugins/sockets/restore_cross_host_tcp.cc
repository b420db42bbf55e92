// TCP connections across hosts at restart: in a restart on several hosts, a connection whose other
// end another part brings back is made through the coordinator's name service. Before the tree
// forks, the end whose address sorts first listens on a port of its own and publishes it
// (plan_cross_host); in the process itself, since the other part may start only once this one
// runs, it accepts, or the other end looks the port up and connects (connect_cross_host_tcp).
// A connection that several processes of the part hold (a daemon's, inherited by the ranks it
// forks: MPICH's Hydra proxy) is made before the tree forks instead, so that every holder gets
// it: the other part must then be running on its own (started by the first restart, as the
// remote half of an ssh session is), not started by a process of this part.
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
#include "plugins/sockets/socket_restore.h"

namespace stasis::restore {
using namespace socket_restore;
namespace {

// A connection whose other end another part of a restart on several hosts brings back: the end
// whose address sorts first listens on a port of its own and publishes it; the other connects.
struct CrossHostEnd {
  TcpUse mine, peer;
  bool listens = false;
  std::string name;  // in the name service, and the first bytes the connecting end sends
  int listener = -1;
  bool made = false;  // before the tree forked (a connection several processes hold)
};
std::vector<CrossHostEnd> g_cross_host;

std::string g_coord;
void make_cross_host_connection(CrossHostEnd& end, std::unique_ptr<stasis::CoordConnection>& coordinator,
                                std::chrono::steady_clock::time_point deadline);
constexpr size_t kCrossHostNameBytes = 160;
constexpr auto kCrossHostWait = std::chrono::seconds(120);


}  // namespace

namespace socket_restore {
void plan_cross_host(const TcpUse& mine, const TcpUse& peer, const OtherParts& cross,
                     stasis::CoordConnection& coordinator, bool held_by_several) {
  g_coord = cross.coord;
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
  if (held_by_several) {
    std::unique_ptr<stasis::CoordConnection> lookups;
    make_cross_host_connection(g_cross_host.back(), lookups, std::chrono::steady_clock::now() + kCrossHostWait);
  }
}

}  // namespace socket_restore

namespace {

// Accepts the other end's connection or makes it, then gives the socket what the other end had
// received; the socket becomes g_tcp's for the saved one.
void make_cross_host_connection(CrossHostEnd& end, std::unique_ptr<stasis::CoordConnection>& coordinator,
                                std::chrono::steady_clock::time_point deadline) {
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
  end.made = true;
}

}  // namespace

void connect_cross_host_tcp(const image::Image& img) {
  std::unique_ptr<stasis::CoordConnection> coordinator;
  const auto deadline = std::chrono::steady_clock::now() + kCrossHostWait;
  for (CrossHostEnd& end : g_cross_host)
    if (end.mine.img == &img && !end.made) make_cross_host_connection(end, coordinator, deadline);
}

}  // namespace stasis::restore
