// See connections.h.
#include "coordinator/connections.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "common/error.h"
#include "coordinator/authentication.h"
#include "coordinator/coord_address.h"

namespace stasis::coordinator {
namespace {

std::string peer_address(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text, sizeof text);
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, text,
              sizeof text);
  }
  return text;
}

std::string peer_name(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return fmt::format("{}:{}", peer_address(address),
                       ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port));
  }
  return fmt::format("[{}]:{}", peer_address(address),
                     ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port));
}

// Connections taken per wakeup of the listener: the rest wait for the next loop iteration.
constexpr int kAcceptBatch = 64;

}  // namespace

void append_message(std::string& out, uint16_t type, uint64_t arg, const void* payload,
                    uint32_t len, uint32_t reserved) {
  StasisMsgHeader header{};
  header.magic = STASIS_PROTOCOL_MAGIC;
  header.version = STASIS_PROTOCOL_VERSION;
  header.type = type;
  header.payload_len = len;
  header.reserved = reserved;
  header.arg = arg;
  out.append(reinterpret_cast<const char*>(&header), sizeof header);
  if (len > 0) out.append(static_cast<const char*>(payload), len);
}

bool send_without_blocking(int fd, std::string& out) {
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      out.clear();
      return false;
    }
  }
  out.erase(0, sent);
  return true;
}

Connections::Connections(const Log& log, ConnectionEvents& events, int epoll_fd,
                         double handshake_timeout)
    : log_(log), events_(events), epoll_(epoll_fd), handshake_timeout_(handshake_timeout) {
  spare_fd_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
}

int Connections::listen_on(const std::string& host, uint16_t port, uint16_t* bound_port) {
  sockaddr_storage address{};
  socklen_t address_len;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    address_len = sizeof *v4;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    address_len = sizeof *v6;
  } else {
    throw Error(fmt::format("--host must be a numeric IPv4 or IPv6 address, not '{}'", host));
  }
  int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(fmt::format("cannot create a socket: {}", errno_text()));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), address_len) != 0) {
    std::string why = errno == EADDRINUSE
                          ? "the port is in use (another coordinator? pick another --port)"
                          : errno_text();
    close(fd);
    throw Error(fmt::format("cannot listen on {}: {}", CoordAddress{host, port}.str(), why));
  }
  if (listen(fd, SOMAXCONN) != 0) {
    close(fd);
    throw Error(fmt::format("cannot listen: {}", errno_text()));
  }
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &address_len) != 0) {
    close(fd);
    throw Error(fmt::format("cannot read the listening address: {}", errno_text()));
  }
  *bound_port = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  listener_.reset(fd);
  return fd;
}

void Connections::limit_handshakes(uint64_t descriptors) {
  // Half the descriptors at most; the other half stay for processes, commands and files.
  max_handshakes_ = static_cast<size_t>(std::clamp<uint64_t>(descriptors / 2, 16, 16384));
  max_handshakes_per_address_ = std::max<size_t>(8, max_handshakes_ / 2);
}

void Connections::accept_clients() {
  for (int taken = 0; taken < kAcceptBatch; taken++) {
    sockaddr_storage address{};
    socklen_t address_len = sizeof address;
    int fd = accept4(listener_.get(), reinterpret_cast<sockaddr*>(&address), &address_len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      add_client(fd, address);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EMFILE && errno != ENFILE) return;  // EAGAIN, or reported again next time
    // Out of descriptors (accept4 says so before it looks at the queue): accept and close with
    // the spare descriptor, or the listener stays readable forever; once the queue is empty
    // there is nothing more to do here.
    spare_fd_.reset(-1);
    int doomed = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    int accept_errno = errno;
    if (doomed >= 0) close(doomed);
    spare_fd_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (doomed < 0 && accept_errno != EINTR && accept_errno != ECONNABORTED) return;
    if (doomed >= 0)
      log_.limited("out of descriptors", "out of file descriptors: refused a connection");
  }
}

void Connections::evict_for(const std::string& address) {
  bool per_address = handshakes_by_address_[address] >= max_handshakes_per_address_;
  if (!per_address && handshakes_ < max_handshakes_) return;
  for (const auto& [deadline, id] : handshake_deadlines_) {
    Client* oldest = find(id);
    if (oldest == nullptr || !oldest->counted_handshake ||
        (per_address && oldest->peer_address != address))
      continue;
    log_.limited("unauthenticated",
                 fmt::format("closed the unauthenticated connection from {} to make room: {} "
                             "connections wait for authentication ({} from {}; at most {}, {} "
                             "from one address)",
                             oldest->peer, handshakes_, handshakes_by_address_[address], address,
                             max_handshakes_, max_handshakes_per_address_));
    close_now(id, "too many unauthenticated connections");
    return;
  }
}

// Only for a connection no handler is looking at (accepting): others go through drop().
void Connections::close_now(uint64_t id, const std::string& reason) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  Client& client = it->second;
  handshake_over(client);
  if (!client.dead) {
    client.dead = true;
    client.dead_reason = reason;
  } else {
    std::erase(dead_, id);
  }
  epoll_ctl(epoll_, EPOLL_CTL_DEL, client.fd, nullptr);
  close(client.fd);
  events_.on_closed(client);
  clients_.erase(it);
}

void Connections::handshake_over(Client& client) {
  if (!client.counted_handshake) return;
  client.counted_handshake = false;
  handshakes_--;
  auto it = handshakes_by_address_.find(client.peer_address);
  if (it != handshakes_by_address_.end() && --it->second == 0) handshakes_by_address_.erase(it);
}

void Connections::authenticated(Client& client, Role role) {
  handshake_over(client);
  client.role = role;
}

void Connections::add_client(int fd, const sockaddr_storage& address) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string from = peer_address(address);
  evict_for(from);
  uint64_t id = next_client_id_++;
  Client& client = clients_[id];
  client.id = id;
  client.fd = fd;
  client.peer = peer_name(address);
  client.peer_address = from;
  client.counted_handshake = true;
  handshakes_++;
  handshakes_by_address_[from]++;
  epoll_event event{.events = EPOLLIN, .data = {.u64 = id}};
  if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0) {
    drop(client, fmt::format("epoll_ctl: {}", errno_text()));
    return;
  }
  StasisHello hello = make_hello(client.nonce);
  send(client, STASIS_MSG_HELLO, 0, &hello, sizeof hello);
  handshake_deadlines_.emplace_back(after_seconds(handshake_timeout_), id);
}

void Connections::on_ready(uint64_t id, uint32_t events) {
  Client* client = find(id);
  if (client == nullptr || client->dead) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(*client);
  if (!client->dead && (events & EPOLLOUT)) flush(*client);
}

void Connections::on_readable(Client& client) {
  uint8_t buffer[65536];
  ssize_t n = read(client.fd, buffer, sizeof buffer);
  if (n == 0) {
    // A silent connect-and-close is someone checking that we listen: not worth a log line. A
    // process joins from its checkpoint thread, which an exec or exit may end mid-handshake.
    if (client.role == Role::Handshake && !client.in.empty()) {
      log_.limited(
          "closed during the handshake",
          fmt::format("connection from {} closed during the handshake (a process that "
                      "exec'd or ended as it joined, or not one of ours)",
                      client.peer));
    }
    drop(client, "");
    return;
  }
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) drop(client, errno_text());
    return;
  }
  client.in.insert(client.in.end(), buffer, buffer + n);

  size_t consumed = 0;
  while (!client.dead && !client.refused) {
    size_t available = client.in.size() - consumed;
    if (available < sizeof(StasisMsgHeader)) break;
    StasisMsgHeader header;
    memcpy(&header, client.in.data() + consumed, sizeof header);
    if (header.magic != STASIS_PROTOCOL_MAGIC || header.version != STASIS_PROTOCOL_VERSION ||
        header.payload_len > STASIS_MAX_PAYLOAD) {
      if (client.role == Role::Handshake) {
        refuse(client, "not speaking the stasis protocol");
      } else {
        drop(client, "protocol error: malformed message header");
      }
      break;
    }
    // Judge a handshake by its header alone: no buffering a megabyte for a stranger.
    if (client.role == Role::Handshake &&
        (header.type != STASIS_MSG_AUTH || header.payload_len != sizeof(StasisAuth))) {
      refuse(client, "protocol error: expected AUTH");
      break;
    }
    if (available < sizeof header + header.payload_len) break;
    wire_messages_++;
    events_.on_message(client, header, client.in.data() + consumed + sizeof header);
    consumed += sizeof header + header.payload_len;
  }
  client.in.erase(client.in.begin(), client.in.begin() + static_cast<ptrdiff_t>(consumed));
}

void Connections::send(Client& client, uint16_t type, uint64_t arg, const void* payload,
                       uint32_t len, uint32_t reserved) {
  if (client.dead) return;
  if (client.relay != 0) {
    Client* relay = find(client.relay);
    if (relay == nullptr || relay->dead) return;
    if (relay->batch.empty()) relays_with_batches_.push_back(relay->id);
    relay->batch.add(type, arg, reserved, payload, len, client.relay_local);
    return;
  }
  wire_messages_++;
  append_message(client.out, type, arg, payload, len, reserved);
  flush(client);
}

Client& Connections::add_relayed(Client& relay, uint64_t local, uint64_t join) {
  uint64_t id = next_client_id_++;
  Client& client = clients_[id];
  client.id = id;
  client.peer = fmt::format("{} (relay)", relay.peer);
  client.peer_address = relay.peer_address;
  client.relay = relay.id;
  client.relay_local = local;
  client.relay_join = join;
  relay.relayed[local] = id;
  return client;
}

void Connections::send_to_first_joined(Client& relay, uint64_t joins, uint16_t type, uint64_t arg,
                                       const void* payload, uint32_t len, uint32_t reserved) {
  if (relay.dead) return;
  if (relay.batch.empty()) relays_with_batches_.push_back(relay.id);
  relay.batch.add_first_joined(type, arg, reserved, payload, len, joins);
}

void Connections::queue_for_relay(Client& relay, uint16_t type, const void* payload, uint32_t len) {
  if (relay.batch.empty()) relays_with_batches_.push_back(relay.id);
  relay.batch.add(type, 0, 0, payload, len, 0);
}

void Connections::flush_relay_batches() {
  for (uint64_t id : relays_with_batches_) {
    Client* relay = find(id);
    if (relay == nullptr || relay->dead) continue;
    for (const std::string& payload : relay->batch.take()) {
      send(*relay, STASIS_MSG_RELAY_BATCH, 0, payload.data(), static_cast<uint32_t>(payload.size()));
    }
  }
  relays_with_batches_.clear();
}

void Connections::flush(Client& client) {
  if (!send_without_blocking(client.fd, client.out)) {
    drop(client, client.refused ? "refused" : errno_text());
    return;
  }
  watch_writes(client, !client.out.empty());
  if (client.out.empty() && client.refused && !client.dead) drop(client, "refused");
}

void Connections::watch_writes(Client& client, bool on) {
  if (client.watching_writes == on) return;
  epoll_event event{.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data = {.u64 = client.id}};
  epoll_ctl(epoll_, EPOLL_CTL_MOD, client.fd, &event);
  client.watching_writes = on;
}

// Closing is deferred to reap() so that no handler sees a client vanish under it.
void Connections::drop(Client& client, const std::string& reason) {
  if (client.dead) return;
  handshake_over(client);
  client.dead = true;
  client.dead_reason = reason;
  dead_.push_back(client.id);
}

void Connections::refuse(Client& client, const std::string& reason) {
  if (client.refused || client.dead) return;
  log_.limited("refused connection",
               fmt::format("refused connection from {}: {}", client.peer, reason));
  client.refused = true;
  send(client, STASIS_MSG_AUTH_FAIL, 0, reason.data(), static_cast<uint32_t>(reason.size()));
  if (client.out.empty() && !client.dead) drop(client, "refused");
}

void Connections::reap() {
  while (!dead_.empty()) {
    uint64_t id = dead_.back();
    dead_.pop_back();
    auto it = clients_.find(id);
    if (it == clients_.end()) continue;
    Client& client = it->second;
    if (client.relay != 0) {
      forget_relayed(client);
    } else if (client.fd >= 0) {
      epoll_ctl(epoll_, EPOLL_CTL_DEL, client.fd, nullptr);
      close(client.fd);
      client.fd = -1;
    }
    // A relay's processes go with it: each is reported closed, then the relay.
    if (!client.relayed.empty()) {
      for (const auto& [local, process] : client.relayed) {
        if (Client* gone = find(process); gone != nullptr) {
          gone->relay_knows_gone = true;
          drop(*gone, "its host relay is gone");
        }
      }
      client.relayed.clear();
      dead_.insert(dead_.begin(), id);
      continue;
    }
    events_.on_closed(client);
    clients_.erase(it);
  }
}

void Connections::forget_relayed(Client& client) {
  Client* relay = find(client.relay);
  if (relay == nullptr) return;
  relay->relayed.erase(client.relay_local);
  // The relay closes the process's connection when the coordinator drops it.
  if (!client.relay_knows_gone && !relay->dead) {
    if (relay->batch.empty()) relays_with_batches_.push_back(relay->id);
    relay->batch.add(STASIS_MSG_RELAY_LEFT, 0, 0, nullptr, 0, client.relay_local);
  }
}

void Connections::reply(uint64_t command_client, bool ok, const std::string& text) {
  Client* client = find(command_client);
  if (client == nullptr || client->dead) return;
  send(*client, STASIS_MSG_COMMAND_REPLY, ok ? 0 : 1, text.data(),
       static_cast<uint32_t>(text.size()));
}

void Connections::expire_handshakes(Clock::time_point now) {
  while (!handshake_deadlines_.empty() && handshake_deadlines_.front().first <= now) {
    Client* client = find(handshake_deadlines_.front().second);
    handshake_deadlines_.pop_front();
    if (client == nullptr || client->role != Role::Handshake) continue;
    if (!client->refused)
      refuse(*client, fmt::format("no authentication within {} s", handshake_timeout_));
    // A peer that does not read its AUTH_FAIL does not keep the descriptor either.
    drop(*client, "no authentication in time");
  }
}

Client* Connections::find(uint64_t id) {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : &it->second;
}

void Connections::close_all() {
  for (auto& [id, client] : clients_) {
    if (client.out.empty() || client.fd < 0) continue;
    int flags = fcntl(client.fd, F_GETFL);
    fcntl(client.fd, F_SETFL, flags & ~O_NONBLOCK);
    timeval timeout{.tv_sec = 1, .tv_usec = 0};
    setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    ssize_t ignored = ::send(client.fd, client.out.data(), client.out.size(), MSG_NOSIGNAL);
    (void)ignored;
  }
  for (auto& [id, client] : clients_)
    if (client.fd >= 0) close(client.fd);
  clients_.clear();
}

}  // namespace stasis::coordinator
