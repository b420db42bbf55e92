// See relay.h. One thread, one epoll loop: the coordinator's connection, the Unix listener and
// each local process's connection. What a process says goes up in the next batch, except the
// answers to a barrier, which wait (hold_seconds at most) for the host's other processes so
// that a barrier costs the coordinator one message each way per host.
#include "relay/relay.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/hmac.h"
#include "coordinator/authentication.h"
#include "coordinator/basics.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/connections.h"
#include "coordinator/log.h"
#include "protocol/relay_batch.h"
#include "protocol/wire.h"

namespace stasis::relay {
namespace {

using coordinator::Clock;
using coordinator::errno_text;
using coordinator::Log;
using coordinator::Secret;

constexpr uint64_t kCoordinatorTag = 0;
constexpr uint64_t kListenerTag = 1;
constexpr uint64_t kFirstLocalId = 2;

// One side of a connection: bytes read and not yet a whole message, bytes waiting to be sent.
struct Link {
  int fd = -1;
  std::vector<uint8_t> in;
  std::string out;
  bool watching_writes = false;
};

// What the relay needs to check a process's image at "commit", as the coordinator would.
struct ImageToCheck {
  std::string path;  // "" = none reported
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};

struct Local {
  Link link;
  bool authenticated = false;
  uint8_t nonce[STASIS_NONCE_BYTES] = {};
  bool commit_aborts = false;  // the last "commit" given to it discards the image
  ImageToCheck image;          // named at "checkpoint" or "commit"; the later answer wins
  bool counted_ask = false;    // given a counted barrier (an ask, StasisMsgHeader::reserved), no answer yet
  uint64_t join = 0;           // its RELAY_JOIN was the relay's join-th (kRelayEntryFirstJoined); 0: not yet
  // It said it has no child (an empty CHILDREN list) in answer to the counted ask it is given:
  // folded into the aggregated answer if its answer goes there, else sent up by name before it.
  bool no_children_held = false;
  uint64_t no_children_arg = 0;
};

class Relay {
 public:
  Relay(const Options& options, const Log& log) : options_(options), log_(log) {}
  // Returns false when another relay already serves this host.
  bool start();
  void run();

 private:
  void accept_locals();
  void on_local_readable(uint64_t id);
  void on_local_message(uint64_t id, Local& local, const StasisMsgHeader& header,
                        const uint8_t* payload);
  void close_local(uint64_t id, bool tell_coordinator);
  // A process's BARRIER_DONE, with its image checked at "commit" (the answer then fails, naming
  // the file and the fault, or goes up flagged STASIS_RELAY_ENTRY_IMAGE_CHECKED).
  void barrier_done_up(uint64_t id, Local& local, const StasisMsgHeader& header,
                       const uint8_t* payload);
  // A process's message into the batch it goes up in (held with a barrier's answers, or now).
  void up(uint64_t id, const StasisMsgHeader& header, const void* payload, uint32_t len,
          uint16_t flags = 0);
  void on_coordinator_readable();
  void on_coordinator_batch(const uint8_t* payload, size_t len);
  // A message of the coordinator's batch for one of this relay's processes.
  void down(uint64_t id, Local& local, const StasisRelayEntry& entry, const uint8_t* data);
  void send_up(protocol::RelayBatch& batch);
  // A process's answer to its counted ask: kept among the agreeing ones (sent up as one
  // aggregated entry once every asked process answered) or sent up by name.
  void answer_up(uint64_t id, Local& local, const StasisMsgHeader& header, const StasisBarrierDone& done,
                 uint16_t flags);
  // The agreeing answers kept so far go up by name, in the held batch (a process left the
  // count, or the hold ran out while some process has not answered).
  void agreeing_up_by_name();
  // Its empty CHILDREN list, held, goes up by name (before its answer, which goes by name too).
  void no_children_up(uint64_t id, Local& local);
  // Sends the held answers up: aggregated when every asked process answered.
  void release_held();
  // Waits for the coordinator's first batch, which names its relay protocol; throws if it is
  // not this relay's.
  void check_coordinator_protocol();
  void queue(Link& link, uint64_t tag, uint16_t type, uint64_t arg, const void* payload,
             uint32_t len, uint32_t reserved = 0);
  bool flush(Link& link, uint64_t tag);
  void watch_writes(Link& link, uint64_t tag, bool on);
  // A process's message goes up with its host's others: held while it or its earlier messages
  // wait there, else in the next batch.
  protocol::RelayBatch& batch_for(uint64_t id) {
    return outstanding_.count(id) || held_ids_.count(id) ? held_ : now_;
  }
  int next_timeout_ms() const;

  const Options& options_;
  const Log& log_;
  Secret secret_;
  coordinator::Fd epoll_;
  coordinator::Fd listener_;
  Link coordinator_;
  bool coordinator_gone_ = false;
  uint64_t next_id_ = kFirstLocalId;
  uint64_t joins_ = 0;  // RELAY_JOINs sent up
  std::unordered_map<uint64_t, Local> locals_;
  protocol::RelayBatch now_;   // goes up at the end of this loop iteration
  protocol::RelayBatch held_;  // answers to a barrier, waiting for the host's other processes
  std::unordered_set<uint64_t> held_ids_;
  std::optional<Clock::time_point> held_since_;
  std::unordered_set<uint64_t> outstanding_;  // processes given a barrier, not answered yet
  // Aggregation of the answers to counted asks: how many asked processes have not answered;
  // the ids whose answers agree (successful, no image, the same bytes) and that answer; the
  // last ask seen (what an aggregated entry covers).
  size_t asked_unanswered_ = 0;
  std::vector<uint64_t> agreeing_ids_;
  StasisMsgHeader agreeing_header_{};
  StasisBarrierDone agreeing_answer_{};
  uint16_t agreeing_flags_ = 0;  // STASIS_RELAY_ENTRY_IMAGE_CHECKED or 0, alike for all
  uint32_t last_ask_ = 0;
};

// Reads whole messages out of link.in into visit(header, payload); returns false (with `fault`)
// for a malformed header.
template <typename Visit>
bool take_messages(Link& link, std::string& fault, Visit&& visit) {
  size_t consumed = 0;
  bool ok = true;
  while (link.in.size() - consumed >= sizeof(StasisMsgHeader)) {
    StasisMsgHeader header;
    memcpy(&header, link.in.data() + consumed, sizeof header);
    if (header.magic != STASIS_PROTOCOL_MAGIC || header.version != STASIS_PROTOCOL_VERSION ||
        header.payload_len > STASIS_MAX_PAYLOAD) {
      fault = "malformed message header";
      ok = false;
      break;
    }
    if (link.in.size() - consumed < sizeof header + header.payload_len) break;
    if (!visit(header, link.in.data() + consumed + sizeof header)) {
      ok = false;
      break;
    }
    consumed += sizeof header + header.payload_len;
  }
  if (ok) link.in.erase(link.in.begin(), link.in.begin() + static_cast<ptrdiff_t>(consumed));
  return ok;
}

// Appends what fd has to link.in: false once the peer closed or failed.
bool read_into(Link& link) {
  uint8_t buffer[65536];
  ssize_t n = read(link.fd, buffer, sizeof buffer);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  link.in.insert(link.in.end(), buffer, buffer + n);
  return true;
}

bool Relay::start() {
  std::string hex = find_secret(options_.coordinator);
  if (hex.size() != 2 * coordinator::kSecretBytes ||
      stasis_hex_decode(hex.c_str(), secret_.bytes, sizeof secret_.bytes) != 0) {
    throw Error(fmt::format("no secret for the coordinator at {} ($STASIS_SECRET or {})",
                            options_.coordinator.str(), secret_path(options_.coordinator)));
  }
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  signal(SIGPIPE, SIG_IGN);

  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0) throw Error(fmt::format("cannot create a Unix socket: {}", errno_text()));
  listener_.reset(listener);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string name = options_.socket.empty() ? socket_name(options_.coordinator) : options_.socket;
  memcpy(address.sun_path + 1, name.data(), std::min(name.size(), sizeof address.sun_path - 2));
  socklen_t address_len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::min(name.size(), sizeof address.sun_path - 2));
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), address_len) != 0) {
    if (errno == EADDRINUSE) {
      log_.line(fmt::format("a relay already serves this host for {}", options_.coordinator.str()));
      return false;
    }
    throw Error(fmt::format("cannot bind the relay's socket @{}: {}", name, errno_text()));
  }
  if (listen(listener, SOMAXCONN) != 0) throw Error(fmt::format("listen: {}", errno_text()));

  int fd = stasis_connect_tcp(options_.coordinator.host.c_str(), options_.coordinator.port);
  if (fd < 0) {
    throw Error(fmt::format("cannot reach the coordinator at {}: {}", options_.coordinator.str(),
                            errno_text()));
  }
  coordinator_.fd = fd;
  char reason[256] = "";
  StasisProcessInfo speaks{};  // a relay names its protocol where a process names its program
  snprintf(speaks.program, sizeof speaks.program, "%s", protocol::kRelayProtocol);
  if (stasis_client_handshake(fd, secret_.bytes, sizeof secret_.bytes, STASIS_ROLE_RELAY, &speaks,
                              nullptr, reason, sizeof reason) != 0) {
    throw Error(fmt::format("the coordinator at {} refused the relay: {}",
                            options_.coordinator.str(), reason));
  }
  check_coordinator_protocol();
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  epoll_event coordinator_event{.events = EPOLLIN, .data = {.u64 = kCoordinatorTag}};
  epoll_event listen_event{.events = EPOLLIN, .data = {.u64 = kListenerTag}};
  if (epoll_.get() < 0 || epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &coordinator_event) != 0 ||
      epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener, &listen_event) != 0) {
    throw Error(fmt::format("cannot set up the event loop: {}", errno_text()));
  }
  log_.line(fmt::format("relay for {} listening on @{} (pid {})", options_.coordinator.str(), name,
                        getpid()));
  return true;
}

void Relay::check_coordinator_protocol() {
  constexpr int kPatienceMs = 10000;
  std::string refusal = fmt::format(
      "the coordinator at {} does not speak {} (an older stasis?): run the same stasis on every host",
      options_.coordinator.str(), protocol::kRelayProtocol);
  pollfd wait{.fd = coordinator_.fd, .events = POLLIN, .revents = 0};
  StasisMsgHeader header;
  if (poll(&wait, 1, kPatienceMs) != 1 ||
      recv(coordinator_.fd, &header, sizeof header, MSG_WAITALL) != static_cast<ssize_t>(sizeof header) ||
      header.magic != STASIS_PROTOCOL_MAGIC || header.type != STASIS_MSG_RELAY_BATCH ||
      header.payload_len > STASIS_MAX_PAYLOAD) {
    throw Error(refusal);
  }
  std::vector<uint8_t> payload(header.payload_len);
  if (recv(coordinator_.fd, payload.data(), payload.size(), MSG_WAITALL) != static_cast<ssize_t>(payload.size()))
    throw Error(refusal);
  bool named = false;
  std::string_view expected(protocol::kRelayProtocol);
  std::string fault = protocol::for_each_relay_entry(
      payload.data(), payload.size(),
      [&](const StasisRelayEntry& entry, const uint8_t* data, const std::vector<uint64_t>&) {
        named = named || (entry.type == STASIS_MSG_RELAY_JOIN &&
                          std::string_view(reinterpret_cast<const char*>(data), entry.payload_len) == expected);
      });
  if (!fault.empty() || !named) throw Error(refusal);
}

void Relay::run() {
  std::vector<epoll_event> events(256);
  while (!coordinator_gone_) {
    int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                       next_timeout_ms());
    if (n < 0 && errno != EINTR) throw Error(fmt::format("epoll_wait: {}", errno_text()));
    for (int i = 0; i < n; i++) {
      uint64_t tag = events[i].data.u64;
      uint32_t what = events[i].events;
      if (tag == kListenerTag) {
        accept_locals();
      } else if (tag == kCoordinatorTag) {
        if (what & EPOLLOUT) flush(coordinator_, kCoordinatorTag);
        if (what & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_coordinator_readable();
      } else if (auto it = locals_.find(tag); it != locals_.end()) {
        if (what & EPOLLOUT) flush(it->second.link, tag);
        if (what & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_local_readable(tag);
      }
    }
    send_up(now_);
    bool held_too_long =
        held_since_ && Clock::now() - *held_since_ >= std::chrono::duration<double>(options_.hold_seconds);
    if ((!held_.empty() || !agreeing_ids_.empty()) && (outstanding_.empty() || held_too_long)) {
      release_held();
    }
  }
  log_.line("the coordinator is gone; the relay ends (its processes lose their connection)");
}

int Relay::next_timeout_ms() const {
  if (!held_since_) return -1;
  auto left = std::chrono::duration<double>(options_.hold_seconds) - (Clock::now() - *held_since_);
  return std::max(0, static_cast<int>(std::chrono::duration<double, std::milli>(left).count()) + 1);
}

void Relay::accept_locals() {
  for (int taken = 0; taken < 64; taken++) {
    int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE)
        log_.limited("out of descriptors", "out of file descriptors: a process waits to join");
      return;
    }
    uint64_t id = next_id_++;
    Local& local = locals_[id];
    local.link.fd = fd;
    epoll_event event{.events = EPOLLIN, .data = {.u64 = id}};
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event);
    StasisHello hello = coordinator::make_hello(local.nonce);
    queue(local.link, id, STASIS_MSG_HELLO, 0, &hello, sizeof hello);
  }
}

void Relay::on_local_readable(uint64_t id) {
  Local& local = locals_.at(id);
  if (!read_into(local.link)) {
    close_local(id, true);
    return;
  }
  std::string fault;
  bool closed = false;
  bool ok = take_messages(local.link, fault, [&](const StasisMsgHeader& header, const uint8_t* payload) {
    on_local_message(id, local, header, payload);
    closed = !locals_.count(id);
    return !closed;
  });
  if (!ok && !closed) {
    log_.limited("malformed", fmt::format("process connection {}: {}; closed", id, fault));
    close_local(id, true);
  }
}

void Relay::on_local_message(uint64_t id, Local& local, const StasisMsgHeader& header,
                             const uint8_t* payload) {
  if (!local.authenticated) {
    StasisAuth auth;
    std::string refusal = "protocol error: expected AUTH";
    if (header.type == STASIS_MSG_AUTH && header.payload_len == sizeof auth) {
      memcpy(&auth, payload, sizeof auth);
      refusal = auth.role == STASIS_ROLE_PROCESS ? coordinator::check_auth(secret_, local.nonce, auth)
                                                 : "only processes join a relay";
    }
    if (!refusal.empty()) {
      log_.limited("refused", fmt::format("refused a local connection: {}", refusal));
      queue(local.link, id, STASIS_MSG_AUTH_FAIL, 0, refusal.data(),
            static_cast<uint32_t>(refusal.size()));
      close_local(id, false);
      return;
    }
    local.authenticated = true;
    local.join = ++joins_;
    StasisAuthOk ok{.client_id = id};
    queue(local.link, id, STASIS_MSG_AUTH_OK, 0, &ok, sizeof ok);
    // Its join's number goes up with it (the entry's arg): "each of yours among the first K".
    now_.add(STASIS_MSG_RELAY_JOIN, local.join, 0, &auth.process, sizeof auth.process, id);
    return;
  }
  if (header.type == STASIS_MSG_RELAY_BATCH || header.type == STASIS_MSG_RELAY_JOIN ||
      header.type == STASIS_MSG_RELAY_LEFT) {
    close_local(id, true);  // a process does not speak for others
    return;
  }
  if (header.type == STASIS_MSG_BARRIER_DONE && header.payload_len == sizeof(StasisBarrierDone)) {
    barrier_done_up(id, local, header, payload);
    return;
  }
  if (header.type == STASIS_MSG_CHILDREN && header.payload_len == 0 && local.counted_ask) {
    local.no_children_held = true;
    local.no_children_arg = header.arg;
    return;
  }
  up(id, header, payload, header.payload_len);
}

void Relay::up(uint64_t id, const StasisMsgHeader& header, const void* payload, uint32_t len,
               uint16_t flags) {
  protocol::RelayBatch& batch = batch_for(id);
  batch.add(header.type, header.arg, header.reserved, payload, len, id, flags);
  if (&batch == &held_) {
    held_ids_.insert(id);
    if (!held_since_) held_since_ = Clock::now();
  }
  if (header.type == STASIS_MSG_BARRIER_DONE) outstanding_.erase(id);
}

void Relay::answer_up(uint64_t id, Local& local, const StasisMsgHeader& header,
                      const StasisBarrierDone& done, uint16_t flags) {
  if (local.counted_ask) {
    local.counted_ask = false;
    asked_unanswered_--;
    // Only answers that say nothing of their own agree: any failure or image goes by name; a
    // commit whose image this relay checked agrees with the others checked alike.
    // At "children", only a process that said it has none (an aggregated "children" answer
    // means: no child, each).
    bool plain = done.status == 0 && (flags & ~STASIS_RELAY_ENTRY_IMAGE_CHECKED) == 0 && done.image_path[0] == '\0' &&
                 (local.no_children_held || strncmp(done.name, "children", sizeof done.name) != 0);
    if (plain && (agreeing_ids_.empty() ||
                  (flags == agreeing_flags_ && memcmp(&done, &agreeing_answer_, sizeof done) == 0))) {
      if (agreeing_ids_.empty()) {
        agreeing_header_ = header;
        agreeing_answer_ = done;
        agreeing_flags_ = flags;
      }
      agreeing_ids_.push_back(id);
      held_ids_.insert(id);  // what it says next waits behind its answer
      if (!held_since_) held_since_ = Clock::now();
      outstanding_.erase(id);
      return;
    }
  }
  no_children_up(id, local);
  up(id, header, &done, sizeof done, flags);
}

void Relay::no_children_up(uint64_t id, Local& local) {
  if (!local.no_children_held) return;
  local.no_children_held = false;
  protocol::RelayBatch& batch = batch_for(id);
  batch.add(STASIS_MSG_CHILDREN, local.no_children_arg, 0, nullptr, 0, id);
  if (&batch == &held_) held_ids_.insert(id);
}

void Relay::agreeing_up_by_name() {
  for (uint64_t id : agreeing_ids_) {
    if (auto it = locals_.find(id); it != locals_.end()) no_children_up(id, it->second);
    held_.add(agreeing_header_.type, agreeing_header_.arg, agreeing_header_.reserved, &agreeing_answer_,
              sizeof agreeing_answer_, id, agreeing_flags_);
  }
  agreeing_ids_.clear();
}

void Relay::release_held() {
  if (!agreeing_ids_.empty()) {
    if (asked_unanswered_ == 0) {
      // Their empty CHILDREN lists are in the count: "all N of mine answered, with no child".
      for (uint64_t id : agreeing_ids_)
        if (auto it = locals_.find(id); it != locals_.end()) it->second.no_children_held = false;
      held_.add_all_of_mine(agreeing_header_.type, agreeing_header_.arg, last_ask_, &agreeing_answer_,
                            sizeof agreeing_answer_, static_cast<uint32_t>(agreeing_ids_.size()),
                            agreeing_flags_);
      agreeing_ids_.clear();
    } else {
      agreeing_up_by_name();
    }
  }
  send_up(held_);
  held_ids_.clear();
  held_since_.reset();
}

void Relay::barrier_done_up(uint64_t id, Local& local, const StasisMsgHeader& header,
                            const uint8_t* payload) {
  StasisBarrierDone done;
  memcpy(&done, payload, sizeof done);
  std::string_view name(done.name, strnlen(done.name, sizeof done.name));
  uint16_t flags = 0;
  if (done.status == 0 && (name == "checkpoint" || name == "commit") && done.image_path[0] != '\0') {
    local.image = ImageToCheck{std::string(done.image_path, strnlen(done.image_path, sizeof done.image_path)),
                               done.image_bytes, done.image_checksum};
  }
  // Relative paths are resolved by the coordinator against its generation directory: left to it.
  if (done.status == 0 && name == "commit" && !local.commit_aborts && local.image.path.starts_with('/')) {
    std::string fault = coordinator::image_fault(local.image.path, local.image.bytes, local.image.checksum);
    if (fault.empty()) {
      flags = STASIS_RELAY_ENTRY_IMAGE_CHECKED;
    } else {
      done.status = EIO;
      snprintf(done.message, sizeof done.message, "its image is not whole: %s", fault.c_str());
    }
  }
  if (name == "commit") local.image = ImageToCheck{};
  answer_up(id, local, header, done, flags);
}

void Relay::close_local(uint64_t id, bool tell_coordinator) {
  auto it = locals_.find(id);
  if (it == locals_.end()) return;
  Link& link = it->second.link;
  if (!link.out.empty()) {  // an AUTH_FAIL, say: one try, never a wait
    ssize_t ignored = ::send(link.fd, link.out.data(), link.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
  }
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, link.fd, nullptr);
  close(link.fd);
  if (it->second.counted_ask) asked_unanswered_--;
  // An agreeing answer kept for it must reach the coordinator before its departure, and not
  // inside a count: the kept answers go up by name, ahead of the RELAY_LEFT.
  if (std::find(agreeing_ids_.begin(), agreeing_ids_.end(), id) != agreeing_ids_.end())
    agreeing_up_by_name();
  if (tell_coordinator && it->second.authenticated) {
    protocol::RelayBatch& batch = batch_for(id);
    batch.add(STASIS_MSG_RELAY_LEFT, 0, 0, nullptr, 0, id);
    if (&batch == &held_) held_ids_.insert(id);
  }
  outstanding_.erase(id);
  locals_.erase(it);
}

void Relay::on_coordinator_readable() {
  if (!read_into(coordinator_)) {
    coordinator_gone_ = true;
    return;
  }
  std::string fault;
  bool ok = take_messages(coordinator_, fault, [&](const StasisMsgHeader& header, const uint8_t* payload) {
    if (header.type == STASIS_MSG_RELAY_BATCH) {
      on_coordinator_batch(payload, header.payload_len);
    } else {
      log_.limited("unexpected", fmt::format("ignoring message type {} from the coordinator", header.type));
    }
    return true;
  });
  if (!ok) {
    log_.line(fmt::format("the coordinator sent a {}; the relay ends", fault));
    coordinator_gone_ = true;
  }
}

void Relay::on_coordinator_batch(const uint8_t* payload, size_t len) {
  std::string fault = protocol::for_each_relay_entry(
      payload, len,
      [&](const StasisRelayEntry& entry, const uint8_t* data, const std::vector<uint64_t>& ids) {
        if (entry.flags & protocol::kRelayEntryFirstJoined) {
          // Each process the coordinator knows of (its join read there) that is still here; the
          // others left, and the coordinator hears of it.
          uint64_t joins = ids.empty() ? 0 : ids.front();
          std::vector<uint64_t> targets;
          targets.reserve(locals_.size());
          for (const auto& [id, local] : locals_)
            if (local.join != 0 && local.join <= joins) targets.push_back(id);
          for (uint64_t id : targets)
            if (auto it = locals_.find(id); it != locals_.end()) down(id, it->second, entry, data);
          return;
        }
        for (uint64_t id : ids) {
          auto it = locals_.find(id);
          if (it == locals_.end()) continue;  // it left; the coordinator hears of it
          if (entry.type == STASIS_MSG_RELAY_LEFT) {
            close_local(id, false);
            continue;
          }
          down(id, it->second, entry, data);
        }
      });
  if (!fault.empty()) {
    log_.line(fmt::format("the coordinator's batch is malformed ({}); the relay ends", fault));
    coordinator_gone_ = true;
  }
}

void Relay::down(uint64_t id, Local& local, const StasisRelayEntry& entry, const uint8_t* data) {
  if (entry.type == STASIS_MSG_BARRIER) {
    outstanding_.insert(id);
    local.no_children_held = false;
    // A counted ask (the coordinator counts its answer): a repeated ask of a process whose
    // answer is still kept cannot be, as the coordinator waits for that answer first.
    if (entry.reserved != 0) {
      if (!local.counted_ask) asked_unanswered_++;
      local.counted_ask = true;
      last_ask_ = std::max(last_ask_, entry.reserved);
    }
    StasisBarrier barrier;
    if (entry.payload_len == sizeof barrier) {
      memcpy(&barrier, data, sizeof barrier);
      if (strncmp(barrier.name, "commit", sizeof barrier.name) == 0) local.commit_aborts = barrier.abort != 0;
      if (strncmp(barrier.name, "checkpoint", sizeof barrier.name) == 0)
        local.image = ImageToCheck{};  // a new checkpoint: nothing named yet
    }
  }
  queue(local.link, id, entry.type, entry.arg, data, entry.payload_len, entry.reserved);
}

void Relay::send_up(protocol::RelayBatch& batch) {
  if (batch.empty()) return;
  for (const std::string& payload : batch.take()) {
    queue(coordinator_, kCoordinatorTag, STASIS_MSG_RELAY_BATCH, 0, payload.data(),
          static_cast<uint32_t>(payload.size()));
  }
}

void Relay::queue(Link& link, uint64_t tag, uint16_t type, uint64_t arg, const void* payload,
                  uint32_t len, uint32_t reserved) {
  coordinator::append_message(link.out, type, arg, payload, len, reserved);
  if (!flush(link, tag) && tag == kCoordinatorTag) coordinator_gone_ = true;
}

// Sends what it can without blocking; false when the connection failed (its reader then finds
// it closed).
bool Relay::flush(Link& link, uint64_t tag) {
  if (!coordinator::send_without_blocking(link.fd, link.out)) return false;
  watch_writes(link, tag, !link.out.empty());
  return true;
}

void Relay::watch_writes(Link& link, uint64_t tag, bool on) {
  if (link.watching_writes == on) return;
  epoll_event event{.events = EPOLLIN | (on ? EPOLLOUT : 0u), .data = {.u64 = tag}};
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, link.fd, &event);
  link.watching_writes = on;
}

}  // namespace

std::string socket_name(const CoordAddress& coordinator) {
  return fmt::format("stasis-relay-{}-{}-{}", getuid(), coordinator.host, coordinator.port);
}

int run_relay(const Options& options) {
  coordinator::Fd log_fd(-1);
  if (!options.log_file.empty()) {
    log_fd.reset(open(options.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (log_fd.get() < 0)
      throw Error(fmt::format("cannot open {}: {}", options.log_file, errno_text()));
  }
  Log log(log_fd.get() >= 0 ? log_fd.get() : STDERR_FILENO);
  Relay relay(options, log);
  if (!relay.start()) return 0;
  relay.run();
  return 0;
}

}  // namespace stasis::relay
