// The coordinator's connections: accepting them, reading framed messages (protocol/protocol.h)
// as they arrive and writing them without ever blocking, and closing them. One epoll loop (the
// daemon's, coordinator.cc) serves them all; nothing waits on a single client.
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/basics.h"
#include "coordinator/log.h"
#include "protocol/protocol.h"
#include "protocol/relay_batch.h"

namespace stasis::coordinator {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// Appends one framed message (header, then payload) to `out`.
void append_message(std::string& out, uint16_t type, uint64_t arg, const void* payload,
                    uint32_t len, uint32_t reserved = 0);
// Sends what it can of `out` on a non-blocking socket and removes what left; false when the
// connection failed (`out` is cleared then, errno says why).
bool send_without_blocking(int fd, std::string& out);

enum class Role { Handshake, Process, Command, Relay };

struct Client {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;          // ADDR:PORT, for the log
  std::string peer_address;  // ADDR: unauthenticated connections are bounded per address
  Role role = Role::Handshake;
  bool counted_handshake = false;  // counts against the bounds on unauthenticated connections
  uint8_t nonce[STASIS_NONCE_BYTES] = {};
  std::vector<uint8_t> in;
  std::string out;
  bool watching_writes = false;
  bool dead = false;     // closed at the end of this loop iteration
  bool refused = false;  // closes once AUTH_FAIL is sent; never was a process
  std::string dead_reason;
  // Processes only.
  StasisProcessInfo info{};
  bool in_computation = false;  // takes part in checkpoints (restarted: after "restart")
  std::string state;
  // The barrier rounds (RunningOp::round) it was last asked and last answered by name.
  uint64_t asked_round = 0;
  uint64_t answered_round = 0;
  uint32_t asked_ask = 0;  // CheckpointMachine::next_ask
  // A process that joined through a host relay has no descriptor (fd -1): what is sent to it
  // goes into its relay's batch, under the relay's id for it.
  uint64_t relay = 0;
  uint64_t relay_local = 0;
  uint64_t relay_join = 0;  // its relay's number for its join (kRelayEntryFirstJoined)
  bool relay_knows_gone = false;  // the relay reported it left: nothing to tell it
  // Relays only: their processes (relay's id -> client id) and what waits to go down to them.
  std::unordered_map<uint64_t, uint64_t> relayed;
  protocol::RelayBatch batch;
  // Its processes' state after the round they answered together (kRelayEntryAllOfMine).
  uint64_t all_answered_round = 0;
  uint32_t all_answered_up_to = 0;
  std::string all_answered_state;

  std::string describe() const {
    return fmt::format("pid {} ({})", info.pid, bounded(info.program, sizeof info.program));
  }
  bool is_live_process() const { return role == Role::Process && !dead; }
};

// What the connections report to the rest of the coordinator.
class ConnectionEvents {
 public:
  virtual ~ConnectionEvents() = default;
  // A whole message; a connection still in its handshake sends only a well-formed AUTH.
  virtual void on_message(Client& client, const StasisMsgHeader& header,
                          const uint8_t* payload) = 0;
  // The connection is being closed (its Client is gone after this returns).
  virtual void on_closed(Client& client) = 0;
};

class Connections {
 public:
  // epoll_fd: the daemon's loop; each client is registered there with its id as the tag.
  Connections(const Log& log, ConnectionEvents& events, int epoll_fd, double handshake_timeout);

  // Listens on a numeric IPv4 or IPv6 address (port 0: any free one) and returns the fd to
  // watch; *bound_port is the port it got. Throws stasis::Error.
  int listen_on(const std::string& host, uint16_t port, uint16_t* bound_port);
  // Bounds connections that have not authenticated, in all and from one address, with a
  // descriptor limit of `descriptors`: a stranger can neither take every descriptor nor keep
  // the others out (the oldest unauthenticated connection makes room for a new one).
  void limit_handshakes(uint64_t descriptors);
  // The listener is readable: takes the waiting connections (a batch: the loop stays
  // responsive under a flood) and greets each with HELLO.
  void accept_clients();
  // The handshake succeeded: the connection is a process's or a command's.
  void authenticated(Client& client, Role role);
  // epoll reported `events` for the client tagged `id`.
  void on_ready(uint64_t id, uint32_t events);

  void send(Client& client, uint16_t type, uint64_t arg, const void* payload, uint32_t len,
            uint32_t reserved = 0);
  // A COMMAND_REPLY to a command connection, if it is still there.
  void reply(uint64_t command_client, bool ok, const std::string& text);
  // Closes the connection at the end of this loop iteration (reap()).
  void drop(Client& client, const std::string& reason);
  // Sends AUTH_FAIL with the reason, then closes.
  void refuse(Client& client, const std::string& reason);
  // Closes the connections dropped since the last call.
  void reap();
  // Refuses the connections that did not authenticate in time.
  void expire_handshakes(Clock::time_point now);
  // A process that joined through `relay` under the relay's id `local`, its `join`-th.
  Client& add_relayed(Client& relay, uint64_t local, uint64_t join);
  // One message for each of the relay's processes among its first `joins` (a barrier to a
  // host's processes: protocol/relay_batch.h's kRelayEntryFirstJoined), in its next batch.
  void send_to_first_joined(Client& relay, uint64_t joins, uint16_t type, uint64_t arg, const void* payload,
                            uint32_t len, uint32_t reserved);
  // Sends each relay what was queued for its processes since the last call: one RELAY_BATCH
  // (or a few, for a large one) per relay and loop iteration, however many processes.
  void flush_relay_batches();
  // Queues a message for the relay itself (id 0 in its batch), sent with its processes' ones.
  void queue_for_relay(Client& relay, uint16_t type, const void* payload, uint32_t len);
  // Messages that crossed a socket (a relay's batch counts once): for the checkpoint's figures.
  uint64_t wire_messages() const { return wire_messages_; }
  // Gives queued replies (a kill's answer, say) a last chance to leave, and closes everything.
  void close_all();

  Client* find(uint64_t id);
  Client& at(uint64_t id) { return clients_.at(id); }
  const Client& at(uint64_t id) const { return clients_.at(id); }
  const std::unordered_map<uint64_t, Client>& all() const { return clients_; }
  std::unordered_map<uint64_t, Client>& all() { return clients_; }
  bool closing_any() const { return !dead_.empty(); }
  const Clock::time_point* next_handshake_deadline() const {
    return handshake_deadlines_.empty() ? nullptr : &handshake_deadlines_.front().first;
  }

 private:
  void add_client(int fd, const sockaddr_storage& address);
  // Makes room for one more unauthenticated connection from `address`.
  void evict_for(const std::string& address);
  void close_now(uint64_t id, const std::string& reason);
  // A relayed process is being closed: its relay forgets it (and is told, unless it said so).
  void forget_relayed(Client& client);
  void handshake_over(Client& client);
  void on_readable(Client& client);
  void flush(Client& client);
  void watch_writes(Client& client, bool on);

  const Log& log_;
  ConnectionEvents& events_;
  int epoll_;
  double handshake_timeout_;
  Fd listener_;
  Fd spare_fd_;  // given up to accept-and-close when out of descriptors
  uint64_t next_client_id_ = 1;
  std::unordered_map<uint64_t, Client> clients_;
  std::deque<std::pair<Clock::time_point, uint64_t>> handshake_deadlines_;  // in order
  size_t handshakes_ = 0;  // unauthenticated connections open
  std::unordered_map<std::string, size_t> handshakes_by_address_;
  size_t max_handshakes_ = 512;
  size_t max_handshakes_per_address_ = 256;
  std::vector<uint64_t> dead_;
  std::vector<uint64_t> relays_with_batches_;
  uint64_t wire_messages_ = 0;
};

}  // namespace stasis::coordinator
