// The addresses the program sees after a restart moved its sockets or its hosts. The program keeps
// living among the addresses of its first run ("virtual" ones): a restart on other hosts
// (`stasis restart --hosts OLD=NEW`) hands every process the hosts that moved, composed here with
// the moves of earlier restarts into one table virtual -> real. The socket calls that take an
// address (connect, bind, sendto, sendmsg, sendmmsg) get the real one; the calls that show one
// (accept, recvfrom, recvmsg, recvmmsg, getsockname, getpeername) show the virtual one. So a
// connection the program opens after the restart to an address it learnt before (an MPI library
// connects lazily to addresses exchanged at start) reaches the peer where it runs now, and the peer
// sees the address it expects. Until a restart moves a host the table is empty and every wrapper
// is one predictable branch in front of libc's function (which keeps its cancellation points).
// A restored socket whose own addresses changed shows its saved ones (seen_names, sockets.cc).
#include <netinet/in.h>
#include <sys/socket.h>

#include "plugins/sockets/address_table.h"
#include "plugins/sockets/sockets.h"

namespace stasis::rt {
namespace {

AddressTable g_hosts;  // in the image: a chain of restarts composes its moves

// The 16-byte form of an IPv4 or IPv6 socket address; false for other families or short ones.
bool address_bytes(const struct sockaddr* address, socklen_t len, uint8_t* out) {
  if (len < sizeof(struct sockaddr_in)) return false;
  if (address->sa_family == AF_INET) {
    __builtin_memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    __builtin_memcpy(out + 12, &reinterpret_cast<const struct sockaddr_in*>(address)->sin_addr, 4);
    return true;
  }
  if (address->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
    __builtin_memcpy(out, &reinterpret_cast<const struct sockaddr_in6*>(address)->sin6_addr, 16);
    return true;
  }
  return false;
}

bool is_ipv4_mapped(const uint8_t* bytes) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return __builtin_memcmp(bytes, kPrefix, 12) == 0;
}

// Writes `bytes` into `address` (of its own family); false when an IPv4 address cannot hold it.
bool put_address_bytes(struct sockaddr* address, const uint8_t* bytes) {
  if (address->sa_family == AF_INET) {
    if (!is_ipv4_mapped(bytes)) return false;
    __builtin_memcpy(&reinterpret_cast<struct sockaddr_in*>(address)->sin_addr, bytes + 12, 4);
  } else {
    __builtin_memcpy(&reinterpret_cast<struct sockaddr_in6*>(address)->sin6_addr, bytes, 16);
  }
  return true;
}

// The address the kernel should get for `address`: `address` itself, or a copy in `out` naming
// the host's real address.
const struct sockaddr* real_address(const struct sockaddr* address, socklen_t len, struct sockaddr_storage* out) {
  uint8_t bytes[16];
  if (!address || len > sizeof *out || !address_bytes(address, len, bytes)) return address;
  const uint8_t* real = g_hosts.real_of_virtual(bytes);
  if (!real) return address;
  __builtin_memcpy(out, address, len);
  return put_address_bytes(reinterpret_cast<struct sockaddr*>(out), real) ? reinterpret_cast<struct sockaddr*>(out)
                                                                          : address;
}

// An address the kernel filled in (`len` of it, in a buffer of `cap` bytes), as the program knows it.
void show_virtual(struct sockaddr* address, socklen_t len, socklen_t cap) {
  uint8_t bytes[16];
  if (!address || len > cap || !address_bytes(address, len, bytes)) return;
  if (const uint8_t* shown = g_hosts.virtual_of_real(bytes)) put_address_bytes(address, shown);
}

int on_event(stasis_event_t event, const stasis_event_data_t*, void*) {
  if (event == STASIS_EVENT_RESTART) {
    uint32_t count = g_restart_info.address_move_count;
    if (!g_hosts.compose(g_restart_info.address_moves, count < STASIS_MAX_ADDRESS_MOVES ? count : STASIS_MAX_ADDRESS_MOVES)) {
      LogLine warning;
      warning << "socket addresses: the program knows more than " << STASIS_MAX_ADDRESS_MOVES
              << " hosts; it sees the new addresses of the others";
      warning.emit();
    }
  }
  return 0;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "socket-addresses", on_event, nullptr, nullptr};

using ConnectFn = int (*)(int, const struct sockaddr*, socklen_t);
using SendtoFn = ssize_t (*)(int, const void*, size_t, int, const struct sockaddr*, socklen_t);
using SendmsgFn = ssize_t (*)(int, const struct msghdr*, int);
using SendmmsgFn = int (*)(int, struct mmsghdr*, unsigned int, int);
using AcceptFn = int (*)(int, struct sockaddr*, socklen_t*);
using Accept4Fn = int (*)(int, struct sockaddr*, socklen_t*, int);
using RecvfromFn = ssize_t (*)(int, void*, size_t, int, struct sockaddr*, socklen_t*);
using RecvmsgFn = ssize_t (*)(int, struct msghdr*, int);
using RecvmmsgFn = int (*)(int, struct mmsghdr*, unsigned int, int, struct timespec*);
ConnectFn g_connect, g_bind;
SendtoFn g_sendto;
SendmsgFn g_sendmsg;
SendmmsgFn g_sendmmsg;
AcceptFn g_accept;
Accept4Fn g_accept4;
RecvfromFn g_recvfrom;
RecvmsgFn g_recvmsg;
RecvmmsgFn g_recvmmsg;

__attribute__((constructor)) void register_socket_addresses() {
  stasis_register_plugin(&g_plugin);  // the wrappers' functions resolve on first call (next_symbol)
}

bool hosts_moved() { return __builtin_expect(g_hosts.any_moved(), 0); }

// getsockname/getpeername: a restored socket's saved addresses, else the virtual ones.
int socket_address_as_seen(long call, int fd, struct sockaddr* address, socklen_t* len) {
  socklen_t cap = len ? *len : 0;
  long result = STASIS_SYS3(call, fd, address, len);
  if (result != 0) {
    errno = static_cast<int>(-result);
    return -1;
  }
  const StasisTcpData* seen = seen_names(fd);
  if (!seen) {
    if (hosts_moved()) show_virtual(address, *len, cap);
    return 0;
  }
  const uint8_t* ip = call == SYS_getsockname ? seen->local_address : seen->peer_address;
  uint16_t port = call == SYS_getsockname ? seen->local_port : seen->peer_port;
  struct sockaddr_storage shown = {};
  socklen_t shown_len;
  if (seen->family == AF_INET) {
    auto* v4 = reinterpret_cast<struct sockaddr_in*>(&shown);
    v4->sin_family = AF_INET;
    v4->sin_port = __builtin_bswap16(port);
    __builtin_memcpy(&v4->sin_addr, ip + 12, 4);
    shown_len = sizeof *v4;
  } else {
    auto* v6 = reinterpret_cast<struct sockaddr_in6*>(&shown);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = __builtin_bswap16(port);
    __builtin_memcpy(&v6->sin6_addr, ip, 16);
    shown_len = sizeof *v6;
  }
  __builtin_memcpy(address, &shown, cap < shown_len ? cap : shown_len);
  *len = shown_len;
  return 0;
}

}  // namespace
}  // namespace stasis::rt

using stasis::rt::hosts_moved;
using stasis::rt::real_address;
using stasis::rt::show_virtual;

#define STASIS_EXPORT extern "C" __attribute__((visibility("default")))

STASIS_EXPORT int getsockname(int fd, struct sockaddr* address, socklen_t* len) {
  return stasis::rt::socket_address_as_seen(SYS_getsockname, fd, address, len);
}

STASIS_EXPORT int getpeername(int fd, struct sockaddr* address, socklen_t* len) {
  return stasis::rt::socket_address_as_seen(SYS_getpeername, fd, address, len);
}

STASIS_EXPORT int connect(int fd, const struct sockaddr* address, socklen_t len) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_connect, "connect");
  if (!hosts_moved()) return real(fd, address, len);
  struct sockaddr_storage translated;
  return real(fd, real_address(address, len, &translated), len);
}

STASIS_EXPORT int bind(int fd, const struct sockaddr* address, socklen_t len) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_bind, "bind");
  if (!hosts_moved()) return real(fd, address, len);
  struct sockaddr_storage translated;
  return real(fd, real_address(address, len, &translated), len);
}

STASIS_EXPORT ssize_t sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* address,
                             socklen_t len) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_sendto, "sendto");
  if (!hosts_moved()) return real(fd, buf, n, flags, address, len);
  struct sockaddr_storage translated;
  return real(fd, buf, n, flags, real_address(address, len, &translated), len);
}

STASIS_EXPORT ssize_t sendmsg(int fd, const struct msghdr* message, int flags) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_sendmsg, "sendmsg");
  if (!hosts_moved() || !message || !message->msg_name) return real(fd, message, flags);
  struct sockaddr_storage translated;
  struct msghdr copy = *message;
  copy.msg_name = const_cast<struct sockaddr*>(
      real_address(static_cast<const struct sockaddr*>(message->msg_name), message->msg_namelen, &translated));
  return real(fd, &copy, flags);
}

// In batches, each message's name translated into a copy: the program's vector stays untouched but
// for the counts the call fills in.
STASIS_EXPORT int sendmmsg(int fd, struct mmsghdr* messages, unsigned int count, int flags) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_sendmmsg, "sendmmsg");
  if (!hosts_moved()) return real(fd, messages, count, flags);
  constexpr unsigned kBatch = 16;
  unsigned sent = 0;
  while (sent < count) {
    struct mmsghdr batch[kBatch];
    struct sockaddr_storage names[kBatch];
    unsigned n = count - sent < kBatch ? count - sent : kBatch;
    for (unsigned i = 0; i < n; i++) {
      batch[i] = messages[sent + i];
      const struct msghdr& header = messages[sent + i].msg_hdr;
      if (header.msg_name)
        batch[i].msg_hdr.msg_name = const_cast<struct sockaddr*>(
            real_address(static_cast<const struct sockaddr*>(header.msg_name), header.msg_namelen, &names[i]));
    }
    int done = real(fd, batch, n, flags);
    if (done < 0) return sent ? static_cast<int>(sent) : -1;
    for (int i = 0; i < done; i++) messages[sent + i].msg_len = batch[i].msg_len;
    sent += static_cast<unsigned>(done);
    if (static_cast<unsigned>(done) < n) break;
  }
  return static_cast<int>(sent);
}

STASIS_EXPORT int accept(int fd, struct sockaddr* address, socklen_t* len) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_accept, "accept");
  socklen_t cap = len ? *len : 0;
  int result = real(fd, address, len);
  if (hosts_moved() && result >= 0 && address && len) show_virtual(address, *len, cap);
  return result;
}

STASIS_EXPORT int accept4(int fd, struct sockaddr* address, socklen_t* len, int flags) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_accept4, "accept4");
  socklen_t cap = len ? *len : 0;
  int result = real(fd, address, len, flags);
  if (hosts_moved() && result >= 0 && address && len) show_virtual(address, *len, cap);
  return result;
}

STASIS_EXPORT ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* address, socklen_t* len) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_recvfrom, "recvfrom");
  socklen_t cap = len ? *len : 0;
  ssize_t result = real(fd, buf, n, flags, address, len);
  if (hosts_moved() && result >= 0 && address && len) show_virtual(address, *len, cap);
  return result;
}

STASIS_EXPORT ssize_t recvmsg(int fd, struct msghdr* message, int flags) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_recvmsg, "recvmsg");
  socklen_t cap = message ? message->msg_namelen : 0;
  ssize_t result = real(fd, message, flags);
  if (hosts_moved() && result >= 0 && message->msg_name)
    show_virtual(static_cast<struct sockaddr*>(message->msg_name), message->msg_namelen, cap);
  return result;
}

STASIS_EXPORT int recvmmsg(int fd, struct mmsghdr* messages, unsigned int count, int flags, struct timespec* timeout) {
  auto real = stasis::rt::next_symbol(stasis::rt::g_recvmmsg, "recvmmsg");
  if (!hosts_moved()) return real(fd, messages, count, flags, timeout);
  constexpr unsigned kMostNames = 64;  // the capacities the program gave, for as many messages
  socklen_t caps[kMostNames];
  unsigned noted = count < kMostNames ? count : kMostNames;
  for (unsigned i = 0; i < noted; i++) caps[i] = messages[i].msg_hdr.msg_namelen;
  int result = real(fd, messages, count, flags, timeout);
  for (int i = 0; i < result && static_cast<unsigned>(i) < noted; i++)
    if (messages[i].msg_hdr.msg_name)
      show_virtual(static_cast<struct sockaddr*>(messages[i].msg_hdr.msg_name), messages[i].msg_hdr.msg_namelen, caps[i]);
  return result;
}
