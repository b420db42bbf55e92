// Moves frames between device contexts: the per-context progress thread, non-blocking stream
// connections with output buffering (so no thread ever blocks while holding the context lock), and
// frame parsing. Frame semantics live in work_requests.cpp (handle_frame).
#include "transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softib {

namespace {

constexpr size_t kInitialInBuffer = 256 * 1024;

void set_watch(Context* c, Conn* k, bool want_out) {
  epoll_event ev{};
  ev.events = EPOLLIN | (want_out ? uint32_t{EPOLLOUT} : 0u);
  ev.data.fd = k->fd;
  epoll_ctl(c->epoll_fd, EPOLL_CTL_MOD, k->fd, &ev);
  k->watching_out = want_out;
}

void read_conn(Context* c, Conn* k) {
  for (;;) {
    if (k->in.size() - k->in_used < 64 * 1024) k->in.resize(std::max<size_t>(k->in.size() * 2, kInitialInBuffer));
    ssize_t n = recv(k->fd, k->in.data() + k->in_used, k->in.size() - k->in_used, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_failed(c, k);
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    k->in_used += static_cast<size_t>(n);
    size_t off = 0;
    while (k->in_used - off >= sizeof(FrameHeader)) {
      FrameHeader h;
      memcpy(&h, k->in.data() + off, sizeof h);
      if (h.frame_len < sizeof h) {  // garbage: this peer does not speak our protocol
        conn_failed(c, k);
        return;
      }
      if (h.frame_len > k->in_used - off) {
        if (h.frame_len > k->in.size()) k->in.resize(h.frame_len + 64 * 1024);
        break;
      }
      handle_frame(c, k, h, k->in.data() + off + sizeof h, h.frame_len - sizeof h);
      if (k->dead) return;
      off += h.frame_len;
    }
    if (off > 0) {
      memmove(k->in.data(), k->in.data() + off, k->in_used - off);
      k->in_used -= off;
    }
  }
}

void accept_all(Context* c, int listen_fd, bool tcp) {
  for (;;) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (tcp) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    add_conn(c, fd, "");
  }
}

void handle_event(Context* c, const epoll_event& ev) {
  int fd = ev.data.fd;
  if (fd == c->wake_fd) {
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0) { /* nothing to do: the wake-up itself is the message */ }
    return;
  }
  if (fd == c->listen_unix || fd == c->listen_tcp) {
    accept_all(c, fd, fd == c->listen_tcp);
    return;
  }
  auto it = c->conns_by_fd.find(fd);
  if (it == c->conns_by_fd.end()) return;
  Conn* k = it->second;
  if (ev.events & EPOLLOUT) flush(c, k);
  if (!k->dead && (ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP))) read_conn(c, k);
}

void progress_loop(Context* c) {
  epoll_event evs[64];
  int sleep_ms = -1;  // until a QP's retries run out, if one's are running
  for (;;) {
    int n = epoll_wait(c->epoll_fd, evs, 64, sleep_ms);
    std::lock_guard<std::mutex> g(c->lock);
    if (c->stopping) return;
    for (int i = 0; i < n; ++i) handle_event(c, evs[i]);
    sleep_ms = expire_retries(c);
  }
}

// What the socket really is (not what was asked for), so that a test can tell the transport.
void trace_connection(int fd, uint16_t lid, uint32_t qpn) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  char where[INET_ADDRSTRLEN + 8] = "";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 && peer.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &in.sin_addr, ip, sizeof ip);
    snprintf(where, sizeof where, " %s:%u", ip, ntohs(in.sin_port));
  }
  fprintf(stderr, "softib[%d]: connected to %u-%u over %s%s\n", getpid(), lid, qpn,
          peer.ss_family == AF_INET ? "tcp" : peer.ss_family == AF_UNIX ? "unix" : "?", where);
}

void watch_fd(Context* c, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace

Conn* add_conn(Context* c, int fd, const std::string& key) {
  Conn* k = new Conn;
  k->fd = fd;
  k->key = key;
  int big = 4 << 20;  // deep socket buffers keep large messages flowing without EPOLLOUT rounds
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  c->conns_by_fd[fd] = k;
  if (!key.empty()) c->outbound[key] = k;
  watch_fd(c, fd);
  return k;
}

void conn_failed(Context* c, Conn* k) {
  if (k->dead) return;
  k->dead = true;
  epoll_ctl(c->epoll_fd, EPOLL_CTL_DEL, k->fd, nullptr);
  c->conns_by_fd.erase(k->fd);
  close(k->fd);
  k->fd = -1;
  if (!k->key.empty()) {
    auto it = c->outbound.find(k->key);
    if (it != c->outbound.end() && it->second == k) c->outbound.erase(it);
  }
  k->out.clear();
  k->out_off = 0;
  c->retired.push_back(k);
  // Queue pairs that talked through this connection lost their peer: as when a real HCA's retries
  // run out.
  for (auto& [qpn, qp] : c->qps)
    if (qp->conn == k) qp_fail_transport(c, qp);
}

Conn* conn_to(Context* c, uint16_t lid, uint32_t qpn) {
  Endpoint ep;
  if (!lookup_qp(lid, qpn, &ep)) return nullptr;
  Route route = lid != c->lid ? Route::kOtherHostTcp : c->tcp_only ? Route::kSameHostTcp : Route::kUnixSocket;
  std::string key = route == Route::kUnixSocket ? ep.unix_path : ep.unix_path + "@tcp" + std::to_string(ep.tcp_port);
  auto it = c->outbound.find(key);
  if (it != c->outbound.end() && !it->second->dead) return it->second;
  int fd = connect_endpoint(ep, route);
  if (fd < 0) return nullptr;
  if (getenv("SOFTIB_TRACE")) trace_connection(fd, lid, qpn);
  return add_conn(c, fd, key);
}

char* frame_reserve(Conn* k, size_t len) {
  if (k->out_off == k->out.size()) {  // drained: start over at the front
    k->out.clear();
    k->out_off = 0;
  }
  size_t at = k->out.size();
  k->out.resize(at + len);
  return k->out.data() + at;
}

void flush(Context* c, Conn* k) {
  if (k->dead) return;
  while (k->out_off < k->out.size()) {
    ssize_t n = send(k->fd, k->out.data() + k->out_off, k->out.size() - k->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      k->out_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!k->watching_out) set_watch(c, k, true);
      return;
    }
    conn_failed(c, k);
    return;
  }
  k->out.clear();
  k->out_off = 0;
  if (k->watching_out) set_watch(c, k, false);
}

void progress_now(Context* c) {
  epoll_event evs[64];
  int n = epoll_wait(c->epoll_fd, evs, 64, 0);
  for (int i = 0; i < n; ++i) handle_event(c, evs[i]);
  if (!c->giving_up.empty()) expire_retries(c);
}

bool transport_start(Context* c) {
  c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->epoll_fd < 0 || c->wake_fd < 0) return false;

  static std::atomic<unsigned> context_seq{0};
  c->endpoint_id = std::to_string(c->lid) + "-" + std::to_string(getpid()) + "-" +
                   std::to_string(context_seq.fetch_add(1));
  c->self.unix_path = fabric_dir() + "/ep-" + c->endpoint_id + ".sock";
  c->self.lid = c->lid;
  c->listen_unix = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un ua{};
  ua.sun_family = AF_UNIX;
  snprintf(ua.sun_path, sizeof ua.sun_path, "%s", c->self.unix_path.c_str());
  unlink(ua.sun_path);
  if (c->listen_unix < 0 || bind(c->listen_unix, reinterpret_cast<sockaddr*>(&ua), sizeof ua) != 0 ||
      listen(c->listen_unix, 128) != 0)
    return false;

  // Other hosts (network namespaces) reach this context over TCP on every local address.
  c->listen_tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in ta{};
  ta.sin_family = AF_INET;
  ta.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t tlen = sizeof ta;
  if (c->listen_tcp >= 0 && bind(c->listen_tcp, reinterpret_cast<sockaddr*>(&ta), sizeof ta) == 0 &&
      listen(c->listen_tcp, 128) == 0 &&
      getsockname(c->listen_tcp, reinterpret_cast<sockaddr*>(&ta), &tlen) == 0) {
    c->self.tcp_port = ntohs(ta.sin_port);
    c->self.ipv4 = local_ipv4_addresses();
    watch_fd(c, c->listen_tcp);
  } else {
    if (c->listen_tcp >= 0) close(c->listen_tcp);
    c->listen_tcp = -1;
    if (c->tcp_only) return false;  // its peers would have no way in
  }
  watch_fd(c, c->listen_unix);
  watch_fd(c, c->wake_fd);
  c->progress = std::thread(progress_loop, c);
  return true;
}

void transport_stop(Context* c) {
  {
    std::lock_guard<std::mutex> g(c->lock);
    c->stopping = true;
  }
  if (c->progress.joinable()) {
    uint64_t one = 1;
    if (write(c->wake_fd, &one, sizeof one) < 0) { /* the thread also sees stopping on any event */ }
    c->progress.join();
  }
  for (auto& [fd, k] : c->conns_by_fd) {
    close(fd);
    delete k;
  }
  c->conns_by_fd.clear();
  c->outbound.clear();
  for (Conn* k : c->retired) delete k;
  c->retired.clear();
  if (c->listen_unix >= 0) close(c->listen_unix);
  if (c->listen_tcp >= 0) close(c->listen_tcp);
  if (!c->self.unix_path.empty()) unlink(c->self.unix_path.c_str());
  if (c->epoll_fd >= 0) close(c->epoll_fd);
  if (c->wake_fd >= 0) close(c->wake_fd);
}

}  // namespace softib
