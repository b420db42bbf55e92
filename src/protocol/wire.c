// See wire.h. Everything here may run inside a suspended application (no malloc, no stdio).
// Linked into the preloaded runtime, whose own sendmsg, poll, read, close... wrap the program's
// calls: every system call here is made directly (common/raw_syscall.h) so that the protocol
// never goes through them.
#include "protocol/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>

#include "common/hmac.h"
#include "common/raw_syscall.h"

// A raw system call's result the libc way: -1 with errno set on failure.
static long with_errno(long result) {
  if (result < 0 && result > -4096) {
    errno = (int)-result;
    return -1;
  }
  return result;
}

#define SYS_WITH_ERRNO2(n, a, b) with_errno(STASIS_SYS2(n, a, b))
#define SYS_WITH_ERRNO3(n, a, b, c) with_errno(STASIS_SYS3(n, a, b, c))

static int64_t monotonic_ms(void) {
  struct timespec now;
  STASIS_SYS2(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int close_fd(int fd) { return (int)with_errno(STASIS_SYS1(SYS_close, fd)); }

static int set_socket_option(int fd, int level, int name, const void* value, socklen_t len) {
  return (int)with_errno(STASIS_SYS5(SYS_setsockopt, fd, level, name, value, len));
}

// Waits until fd has `events` or the deadline (monotonic ms; < 0 = none) passes.
static int wait_for(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    int timeout = -1;
    if (deadline_ms >= 0) {
      int64_t left = deadline_ms - monotonic_ms();
      if (left <= 0) {
        errno = ETIMEDOUT;
        return -1;
      }
      timeout = left > 1000000 ? 1000000 : (int)left;
    }
    struct pollfd p = {.fd = fd, .events = events, .revents = 0};
    int n = (int)SYS_WITH_ERRNO3(SYS_poll, &p, 1, timeout);
    if (n > 0) return 0;  // readable, writable, or an error the next read/write reports
    if (n < 0 && errno != EINTR) return -1;
  }
}

int stasis_send_msg(int fd, uint16_t type, uint64_t arg, const void* payload, uint32_t len) {
  if (len > STASIS_MAX_PAYLOAD || (len > 0 && payload == NULL)) {
    errno = EINVAL;
    return -1;
  }
  struct StasisMsgHeader header;
  memset(&header, 0, sizeof header);
  header.magic = STASIS_PROTOCOL_MAGIC;
  header.version = STASIS_PROTOCOL_VERSION;
  header.type = type;
  header.payload_len = len;
  header.arg = arg;

  // One sendmsg for header and payload so small messages leave in one segment.
  struct iovec parts[2] = {{.iov_base = &header, .iov_len = sizeof header},
                           {.iov_base = (void*)payload, .iov_len = len}};
  struct iovec* next = parts;
  int remaining_parts = len > 0 ? 2 : 1;
  while (remaining_parts > 0) {
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = next;
    message.msg_iovlen = (size_t)remaining_parts;
    ssize_t sent = SYS_WITH_ERRNO3(SYS_sendmsg, fd, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (wait_for(fd, POLLOUT, -1) < 0) return -1;
        continue;
      }
      return -1;
    }
    while (remaining_parts > 0 && (size_t)sent >= next->iov_len) {
      sent -= (ssize_t)next->iov_len;
      next++;
      remaining_parts--;
    }
    if (remaining_parts > 0) {
      next->iov_base = (char*)next->iov_base + sent;
      next->iov_len -= (size_t)sent;
    }
  }
  return 0;
}

static int recv_until(int fd, void* buf, size_t len, int64_t deadline_ms) {
  char* at = (char*)buf;
  while (len > 0) {
    if (deadline_ms >= 0 && wait_for(fd, POLLIN, deadline_ms) < 0) return -1;
    ssize_t got = SYS_WITH_ERRNO3(SYS_read, fd, at, len);
    if (got == 0) {
      errno = ECONNRESET;
      return -1;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (wait_for(fd, POLLIN, deadline_ms) < 0) return -1;
        continue;
      }
      return -1;
    }
    at += got;
    len -= (size_t)got;
  }
  return 0;
}

int stasis_recv_exact(int fd, void* buf, size_t len) { return recv_until(fd, buf, len, -1); }

int stasis_recv_exact_timeout(int fd, void* buf, size_t len, int timeout_ms) {
  return recv_until(fd, buf, len, timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms);
}

static int header_is_valid(const struct StasisMsgHeader* header) {
  return header->magic == STASIS_PROTOCOL_MAGIC && header->version == STASIS_PROTOCOL_VERSION &&
         header->payload_len <= STASIS_MAX_PAYLOAD;
}

static int recv_header_until(int fd, struct StasisMsgHeader* header, int64_t deadline_ms) {
  if (recv_until(fd, header, sizeof *header, deadline_ms) < 0) return -1;
  if (!header_is_valid(header)) {
    errno = EPROTO;
    return -1;
  }
  return 0;
}

int stasis_recv_header(int fd, struct StasisMsgHeader* header) {
  return recv_header_until(fd, header, -1);
}

static int discard_until(int fd, size_t len, int64_t deadline_ms) {
  char sink[256];
  while (len > 0) {
    size_t chunk = len < sizeof sink ? len : sizeof sink;
    if (recv_until(fd, sink, chunk, deadline_ms) < 0) return -1;
    len -= chunk;
  }
  return 0;
}

int stasis_discard(int fd, size_t len) { return discard_until(fd, len, -1); }

void stasis_auth_mac(const uint8_t* secret, size_t secret_len,
                     const uint8_t nonce[STASIS_NONCE_BYTES], uint32_t role,
                     uint8_t mac[STASIS_MAC_BYTES]) {
  uint8_t signed_bytes[STASIS_NONCE_BYTES + 4];
  memcpy(signed_bytes, nonce, STASIS_NONCE_BYTES);
  for (int i = 0; i < 4; i++) signed_bytes[STASIS_NONCE_BYTES + i] = (uint8_t)(role >> (8 * i));
  stasis_hmac_sha256(secret, secret_len, signed_bytes, sizeof signed_bytes, mac);
}

static void set_reason(char* reason, size_t reason_len, const char* text, size_t text_len) {
  if (reason == NULL || reason_len == 0) return;
  size_t n = text_len < reason_len - 1 ? text_len : reason_len - 1;
  memcpy(reason, text, n);
  reason[n] = '\0';
}

static void set_reason_str(char* reason, size_t reason_len, const char* text) {
  set_reason(reason, reason_len, text, strlen(text));
}

// A local failure, described without strerror (which may take locale locks).
static void set_io_reason(char* reason, size_t reason_len, const char* doing) {
  const char* why = errno == ECONNRESET  ? "connection closed by the coordinator"
                    : errno == ETIMEDOUT ? "the coordinator did not answer in time"
                    : errno == EPROTO    ? "the peer does not speak the stasis protocol"
                                         : "socket error";
  char text[160];
  size_t doing_len = strlen(doing), why_len = strlen(why);
  if (doing_len + 2 + why_len >= sizeof text) doing_len = 0;
  memcpy(text, doing, doing_len);
  size_t at = doing_len;
  if (doing_len > 0) {
    memcpy(text + at, ": ", 2);
    at += 2;
  }
  memcpy(text + at, why, why_len);
  at += why_len;
  set_reason(reason, reason_len, text, at);
}

int stasis_client_handshake(int fd, const uint8_t* secret, size_t secret_len, uint32_t role,
                            const struct StasisProcessInfo* info, uint64_t* client_id, char* reason,
                            size_t reason_len) {
  int64_t deadline = monotonic_ms() + STASIS_CLIENT_TIMEOUT_MS;
  struct StasisMsgHeader header;
  struct StasisHello hello;
  if (recv_header_until(fd, &header, deadline) < 0) {
    set_io_reason(reason, reason_len, "waiting for the coordinator's greeting");
    return -1;
  }
  if (header.type != STASIS_MSG_HELLO || header.payload_len != sizeof hello) {
    set_reason_str(reason, reason_len, "the coordinator sent an unexpected greeting");
    errno = EPROTO;
    return -1;
  }
  if (recv_until(fd, &hello, sizeof hello, deadline) < 0) {
    set_io_reason(reason, reason_len, "reading the coordinator's greeting");
    return -1;
  }

  struct StasisAuth auth;
  memset(&auth, 0, sizeof auth);
  auth.role = role;
  stasis_auth_mac(secret, secret_len, hello.nonce, role, auth.mac);
  if (info != NULL) auth.process = *info;
  if (stasis_send_msg(fd, STASIS_MSG_AUTH, 0, &auth, sizeof auth) < 0) {
    set_io_reason(reason, reason_len, "sending authentication");
    return -1;
  }

  if (recv_header_until(fd, &header, deadline) < 0) {
    set_io_reason(reason, reason_len, "waiting for the coordinator to accept");
    return -1;
  }
  if (header.type == STASIS_MSG_AUTH_FAIL) {
    char text[STASIS_MESSAGE_MAX];
    size_t keep = header.payload_len < sizeof text ? header.payload_len : sizeof text;
    if (recv_until(fd, text, keep, deadline) < 0) keep = 0;
    // Trailing newlines or NULs would break the one-line error a caller prints.
    while (keep > 0 && (text[keep - 1] == '\n' || text[keep - 1] == '\0')) keep--;
    if (keep == 0) {
      set_reason_str(reason, reason_len, "refused by the coordinator");
    } else {
      set_reason(reason, reason_len, text, keep);
    }
    errno = EACCES;
    return -1;
  }
  struct StasisAuthOk ok;
  if (header.type != STASIS_MSG_AUTH_OK || header.payload_len != sizeof ok) {
    set_reason_str(reason, reason_len, "the coordinator sent an unexpected answer");
    errno = EPROTO;
    return -1;
  }
  if (recv_until(fd, &ok, sizeof ok, deadline) < 0) {
    set_io_reason(reason, reason_len, "reading the coordinator's answer");
    return -1;
  }
  if (client_id != NULL) *client_id = ok.client_id;
  return 0;
}

static int parse_numeric_host(const char* numeric_host, uint16_t port, struct sockaddr_storage* address,
                              socklen_t* address_len) {
  memset(address, 0, sizeof *address);
  struct sockaddr_in* v4 = (struct sockaddr_in*)address;
  struct sockaddr_in6* v6 = (struct sockaddr_in6*)address;
  if (numeric_host != NULL && inet_pton(AF_INET, numeric_host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *address_len = sizeof *v4;
    return 0;
  }
  if (numeric_host != NULL && inet_pton(AF_INET6, numeric_host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *address_len = sizeof *v6;
    return 0;
  }
  errno = EINVAL;
  return -1;
}

int stasis_tcp_socket_for(const char* numeric_host) {
  struct sockaddr_storage address;
  socklen_t address_len;
  if (parse_numeric_host(numeric_host, 0, &address, &address_len) != 0) return -1;
  return (int)SYS_WITH_ERRNO3(SYS_socket, address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

int stasis_connect_socket(int fd, const char* numeric_host, uint16_t port) {
  struct sockaddr_storage address;
  socklen_t address_len;
  if (parse_numeric_host(numeric_host, port, &address, &address_len) != 0) return -1;
  // Non-blocking connect so an unreachable host costs at most the timeout, not minutes.
  int flags = (int)SYS_WITH_ERRNO2(SYS_fcntl, fd, F_GETFL);
  if (flags < 0 || SYS_WITH_ERRNO3(SYS_fcntl, fd, F_SETFL, flags | O_NONBLOCK) < 0) return -1;
  // The system call itself: in a restarted program, the runtime's connect() translates the
  // addresses of hosts a restart moved, and the coordinator's address is a real one.
  if (SYS_WITH_ERRNO3(SYS_connect, fd, (struct sockaddr*)&address, address_len) < 0) {
    if (errno != EINPROGRESS && errno != EINTR) return -1;
    if (wait_for(fd, POLLOUT, monotonic_ms() + STASIS_CLIENT_TIMEOUT_MS) < 0) return -1;
    int connect_error = 0;
    socklen_t error_len = sizeof connect_error;
    if (with_errno(STASIS_SYS5(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, &connect_error, &error_len)) < 0)
      return -1;
    if (connect_error != 0) {
      errno = connect_error;
      return -1;
    }
  }
  if (SYS_WITH_ERRNO3(SYS_fcntl, fd, F_SETFL, flags & ~O_NONBLOCK) < 0) return -1;
  int one = 1;
  set_socket_option(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return 0;
}

int stasis_connect_abstract(const char* name) {
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  size_t len = strlen(name);
  if (len > sizeof address.sun_path - 1) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(address.sun_path + 1, name, len);
  int fd = (int)SYS_WITH_ERRNO3(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  socklen_t address_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
  if (SYS_WITH_ERRNO3(SYS_connect, fd, &address, address_len) < 0) {
    int saved = errno;
    close_fd(fd);
    errno = saved;
    return -1;
  }
  // Anyone can bind any abstract name: only a listener of this user (who alone can read the
  // computation's secret) is trusted with the handshake, or it could pass a coordinator's
  // nonce on and borrow this process's answer.
  struct { int32_t pid; uint32_t uid, gid; } peer;  /* struct ucred, without _GNU_SOURCE */
  socklen_t peer_len = sizeof peer;
  if (with_errno(STASIS_SYS5(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len)) < 0 ||
      peer.uid != (uint32_t)STASIS_SYS0(SYS_getuid)) {
    close_fd(fd);
    errno = EACCES;
    return -1;
  }
  // Blocking from here, as the TCP connections are (every read here waits with poll).
  long flags = STASIS_SYS2(SYS_fcntl, fd, F_GETFL);
  STASIS_SYS3(SYS_fcntl, fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

int stasis_connect_tcp(const char* numeric_host, uint16_t port) {
  int fd = stasis_tcp_socket_for(numeric_host);
  if (fd < 0) return -1;
  if (stasis_connect_socket(fd, numeric_host, port) != 0) {
    int saved_errno = errno;
    close_fd(fd);
    errno = saved_errno;
    return -1;
  }
  return fd;
}
