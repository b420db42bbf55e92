// What the socket restore files share (restore_unix_sockets.cc, restore_tcp.cc,
// restore_cross_host_tcp.cc, restore_datagrams.cc): the addresses as restart handles them, the
// sockets made so far, and the steps each kind takes from another. Inside the sockets folder only
// (namespace `socket_restore`).
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

#include <map>
#include <string>
#include <utility>

#include "cli/coord_client.h"
#include "plugins/files/restore.h"

namespace stasis::restore::socket_restore {

// ---- Unix sockets (restore_unix_sockets.cc) ----
// What was queued for reading at the end `rec` (of `img`) goes in through its peer, `writer`.
void refill(int writer, const image::Image& img, const StasisFdRecord& rec, int send_flags);
uint16_t port_of(const struct sockaddr_storage& address);
void apply_options(int end, const StasisFdRecord& rec);
// A process's own descriptor of a socket restart made (`made`: saved inode -> restart's socket).
int open_made_socket(const std::map<uint64_t, int>& made, const image::Image& img, const StasisFdRecord& rec,
                     const char* what);
// A Unix socket's name as saved ("/path", "relative", "@abstract") as an address.
socklen_t unix_address(const image::Image& img, const std::string& saved, struct sockaddr_un* out);
void bind_unix_name(int fd, const image::Image& img, const StasisFdRecord& rec, const char* what);

// ---- TCP and UDP addresses (restore_tcp.cc) ----
using Endpoint = std::pair<std::string, uint16_t>;  // 16-byte address, port
// One saved TCP socket as restart uses it: where it was saved, and its StasisTcpData.
struct TcpUse {
  const image::Image* img;
  const StasisFdRecord* rec;
  StasisTcpData tcp;
};
Endpoint local_of(const StasisTcpData& t);
Endpoint peer_of(const StasisTcpData& t);
// Addresses are kept in IPv6 form, IPv4 ones mapped (::ffff:a.b.c.d).
extern const std::string kV4MappedPrefix;
int family_of(const std::string& address);
Endpoint any_address(int family, uint16_t port);
bool is_any(const Endpoint& e);
std::string describe(const Endpoint& e);
socklen_t socket_address(uint16_t family, const Endpoint& e, struct sockaddr_storage* out);
// Where a restart on several hosts binds what was at `e` (its host moved), and where a peer at
// `e` runs now.
Endpoint moved(const Endpoint& e);
Endpoint where_peer_runs(const Endpoint& e);
extern std::map<std::string, std::string> g_new_host_addresses;  // old -> new, 16-byte forms
// "10.0.0.1" or "fd00::1" in the 16-byte form of StasisTcpData (IPv4 mapped); "" if neither.
std::string address_bytes(const std::string& text);
bool try_bind(int fd, const StasisTcpData& t, const Endpoint& e);
void bind_to(int fd, const StasisTcpData& t, const Endpoint& e, const char* what);
// On a host that is not the one it ran on, the address to bind instead of `e`.
Endpoint bindable_here(const StasisTcpData& t, const Endpoint& e);
// A connection keeps the address reuse restart's TCP sockets allow (see restore_tcp.cc).
enum class TcpRole { kListener, kConnection };
void apply_tcp_options(int fd, const StasisTcpData& t, TcpRole role);
extern std::map<uint64_t, int> g_tcp;  // saved inode of a TCP socket -> its new socket (lifted)
// By saved inode: the addresses the program saw for a TCP or UDP socket an earlier restart moved.
extern std::map<uint64_t, StasisTcpData> g_seen_names;

// ---- TCP across hosts (restore_cross_host_tcp.cc) ----
// Before the tree forks: `mine`, whose other end `peer` another part brings back, is made
// through the name service at `coordinator`; connect_cross_host_tcp finishes it, or this call
// when several processes of the part hold it (`held_by_several`).
void plan_cross_host(const TcpUse& mine, const TcpUse& peer, const OtherParts& cross,
                     stasis::CoordConnection& coordinator, bool held_by_several);

}  // namespace stasis::restore::socket_restore
