// Sockets (checkpoint side): Unix sockets (connected ends of every type, listeners, named datagram
// sockets), TCP listeners and connections, UDP sockets. What is queued for reading at a socket is
// copied with MSG_PEEK, which leaves it in place (as tee does for pipes): every process of the
// computation is stopped, so nothing is moving anywhere else. A Unix end's peer is found with
// sock_diag, which names its inode, so restart can pair the two ends again. Other sockets are
// refused with a message naming the descriptor and what it is. What the program sees of the
// addresses after a restart moved sockets or hosts: socket_addresses.cc.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>

#include "plugins/sockets/records.h"
#include "plugins/sockets/sockets.h"

namespace stasis::rt {
namespace {

int socket_option_at(int fd, int level, int option) {
  int value = 0;
  socklen_t len = sizeof value;
  if (STASIS_SYS5(SYS_getsockopt, fd, level, option, &value, &len) != 0) return -1;
  return value;
}

int socket_option(int fd, int option) { return socket_option_at(fd, SOL_SOCKET, option); }

struct UnixSocketState {
  uint64_t peer_ino = 0;
  uint32_t shutdown = 0;
  uint32_t pending_connections = 0;  // a listener's accept queue
  bool answered = false;
};

// Asks sock_diag about the Unix socket with inode `ino`: its peer and its shutdown state.
bool query_unix_socket(uint64_t ino, UnixSocketState* state) {
  long nl = STASIS_SYS3(SYS_socket, AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return false;
  struct {
    struct nlmsghdr header;
    struct unix_diag_req request;
  } message = {};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0u;
  message.request.udiag_ino = static_cast<uint32_t>(ino);
  message.request.udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN;
  message.request.udiag_cookie[0] = message.request.udiag_cookie[1] = ~0u;  // any
  struct sockaddr_nl kernel = {};
  kernel.nl_family = AF_NETLINK;
  bool ok = STASIS_SYS6(SYS_sendto, nl, &message, sizeof message, 0, &kernel, sizeof kernel) ==
            static_cast<long>(sizeof message);
  alignas(8) char reply[4096];
  long len = ok ? STASIS_SYS6(SYS_recvfrom, nl, reply, sizeof reply, 0, 0, 0) : -1;
  STASIS_SYS1(SYS_close, nl);
  for (auto* h = reinterpret_cast<struct nlmsghdr*>(reply); len > 0 && NLMSG_OK(h, static_cast<unsigned>(len));
       h = NLMSG_NEXT(h, len)) {
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return false;  // NLMSG_ERROR: no such socket
    auto* diag = static_cast<struct unix_diag_msg*>(NLMSG_DATA(h));
    if (diag->udiag_ino != ino) continue;
    state->answered = true;
    long rest = static_cast<long>(h->nlmsg_len) - NLMSG_LENGTH(sizeof *diag);
    for (auto* a = reinterpret_cast<struct rtattr*>(diag + 1); RTA_OK(a, rest); a = RTA_NEXT(a, rest))
      if (a->rta_type == UNIX_DIAG_PEER) state->peer_ino = *static_cast<uint32_t*>(RTA_DATA(a));
      else if (a->rta_type == UNIX_DIAG_SHUTDOWN)  // sk_shutdown: RCV_SHUTDOWN 1, SEND_SHUTDOWN 2
        state->shutdown = *static_cast<uint8_t*>(RTA_DATA(a));
      else if (a->rta_type == UNIX_DIAG_RQLEN)  // a listener: connections not yet accepted
        state->pending_connections = static_cast<struct unix_diag_rqlen*>(RTA_DATA(a))->udiag_rqueue;
    return true;
  }
  return false;
}

const char* socket_type_name(int type) {
  switch (type) {
    case SOCK_STREAM: return "stream";
    case SOCK_DGRAM: return "datagram";
    case SOCK_SEQPACKET: return "seqpacket";
  }
  return "raw or other";
}


// Reads the next queued message (or stream bytes) into `buf` without taking it, and its sender's
// address into `sender` when asked. Returns the length, -EAGAIN at the end of the queue, or -1
// when it cannot be copied as it is (cut short, or carrying control data: descriptors, credentials
// or packet information; `*with_control` says which).
long peek_queued(int fd, char* buf, size_t cap, bool* with_control, struct sockaddr_storage* sender = nullptr,
                 socklen_t* sender_len = nullptr) {
  char control[256];
  struct iovec iov = {buf, cap};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (sender) {
    msg.msg_name = sender;
    msg.msg_namelen = sizeof *sender;
  }
  long n = STASIS_SYS3(SYS_recvmsg, fd, &msg, MSG_PEEK | MSG_DONTWAIT);
  if (sender_len) *sender_len = msg.msg_namelen;
  *with_control = n >= 0 && (msg.msg_controllen != 0 || (msg.msg_flags & MSG_CTRUNC));
  if (n == -EAGAIN) return n;
  return n < 0 || *with_control || (msg.msg_flags & MSG_TRUNC) ? -1 : n;
}

// Copies the messages queued at a datagram or seqpacket end, without taking them: the peek
// offset walks the queue one message at a time, once to size the copy, once to make it. Each is
// saved as a uint32_t length and its bytes (SOCKET_MESSAGES), or with `with_senders` also with its
// sender's address (SOCKET_DATAGRAMS: sockets that many senders reach).
bool peek_messages(int fd, FdDataList& data, LogLine& error, bool with_senders = false) {
  constexpr uint32_t kMaxMessage = 256u << 10;
  int old_offset = socket_option(fd, SO_PEEK_OFF);
  char* message = static_cast<char*>(data.arena().alloc(kMaxMessage));
  char* saved = nullptr;
  uint64_t total = 0, used = 0;
  bool ok = message != nullptr;
  for (int pass = 0; ok && pass < 2; pass++) {
    int zero = 0;
    if (STASIS_SYS5(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof zero) != 0) {
      error << "cannot walk the messages queued at the socket of descriptor " << fd;
      ok = false;
      break;
    }
    if (pass == 1 && (total == 0 || !(saved = static_cast<char*>(data.arena().alloc(total))))) {
      ok = total == 0;  // nothing queued, or out of scratch memory
      break;
    }
    for (;;) {
      bool with_control = false;
      struct sockaddr_storage sender = {};
      socklen_t sender_len = 0;
      long n = peek_queued(fd, message, kMaxMessage, &with_control, with_senders ? &sender : nullptr, &sender_len);
      if (n == -EAGAIN) break;
      uint32_t len = static_cast<uint32_t>(n), name_len = with_senders ? sender_len : 0;
      if (name_len > sizeof sender) name_len = 0;  // cannot happen: the kernel cuts it to the buffer
      uint64_t record = sizeof len + (with_senders ? sizeof name_len + name_len : 0) + len;
      if (n < 0 || (pass == 1 && used + record > total)) {
        error << "a message queued at the socket of descriptor " << fd
              << (with_control ? " carries control data (descriptors, credentials or packet information)"
                               : " cannot be copied")
              << "; this version of Stasis cannot save it; not checkpointing";
        ok = false;
        break;
      }
      if (pass == 0) {
        total += record;
        continue;
      }
      __builtin_memcpy(saved + used, &len, sizeof len);
      used += sizeof len;
      if (with_senders) {
        __builtin_memcpy(saved + used, &name_len, sizeof name_len);
        __builtin_memcpy(saved + used + sizeof name_len, &sender, name_len);
        used += sizeof name_len + name_len;
      }
      __builtin_memcpy(saved + used, message, len);
      used += len;
    }
  }
  STASIS_SYS5(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, &old_offset, sizeof old_offset);
  uint32_t tag = with_senders ? STASIS_FD_DATA_SOCKET_DATAGRAMS : STASIS_FD_DATA_SOCKET_MESSAGES;
  if (ok && used && !data.add_ref(fd, tag, saved, used)) {
    error << "too much descriptor state to save";
    ok = false;
  }
  return ok;
}

bool peek_bytes(int fd, FdDataList& data, LogLine& error) {
  int queued = 0;
  if (STASIS_SYS3(SYS_ioctl, fd, FIONREAD, &queued) != 0 || queued <= 0) return true;
  // (TCP: FIONREAD counts the bytes in order that a read would return.)
  char* bytes = static_cast<char*>(data.arena().alloc(static_cast<size_t>(queued)));
  bool with_control = false;
  long got = bytes ? peek_queued(fd, bytes, static_cast<size_t>(queued), &with_control) : -1;
  if (got != queued) {
    error << "cannot copy the " << queued << " bytes queued at the socket of descriptor " << fd
          << (with_control ? " (descriptors or credentials travel with them)" : "") << "; not checkpointing";
    return false;
  }
  if (!data.add_ref(fd, STASIS_FD_DATA_SOCKET_BYTES, bytes, static_cast<uint64_t>(got))) {
    error << "too much descriptor state to save";
    return false;
  }
  return true;
}

// A Unix socket address as text: a path, "@name" for an abstract one.
void sockaddr_un_text(const struct sockaddr_un& address, socklen_t len, char* out, size_t cap) {
  size_t name_len = len - sizeof(sa_family_t);
  if (address.sun_path[0] == 0) {  // abstract: the name is every byte after the NUL
    out[0] = '@';
    size_t n = name_len - 1 < cap - 2 ? name_len - 1 : cap - 2;
    __builtin_memcpy(out + 1, address.sun_path + 1, n);
    out[n + 1] = 0;
  } else {
    str_copy(out, address.sun_path, cap);
  }
}

// A Unix socket's own name (SYS_getsockname) or its peer's (SYS_getpeername): a path, "@name" for
// an abstract one, "" for none.
void unix_socket_name(long call, int fd, char* out, size_t cap) {
  struct sockaddr_un address = {};
  socklen_t len = sizeof address;
  out[0] = 0;
  if (STASIS_SYS3(call, fd, &address, &len) != 0 || len <= sizeof(sa_family_t)) return;
  sockaddr_un_text(address, len, out, cap);
}

void socket_name(int fd, char* out, size_t cap) { unix_socket_name(SYS_getsockname, fd, out, cap); }

static_assert(sizeof(StasisTcpData) <= sizeof(StasisFdRecord::kind_data), "TCP state must fit kind_data");

void put_endpoint(const struct sockaddr_storage& address, uint8_t* ip, uint16_t* port) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const struct sockaddr_in&>(address);
    __builtin_memset(ip, 0, 10);
    ip[10] = ip[11] = 0xff;
    __builtin_memcpy(ip + 12, &v4.sin_addr, 4);
    *port = __builtin_bswap16(v4.sin_port);
  } else {
    const auto& v6 = reinterpret_cast<const struct sockaddr_in6&>(address);
    __builtin_memcpy(ip, &v6.sin6_addr, 16);
    *port = __builtin_bswap16(v6.sin6_port);
  }
}

// What TCP and UDP sockets share: both endpoints (the peer's only when connected), options, buffers.
StasisTcpData describe_inet_socket(int fd, int domain) {
  StasisTcpData inet = {};
  inet.family = static_cast<uint16_t>(domain);
  struct sockaddr_storage address = {};
  socklen_t len = sizeof address;
  if (STASIS_SYS3(SYS_getsockname, fd, &address, &len) == 0) put_endpoint(address, inet.local_address, &inet.local_port);
  len = sizeof address;
  if (STASIS_SYS3(SYS_getpeername, fd, &address, &len) == 0) put_endpoint(address, inet.peer_address, &inet.peer_port);
  auto flag_if = [](bool on, StasisTcpOption bit) { return on ? static_cast<unsigned>(bit) : 0u; };
  inet.options = static_cast<uint16_t>(
      flag_if(socket_option_at(fd, IPPROTO_TCP, TCP_NODELAY) > 0, STASIS_TCP_NODELAY) |
      flag_if(socket_option(fd, SO_KEEPALIVE) > 0, STASIS_TCP_KEEPALIVE) |
      flag_if(socket_option(fd, SO_REUSEADDR) > 0, STASIS_TCP_REUSEADDR) |
      flag_if(socket_option(fd, SO_REUSEPORT) > 0, STASIS_TCP_REUSEPORT) |
      flag_if(socket_option(fd, SO_BROADCAST) > 0, STASIS_TCP_BROADCAST) |
      flag_if(domain == AF_INET6 && socket_option_at(fd, IPPROTO_IPV6, IPV6_V6ONLY) > 0, STASIS_TCP_V6ONLY));
  inet.send_buffer = static_cast<uint32_t>(socket_option(fd, SO_SNDBUF));
  inet.receive_buffer = static_cast<uint32_t>(socket_option(fd, SO_RCVBUF));
  return inet;
}

const char* tcp_state_name(int state) {
  static const char* const kNames[] = {"?", "established", "syn-sent", "syn-received", "fin-wait-1",
                                       "fin-wait-2", "time-wait", "closed", "close-wait", "last-ack",
                                       "listen", "closing"};
  return state >= 0 && state < 12 ? kNames[state] : "unknown";
}

// Bytes the kernel holds back: Nagle's algorithm keeps small writes until the peer acknowledges
// (its kernel does, stopped or not), so they go out by themselves; setting TCP_NODELAY for a
// moment pushes them at once. What is still unsent after that waits for room at the receiver.
int unsent_tcp_bytes(int fd) {
  int unsent = 0;
  if (STASIS_SYS3(SYS_ioctl, fd, SIOCOUTQNSD, &unsent) != 0 || unsent == 0) return 0;
  int nodelay = socket_option_at(fd, IPPROTO_TCP, TCP_NODELAY), on = 1;
  if (nodelay == 0) {
    STASIS_SYS5(SYS_setsockopt, fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    STASIS_SYS5(SYS_setsockopt, fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
  }
  for (int wait = 0; wait < 50 && unsent > 0; wait++) {  // up to 0.25 s for the acknowledgements
    if (STASIS_SYS3(SYS_ioctl, fd, SIOCOUTQNSD, &unsent) != 0) return 0;
    if (unsent > 0) sleep_ns(5 * 1000000L);
  }
  return unsent;
}

}  // namespace

// After a restart that moved sockets (another host, another port): the addresses the program saw
// for the socket at `fd` before it, while that is still the restored socket.
const StasisTcpData* seen_names(int fd) {
  uint32_t count = g_restart_info.socket_name_count;
  if (__builtin_expect(count == 0, 1)) return nullptr;
  for (uint32_t i = 0; i < count && i < STASIS_MAX_SOCKET_NAMES; i++) {
    const StasisSocketNames& entry = g_restart_info.socket_names[i];
    if (entry.fd != fd) continue;
    struct stat st;
    return STASIS_SYS2(SYS_fstat, fd, &st) == 0 && st.st_ino == entry.ino ? &entry.names : nullptr;
  }
  return nullptr;
}

namespace {

// The description's owner keeps what the program saw for the next restart to show it again.
bool keep_seen_names(int fd, const StasisFdRecord& r, FdDataList& data, LogLine& error) {
  const StasisTcpData* seen = seen_names(fd);
  if (!seen || r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != fd) return true;
  if (data.add_copy(fd, STASIS_FD_DATA_SOCKET_SEEN_NAMES, seen, sizeof *seen)) return true;
  error << "too much descriptor state to save";
  return false;
}

// TCP: listeners, and established connections (their peer may or may not be in the computation;
// restart decides, seeing every image). Bytes the receiver has are copied with MSG_PEEK; bytes
// the sender could not send yet (the receiver's window is full) cannot be read without taking
// them, so such a checkpoint is refused.
int capture_tcp_fd(int fd, int domain, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  struct tcp_info info = {};
  socklen_t info_len = sizeof info;
  if (STASIS_SYS5(SYS_getsockopt, fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0) {
    error << "cannot read the TCP state of descriptor " << fd << "; not checkpointing";
    return -1;
  }
  StasisTcpData tcp = describe_inet_socket(fd, domain);
  if (!keep_seen_names(fd, r, data, error)) return -1;
  if (info.tcpi_state == 10 /* TCP_LISTEN */) {
    if (info.tcpi_unacked) {  // a listener's accept queue
      error << "descriptor " << fd << " is a listening TCP socket with " << info.tcpi_unacked
            << " connections not yet accepted; this version of Stasis cannot save them; not checkpointing";
      return -1;
    }
    tcp.backlog = info.tcpi_sacked;  // a listener's backlog
    r.kind = STASIS_FD_TCP_LISTENER;
    __builtin_memcpy(r.kind_data, &tcp, sizeof tcp);
    return 1;
  }
  if (info.tcpi_state != 1 /* TCP_ESTABLISHED */) {
    error << "descriptor " << fd << " is a TCP socket in state " << tcp_state_name(info.tcpi_state)
          << "; this version of Stasis restores listeners and established connections; not checkpointing";
    return -1;
  }
  r.kind = STASIS_FD_TCP_CONNECTION;
  __builtin_memcpy(r.kind_data, &tcp, sizeof tcp);
  // Once the program is killed, this end lingers in TIME_WAIT for a minute and keeps its port from
  // every socket that does not allow address reuse on both sides: an accepted end's port is its
  // listener's, which restart must bind again. Allowing reuse now lets restart's sockets (which
  // allow it) take the port at once; the saved options keep the program's own value, which
  // restart puts back.
  int reuse = 1;
  STASIS_SYS5(SYS_setsockopt, fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  if (unsent_tcp_bytes(fd) > 0) {
    int unsent = unsent_tcp_bytes(fd);
    error << "descriptor " << fd << " is a TCP connection with " << unsent << " bytes its peer has "
          << "no room for yet; this version of Stasis cannot save them; not checkpointing (a later "
          << "checkpoint, once the peer has read, can)";
    return -1;
  }
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != fd) return 1;
  return peek_bytes(fd, data, error) ? 1 : -1;
}

// UDP: the addresses it is bound and connected to, and the datagrams queued at it with their
// senders. Every process of the computation is stopped and a datagram between two of them is
// delivered when it is sent (loopback, or a virtual link that hands it on at once), so what is in
// the queues is everything in flight between them.
int capture_udp_fd(int fd, int domain, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  StasisTcpData udp = describe_inet_socket(fd, domain);
  if (!keep_seen_names(fd, r, data, error)) return -1;
  r.kind = STASIS_FD_UDP_SOCKET;
  __builtin_memcpy(r.kind_data, &udp, sizeof udp);
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != fd) return 1;
  return peek_messages(fd, data, error, true) ? 1 : -1;
}

// A datagram socket comes back as one end of a pair when neither it nor its peer has a name and
// each is the other's peer (socketpair), or when its peer of that kind is gone. Any other (a
// named one others send to; one connected to a named socket, such as syslog's /dev/log) is bound
// and connected by name again.
bool is_datagram_pair_end(int fd, uint64_t ino, const UnixSocketState& state) {
  char name[2];
  socket_name(fd, name, sizeof name);
  if (name[0]) return false;
  if (state.peer_ino == 0) return (state.shutdown & 3) == 3;
  UnixSocketState peer;
  if (!query_unix_socket(state.peer_ino, &peer) || !peer.answered) return true;  // the peer is gone
  unix_socket_name(SYS_getpeername, fd, name, sizeof name);
  return peer.peer_ino == ino && !name[0];
}

// kind_data of STASIS_FD_UNIX_SOCKET and STASIS_FD_UNIX_DATAGRAM records (records.h).
void describe_unix_end(int fd, int type, const UnixSocketState& state, StasisFdKind kind, StasisFdRecord& r) {
  r.kind = kind;
  set_kind_data(r, StasisUnixSocketData{state.peer_ino, static_cast<uint64_t>(socket_option(fd, SO_SNDBUF)),
                                        static_cast<uint64_t>(socket_option(fd, SO_RCVBUF)), state.shutdown & 3u,
                                        socket_option(fd, SO_PASSCRED) > 0 ? 1u : 0u, static_cast<uint64_t>(type)});
}

int capture_unix_datagram(const FdProbe& probe, const UnixSocketState& state, StasisFdRecord& r, FdDataList& data,
                          LogLine& error) {
  int fd = probe.fd;
  socket_name(fd, r.path, sizeof r.path);
  describe_unix_end(fd, SOCK_DGRAM, state, STASIS_FD_UNIX_DATAGRAM, r);
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != fd) return 1;
  int queued = 0;
  if (!r.path[0] && STASIS_SYS3(SYS_ioctl, fd, SIOCINQ, &queued) == 0 && queued > 0) {
    error << "descriptor " << fd << " is a Unix datagram socket without a name holding messages from "
          << "a named one; this version of Stasis cannot send them to it again; not checkpointing";
    return -1;
  }
  if (state.peer_ino) {
    char* peer_name = static_cast<char*>(data.arena().alloc(STASIS_IMAGE_PATH_MAX));
    if (!peer_name) {
      error << "too much descriptor state to save";
      return -1;
    }
    unix_socket_name(SYS_getpeername, fd, peer_name, STASIS_IMAGE_PATH_MAX);
    if (peer_name[0] && !data.add_ref(fd, STASIS_FD_DATA_SOCKET_PEER_NAME, peer_name, str_len(peer_name) + 1)) {
      error << "too much descriptor state to save";
      return -1;
    }
  }
  return peek_messages(fd, data, error, true) ? 1 : -1;
}

// A device-event socket (libudev's monitor, SDL's hot-plug watch): its groups, options and socket
// filter, so that restart subscribes a new one alike. The events queued now are not kept: they
// describe devices of this host at this moment, and the program reads them as a stream of
// changes that may have gaps (a monitor started late sees none of the earlier ones either).
int capture_uevent_socket(int fd, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  struct sockaddr_nl self = {};
  socklen_t len = sizeof self;
  STASIS_SYS3(SYS_getsockname, fd, &self, &len);
  r.kind = STASIS_FD_NETLINK_UEVENT;
  set_kind_data(r, StasisNetlinkData{static_cast<uint64_t>(socket_option(fd, SO_TYPE)), self.nl_groups,
                                     static_cast<uint64_t>(socket_option(fd, SO_RCVBUF)),
                                     socket_option(fd, SO_PASSCRED) > 0 ? 1u : 0u});
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != fd) return 1;
  socklen_t instructions = 0;  // SO_GET_FILTER with no room answers the filter's length
  if (STASIS_SYS5(SYS_getsockopt, fd, SOL_SOCKET, SO_GET_FILTER, nullptr, &instructions) != 0 || instructions == 0)
    return 1;
  uint64_t bytes = static_cast<uint64_t>(instructions) * sizeof(struct sock_filter);
  void* filter = data.arena().alloc(bytes);
  if (!filter || STASIS_SYS5(SYS_getsockopt, fd, SOL_SOCKET, SO_GET_FILTER, filter, &instructions) != 0 ||
      !data.add_ref(fd, STASIS_FD_DATA_SOCKET_FILTER, filter, bytes)) {
    error << "descriptor " << fd << ": cannot save the socket filter of a device-event socket; not checkpointing";
    return -1;
  }
  return 1;
}

}  // namespace

void push_held_back_tcp_bytes() {
  for_each_proc_number("/proc/self/fd", [](long fd, const char*, long) {
    int unsent = 0;
    if (socket_option_at(static_cast<int>(fd), SOL_SOCKET, SO_PROTOCOL) == IPPROTO_TCP &&
        STASIS_SYS3(SYS_ioctl, fd, SIOCOUTQNSD, &unsent) == 0 && unsent > 0)
      unsent_tcp_bytes(static_cast<int>(fd));
    return true;
  });
}

int capture_socket_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!S_ISSOCK(probe.st.st_mode)) return 0;
  int fd = probe.fd;
  int domain = socket_option(fd, SO_DOMAIN), type = socket_option(fd, SO_TYPE);
  int protocol = socket_option(fd, SO_PROTOCOL);
  if ((domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM && protocol == IPPROTO_TCP)
    return capture_tcp_fd(fd, domain, r, data, error);
  if ((domain == AF_INET || domain == AF_INET6) && type == SOCK_DGRAM && protocol == IPPROTO_UDP)
    return capture_udp_fd(fd, domain, r, data, error);
  if (domain == AF_NETLINK && protocol == NETLINK_KOBJECT_UEVENT) return capture_uevent_socket(fd, r, data, error);
  if (domain != AF_UNIX) return 0;  // refused with the general message ("a socket")
  bool listening = socket_option(fd, SO_ACCEPTCONN) > 0;
  UnixSocketState state;
  if ((type != SOCK_STREAM && type != SOCK_DGRAM && type != SOCK_SEQPACKET) ||
      !query_unix_socket(probe.st.st_ino, &state) || !state.answered) {
    error << "descriptor " << fd << " is a Unix " << socket_type_name(type)
          << " socket that this version of Stasis cannot inspect; not checkpointing";
    return -1;
  }
  if (listening) {
    if (state.pending_connections) {
      error << "descriptor " << fd << " is a listening Unix socket with " << state.pending_connections
            << " connections not yet accepted; this version of Stasis cannot save them; not checkpointing";
      return -1;
    }
    socket_name(fd, r.path, sizeof r.path);
    r.kind = STASIS_FD_UNIX_LISTENER;
    // SOMAXCONN: the kernel does not tell the backlog asked for
    set_kind_data(r, StasisUnixListenerData{SOMAXCONN, static_cast<uint64_t>(type),
                                            socket_option(fd, SO_PASSCRED) > 0 ? 1u : 0u});
    return 1;
  }
  struct sockaddr_un peer = {};
  socklen_t peer_len = sizeof peer;
  bool connected = state.peer_ino != 0 || STASIS_SYS3(SYS_getpeername, fd, &peer, &peer_len) == 0 ||
                   (state.shutdown & 3) == 3;  // connected once, the peer since closed
  if (type == SOCK_DGRAM && !is_datagram_pair_end(fd, probe.st.st_ino, state))
    return capture_unix_datagram(probe, state, r, data, error);
  if (state.peer_ino == probe.st.st_ino) {
    error << "descriptor " << fd << " is a Unix " << socket_type_name(type) << " socket connected "
          << "to itself; this version of Stasis cannot restore that; not checkpointing";
    return -1;
  }
  if (!connected) {
    error << "descriptor " << fd << " is an unconnected Unix " << socket_type_name(type) << " socket"
          << "; this version of Stasis restores only connected Unix "
          << "sockets and listeners; not checkpointing";
    return -1;
  }
  describe_unix_end(fd, type, state, STASIS_FD_UNIX_SOCKET, r);
  if (r.owner_pid != static_cast<int32_t>(g_config.original_pid) || r.owner_fd != fd) return 1;
  return (type == SOCK_STREAM ? peek_bytes(fd, data, error) : peek_messages(fd, data, error)) ? 1 : -1;
}

}  // namespace stasis::rt

// Every TCP listener allows address reuse. The connections it accepts inherit that, and so do the
// ends they leave in TIME_WAIT for a minute after they close, by the program (MPI libraries close
// surplus connections while they start) or because it was killed after a checkpoint; without it
// they keep the listener's port from restart, which must listen there again. A listener that
// allows reuse still keeps every other socket off its port, so the program sees no difference
// but getsockopt(SO_REUSEADDR) (and a checkpoint records 1).
extern "C" __attribute__((visibility("default"))) int listen(int fd, int backlog) {
  int domain = stasis::rt::socket_option(fd, SO_DOMAIN), reuse = 1;
  if (domain == AF_INET || domain == AF_INET6)
    STASIS_SYS5(SYS_setsockopt, fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  long result = STASIS_SYS2(SYS_listen, fd, backlog);
  if (result == 0) return 0;
  errno = static_cast<int>(-result);
  return -1;
}
