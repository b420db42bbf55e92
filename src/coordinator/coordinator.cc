// The coordinator's daemon: the event loop (connections, stop signals, deadlines, the interval
// timer), what each message leads to, `--daemon` and `--exit-when-idle`. The parts it drives:
// connections.h (framed messages), authentication.h (the handshake), name_service.h,
// checkpoint_machine.h (the barriers), checkpoint_store.h (the directory of generations).
#include "coordinator/coordinator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/error.h"
#include "coordinator/authentication.h"
#include "coordinator/basics.h"
#include "coordinator/checkpoint_machine.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/command_environment.h"
#include "coordinator/connections.h"
#include "coordinator/coord_address.h"
#include "coordinator/log.h"
#include "coordinator/name_service.h"
#include "image/compression.h"
#include "protocol/compression.h"

namespace stasis::coordinator {
namespace {

using nlohmann::json;

constexpr uint64_t kListenerTag = 0;  // epoll tags: client ids start at 1
constexpr uint64_t kSignalTag = UINT64_MAX;

// Thousands of processes need thousands of descriptors. Returns the limit now in force.
uint64_t raise_descriptor_limit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

class Coordinator : public ConnectionEvents {
 public:
  Coordinator(Options options, const Log& log)
      : options_(std::move(options)),
        log_(log),
        epoll_(epoll_create1(EPOLL_CLOEXEC)),
        connections_(log_, *this, epoll_.get(), options_.handshake_timeout),
        machine_(options_, connections_, log_) {}

  // Listens, writes the secret and the port file. Throws stasis::Error.
  void start();
  // The event loop; returns the exit status.
  int run();

 private:
  void on_message(Client& client, const StasisMsgHeader& header, const uint8_t* payload) override;
  void on_closed(Client& client) override;
  void handle_auth(Client& client, const StasisMsgHeader& header, const uint8_t* payload);
  // A process is in (directly, or through a relay): who it says it is.
  void accept_process(Client& client, const StasisProcessInfo& info);
  void process_joined(Client& client);
  // A host relay's batch: its processes' joins, departures and messages, in order.
  void handle_relay_batch(Client& relay, const StasisMsgHeader& header, const uint8_t* payload);
  void handle_command(Client& client, const StasisCommand& command);
  void reply(uint64_t command_client, bool ok, const json& body) {
    connections_.reply(command_client, ok, body.dump());
  }
  void check_deadlines();
  int next_timeout_ms() const;
  bool idle_after_work() const;
  json status_json() const;

  static constexpr std::chrono::milliseconds kIdleGrace{1000};  // --exit-when-idle waits this long
  // How long a launch's announced program may take to join (STASIS_CMD_EXPECT_LAUNCH).
  static constexpr std::chrono::seconds kLaunchPatience{30};
  // A process of this machine's pid space that left while its pid lives on is exec'ing (or
  // about to end): --exit-when-idle waits for it this long at most. Under load the new program
  // can take seconds to load its libraries and join (a QEMU exec'd by a launched shell did).
  static constexpr std::chrono::seconds kExecPatience{30};
  // Forgets the departed processes whose pid has ended (gone or a zombie) or whose patience ran
  // out; true while one is left.
  bool departed_pids_live();

  Options options_;
  const Log& log_;
  Secret secret_;
  std::optional<SecretFile> secret_file_;
  Fd epoll_;
  Fd signals_;
  uint16_t port_ = 0;
  Connections connections_;
  NameService names_;
  CheckpointMachine machine_;
  size_t process_count_ = 0;
  bool seen_process_ = false;
  bool stop_ = false;
  std::optional<Clock::time_point> idle_since_;
  std::string own_pid_space_;  // "BOOT_ID/PID_NAMESPACE_INODE", as processes say theirs
  std::vector<std::pair<pid_t, Clock::time_point>> departed_pids_;
  std::optional<Clock::time_point> restart_expected_until_;
  std::optional<Clock::time_point> launch_expected_until_;  // a launch announced its program
  std::map<uint64_t, std::vector<uint64_t>> restart_groups_;  // generation -> waiting processes
  std::optional<Clock::time_point> next_interval_;
};

void Coordinator::start() {
  connections_.limit_handshakes(raise_descriptor_limit());
  signal(SIGPIPE, SIG_IGN);
  // This machine's pid space, written as processes write theirs (runtime.cc): a departed
  // process of it can be looked for under /proc.
  if (FILE* boot = fopen("/proc/sys/kernel/random/boot_id", "re")) {
    char id[64] = {};
    struct stat pid_namespace;
    if (fgets(id, sizeof id, boot) && stat("/proc/self/ns/pid", &pid_namespace) == 0) {
      id[strcspn(id, "\n")] = 0;
      own_pid_space_ = fmt::format("{}/{}", id, pid_namespace.st_ino);
    }
    fclose(boot);
  }

  secret_ = load_or_make_secret();

  std::string compress = options_.compress;
  if (compress.empty()) compress = CommandEnvironment::read().compress;
  StasisCompressionSetting compression;
  if (!protocol::compression_from_name(compress, &compression)) {
    throw Error(
        fmt::format("compression must be {}, not '{}'", image::kCompressionChoices, compress));
  }

  make_private_dirs(options_.ckpt_dir);
  // A checkpoint of tens of thousands of processes allocates and frees tens of megabytes (batches,
  // the images' table, MANIFEST.json's text): kept for the next one rather than handed back to
  // the kernel and faulted in again page by page (page faults were a tenth of its time in a
  // profile of checkpoints of 32,768 processes).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  int listener = connections_.listen_on(options_.host, options_.port, &port_);
  machine_.start(compression, port_);
  secret_file_.emplace(secret_path(CoordAddress{options_.host, port_}), secret_);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  signals_.reset(signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC));
  if (signals_.get() < 0 || epoll_.get() < 0) {
    throw Error(fmt::format("cannot set up the event loop: {}", errno_text()));
  }
  epoll_event listen_event{.events = EPOLLIN, .data = {.u64 = kListenerTag}};
  epoll_event signal_event{.events = EPOLLIN, .data = {.u64 = kSignalTag}};
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener, &listen_event);
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signals_.get(), &signal_event);

  if (!options_.port_file.empty()) {
    write_file_durably(options_.port_file, fmt::format("{}\n", port_));
  }
  if (options_.interval > 0) next_interval_ = after_seconds(options_.interval);
  log_.line(fmt::format("coordinator {} listening on {} (pid {}), checkpoints in {}",
                        STASIS_VERSION, CoordAddress{options_.host, port_}.str(), getpid(),
                        options_.ckpt_dir));
}

int Coordinator::run() {
  std::vector<epoll_event> events(256);
  while (!stop_) {
    int n =
        epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), next_timeout_ms());
    if (n < 0 && errno != EINTR) throw Error(fmt::format("epoll_wait: {}", errno_text()));
    for (int i = 0; i < n; i++) {
      uint64_t tag = events[i].data.u64;
      if (tag == kListenerTag) {
        connections_.accept_clients();
      } else if (tag == kSignalTag) {
        signalfd_siginfo info;
        if (read(signals_.get(), &info, sizeof info) == sizeof info) {
          log_.line(fmt::format("received SIG{}, exiting", sigabbrev_np(info.ssi_signo)));
          stop_ = true;
        }
      } else {
        connections_.on_ready(tag, events[i].events);
      }
    }
    check_deadlines();
    connections_.reap();
    connections_.flush_relay_batches();
    // Idle for a moment, not an instant: a process that execs leaves and joins again, and the
    // program it becomes joins from its own thread a little later.
    const bool idle = options_.exit_when_idle && idle_after_work() && !departed_pids_live();
    if (!idle) idle_since_.reset();
    if (idle) {
      if (!idle_since_) idle_since_ = Clock::now();
      if (Clock::now() - *idle_since_ >= kIdleGrace) {
        log_.line("every process has left; exiting");
        break;
      }
    }
  }
  // Replies already queued (a kill's answer, say) deserve a last chance to leave.
  connections_.flush_relay_batches();
  connections_.close_all();
  return 0;
}

void Coordinator::on_message(Client& client, const StasisMsgHeader& header,
                             const uint8_t* payload) {
  if (client.role == Role::Handshake) {
    handle_auth(client, header, payload);
    return;
  }
  switch (header.type) {
    case STASIS_MSG_RELAY_BATCH:
      if (client.role != Role::Relay) {
        connections_.drop(client, "protocol error: RELAY_BATCH from a connection that is no relay");
        return;
      }
      handle_relay_batch(client, header, payload);
      return;
    case STASIS_MSG_BARRIER_DONE: {
      StasisBarrierDone done;
      if (client.role != Role::Process || header.payload_len != sizeof done) {
        connections_.drop(client, "protocol error: malformed BARRIER_DONE");
        return;
      }
      memcpy(&done, payload, sizeof done);
      machine_.barrier_done(client, done);
      return;
    }
    case STASIS_MSG_CHILDREN:
      if (client.role == Role::Process && header.payload_len % sizeof(uint32_t) == 0) {
        std::vector<uint32_t> children(header.payload_len / sizeof(uint32_t));
        memcpy(children.data(), payload, header.payload_len);
        machine_.children_reported(client, children.data(), children.size());
      }
      return;
    case STASIS_MSG_LOG:
      if (client.role == Role::Process && header.payload_len <= STASIS_MESSAGE_MAX * 4) {
        std::string text(reinterpret_cast<const char*>(payload), header.payload_len);
        for (char& c : text)
          if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line, whatever it holds
        log_.line(fmt::format("{}: {}", client.describe(), text));
        machine_.note(client, text);
      }
      return;
    case STASIS_MSG_REQUEST_CHECKPOINT:
      // A checkpoint already under way that includes this process satisfies the request.
      if (machine_.checkpointing(client.id)) return;
      log_.line(fmt::format("checkpoint requested by {}", client.describe()));
      machine_.enqueue(Operation{.kind = OpKind::Checkpoint});
      return;
    case STASIS_MSG_COMMAND: {
      StasisCommand command;
      if (client.role != Role::Command || header.payload_len != sizeof command) {
        connections_.drop(client, "protocol error: malformed COMMAND");
        return;
      }
      memcpy(&command, payload, sizeof command);
      handle_command(client, command);
      return;
    }
    default:
      if (NameService::is_request(header.type)) {
        for (const NameService::Reply& answer :
             names_.handle(client.id, client.role == Role::Process, header, payload)) {
          if (Client* to = connections_.find(answer.client); to != nullptr && !to->dead) {
            connections_.send(*to, STASIS_MSG_NS_REPLY, answer.arg, answer.payload.data(),
                              static_cast<uint32_t>(answer.payload.size()), answer.status);
          }
        }
        return;
      }
      log_.line(fmt::format("ignoring message type {} from {}", header.type, client.peer));
  }
}

void Coordinator::on_closed(Client& client) {
  names_.forget(client.id);
  if (client.role == Role::Process) {
    process_count_--;
    log_.line(fmt::format("process left: {}{}", client.describe(),
                          client.dead_reason.empty() ? "" : ": " + client.dead_reason));
    // Pruned at each departure, so the list holds only processes between exec and join, however
    // many a busy computation starts and ends.
    if (options_.exit_when_idle && !own_pid_space_.empty() &&
        own_pid_space_ == std::string(client.info.pid_space, strnlen(client.info.pid_space, sizeof client.info.pid_space))) {
      departed_pids_live();
      departed_pids_.emplace_back(static_cast<pid_t>(client.info.pid), Clock::now());
    }
    if (client.info.restarted) {
      auto group = restart_groups_.find(client.info.restarted_generation);
      if (group != restart_groups_.end()) std::erase(group->second, client.id);
    }
    machine_.process_left(client);
  } else if (client.role == Role::Relay) {
    log_.line(fmt::format("relay left: {}{}", client.peer,
                          client.dead_reason.empty() ? "" : ": " + client.dead_reason));
  } else if (client.role == Role::Command && !client.dead_reason.empty()) {
    log_.line(
        fmt::format("command connection from {} dropped: {}", client.peer, client.dead_reason));
  }
}

void Coordinator::handle_auth(Client& client, const StasisMsgHeader&, const uint8_t* payload) {
  StasisAuth auth;
  memcpy(&auth, payload, sizeof auth);
  if (std::string refusal = check_auth(secret_, client.nonce, auth); !refusal.empty()) {
    connections_.refuse(client, refusal);
    return;
  }
  if (auth.role == STASIS_ROLE_RELAY) {
    // An older relay sends no protocol name (nor reads aggregated answers' rules): refused.
    std::string speaks = bounded(auth.process.program, sizeof auth.process.program);
    if (speaks != protocol::kRelayProtocol) {
      connections_.refuse(
          client, fmt::format("the relay speaks {}, this coordinator {}: run the same stasis on every host",
                              speaks.empty() ? "stasis-relay/1 (an older stasis)" : speaks,
                              protocol::kRelayProtocol));
      return;
    }
  }
  StasisAuthOk ok{.client_id = client.id};
  connections_.send(client, STASIS_MSG_AUTH_OK, 0, &ok, sizeof ok);
  if (auth.role == STASIS_ROLE_COMMAND) {
    connections_.authenticated(client, Role::Command);
    return;
  }
  if (auth.role == STASIS_ROLE_RELAY) {
    connections_.authenticated(client, Role::Relay);
    // The relay waits for this before it serves anyone: the coordinator's side of the check.
    connections_.queue_for_relay(client, STASIS_MSG_RELAY_JOIN, protocol::kRelayProtocol,
                                 sizeof protocol::kRelayProtocol - 1);
    log_.line(fmt::format("relay joined from {}", client.peer));
    return;
  }
  connections_.authenticated(client, Role::Process);
  accept_process(client, auth.process);
}

void Coordinator::accept_process(Client& client, const StasisProcessInfo& info) {
  client.info = info;
  // Strings from the wire are only trusted once terminated.
  client.info.hostname[sizeof client.info.hostname - 1] = '\0';
  client.info.program[sizeof client.info.program - 1] = '\0';
  client.info.ckpt_dir[sizeof client.info.ckpt_dir - 1] = '\0';
  process_joined(client);
}

void Coordinator::handle_relay_batch(Client& relay, const StasisMsgHeader& header,
                                     const uint8_t* payload) {
  // Clients are only marked dead while the batch is handled (reap() erases them later), and a
  // process joining does not move the relay: one lookup of it for the whole batch.
  Client* from = &relay;
  std::string fault = protocol::for_each_relay_entry(
      payload, header.payload_len,
      [&](const StasisRelayEntry& entry, const uint8_t* data, const std::vector<uint64_t>& ids) {
        // Tens of thousands of answers to a barrier come as a few entries: each is read once,
        // then handed to the checkpoint machine process by process, without a copy each.
        // Filled by the copy alone: no zeroing of 1.6 KB first, for each process's image.
        StasisBarrierDone done_copy;
        StasisBarrierDone* done = nullptr;
        if (entry.type == STASIS_MSG_BARRIER_DONE && entry.payload_len == sizeof(StasisBarrierDone)) {
          memcpy(&done_copy, data, sizeof done_copy);
          done = &done_copy;
        }
        bool image_checked = (entry.flags & STASIS_RELAY_ENTRY_IMAGE_CHECKED) != 0;
        if (entry.flags & protocol::kRelayEntryAllOfMine) {
          if (!done) {
            connections_.drop(*from, "protocol error: an aggregated relay entry that is no BARRIER_DONE");
            return;
          }
          machine_.relay_all_done(*from, *done, entry.count, entry.reserved, image_checked);
          return;
        }
        for (uint64_t local : ids) {
          if (from->dead) return;  // a message below dropped the relay
          auto known = from->relayed.find(local);
          if (entry.type == STASIS_MSG_RELAY_JOIN) {
            if (known != from->relayed.end() || entry.payload_len != sizeof(StasisProcessInfo)) {
              connections_.drop(*from, "protocol error: malformed or repeated RELAY_JOIN");
              return;
            }
            StasisProcessInfo info;
            memcpy(&info, data, sizeof info);
            Client& process = connections_.add_relayed(*from, local, entry.arg);
            connections_.authenticated(process, Role::Process);
            accept_process(process, info);
            continue;
          }
          if (known == from->relayed.end()) continue;  // it left, or the coordinator dropped it
          Client* process = connections_.find(known->second);
          if (process == nullptr || process->dead) continue;
          if (entry.type == STASIS_MSG_RELAY_LEFT) {
            process->relay_knows_gone = true;
            connections_.drop(*process, "");
            continue;
          }
          if (done) {
            machine_.barrier_done(*process, *done, image_checked);
            continue;
          }
          StasisMsgHeader inner{};
          inner.magic = STASIS_PROTOCOL_MAGIC;
          inner.version = STASIS_PROTOCOL_VERSION;
          inner.type = entry.type;
          inner.payload_len = entry.payload_len;
          inner.reserved = entry.reserved;
          inner.arg = entry.arg;
          on_message(*process, inner, data);
        }
      });
  if (!fault.empty() && !from->dead) connections_.drop(*from, "protocol error: " + fault);
}

void Coordinator::process_joined(Client& client) {
  process_count_++;
  launch_expected_until_.reset();
  seen_process_ = true;
  const StasisProcessInfo& info = client.info;
  std::string where = fmt::format("{} on {} from {}", client.describe(),
                                  bounded(info.hostname, sizeof info.hostname), client.peer);
  if (info.ckpt_dir[0] != '\0' && options_.ckpt_dir != info.ckpt_dir) {
    log_.line(
        fmt::format("note: {} asked for checkpoints in {}, but this coordinator writes "
                    "them to {}",
                    client.describe(), info.ckpt_dir, options_.ckpt_dir));
  }
  machine_.learn_plugin_barriers(client);
  if (options_.interval <= 0 && info.interval_seconds > 0) {
    options_.interval = info.interval_seconds;
    next_interval_ = after_seconds(options_.interval);
    log_.line(
        fmt::format("checkpointing every {} s, as {} asked", options_.interval, client.describe()));
  }
  if (!info.restarted) {
    client.in_computation = true;
    client.state = "running";
    log_.line(fmt::format("process joined: {}", where));
    machine_.process_joined(client);
    return;
  }
  client.state = "restarting";
  auto& group = restart_groups_[info.restarted_generation];
  group.push_back(client.id);
  size_t expected = std::max<uint32_t>(1, info.restart_process_count);
  log_.line(fmt::format("process joined: {}, restarted from generation {} ({} of {})", where,
                        info.restarted_generation, group.size(), expected));
  if (group.size() >= expected) {
    Operation op{.kind = OpKind::Restart};
    op.restart_generation = info.restarted_generation;
    op.restart_members = std::move(group);
    restart_groups_.erase(info.restarted_generation);
    if (restart_groups_.empty()) restart_expected_until_.reset();
    machine_.enqueue(std::move(op));
  }
}

void Coordinator::handle_command(Client& client, const StasisCommand& command) {
  switch (command.verb) {
    case STASIS_CMD_STATUS:
      reply(client.id, true, status_json());
      return;
    case STASIS_CMD_EXPECT_RESTART:
      // Counts as work: once the patience ends with nobody there, --exit-when-idle ends it.
      seen_process_ = true;
      restart_expected_until_ = after_seconds(options_.restart_patience);
      reply(client.id, true, {{"ok", true}});
      return;
    case STASIS_CMD_EXPECT_LAUNCH:
      launch_expected_until_ = Clock::now() + kLaunchPatience;
      reply(client.id, true, {{"ok", true}});
      return;
    case STASIS_CMD_CHECKPOINT: {
      auto compression = static_cast<StasisCompressionSetting>(command.compression);
      if (compression > STASIS_COMPRESSION_LZ4) {
        reply(client.id, false,
              {{"ok", false},
               {"error", fmt::format("compression must be {}, not number {}",
                                     image::kCompressionChoices, command.compression)}});
        return;
      }
      log_.line(fmt::format("checkpoint{} requested by a command from {}",
                            command.kill_after ? " (then kill)" : "", client.peer));
      machine_.enqueue(Operation{.kind = OpKind::Checkpoint,
                                 .kill_after = command.kill_after != 0,
                                 .full = command.full != 0,
                                 .compression = compression,
                                 .waiters = {client.id}});
      return;
    }
    case STASIS_CMD_KILL:
      log_.line(fmt::format("kill requested by a command from {}", client.peer));
      machine_.enqueue(Operation{.kind = OpKind::Kill, .waiters = {client.id}});
      return;
    default:
      reply(client.id, false,
            {{"ok", false}, {"error", fmt::format("unknown command verb {}", command.verb)}});
  }
}

void Coordinator::check_deadlines() {
  Clock::time_point now = Clock::now();
  connections_.expire_handshakes(now);
  machine_.check_deadlines(now);
  // Once past, a deadline is cleared: a past one left in place makes every epoll_wait return
  // at once (a daemon once spun like that for 25 minutes after a restart that never came).
  if (launch_expected_until_ && *launch_expected_until_ <= now) launch_expected_until_.reset();
  if (restart_expected_until_ && *restart_expected_until_ <= now) {
    restart_expected_until_.reset();
    if (!restart_groups_.empty())
      log_.line(fmt::format("restarted processes still missing after {} s",
                            options_.restart_patience));
  }

  if (next_interval_ && *next_interval_ <= now) {
    next_interval_ = after_seconds(options_.interval);
    bool anyone =
        std::any_of(connections_.all().begin(), connections_.all().end(), [](const auto& entry) {
          return entry.second.is_live_process() && entry.second.in_computation;
        });
    if (anyone && !machine_.checkpoint_pending()) {
      log_.line("interval checkpoint");
      machine_.enqueue(Operation{.kind = OpKind::Checkpoint});
    }
  }
}

int Coordinator::next_timeout_ms() const {
  std::optional<Clock::time_point> soonest;
  auto consider = [&](Clock::time_point t) {
    if (!soonest || t < *soonest) soonest = t;
  };
  if (const Clock::time_point* handshake = connections_.next_handshake_deadline())
    consider(*handshake);
  if (auto deadline = machine_.next_deadline()) consider(*deadline);
  if (next_interval_) consider(*next_interval_);
  if (idle_since_) consider(*idle_since_ + kIdleGrace);
  if (!departed_pids_.empty() && idle_after_work()) consider(Clock::now() + std::chrono::milliseconds(100));
  if (restart_expected_until_) consider(*restart_expected_until_);
  if (launch_expected_until_) consider(*launch_expected_until_);
  if (connections_.closing_any()) return 0;
  if (!soonest) return -1;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*soonest - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(wait, 0, 3600 * 1000));
}

bool Coordinator::departed_pids_live() {
  std::erase_if(departed_pids_, [](const auto& departed) {
    if (Clock::now() - departed.second >= kExecPatience) return true;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(departed.first));
    FILE* file = fopen(path, "re");
    if (!file) return true;  // gone
    size_t n = fread(stat, 1, sizeof stat - 1, file);
    fclose(file);
    stat[n] = 0;
    const char* state = strrchr(stat, ')');  // "PID (COMM) STATE ...": COMM may hold anything
    return !state || state[1] == 0 || state[2] == 'Z' || state[2] == 'X';
  });
  return !departed_pids_.empty();
}

bool Coordinator::idle_after_work() const {
  if (restart_expected_until_ && Clock::now() < *restart_expected_until_) return false;
  if (launch_expected_until_ && Clock::now() < *launch_expected_until_) return false;
  return seen_process_ && process_count_ == 0 && machine_.idle();
}

json Coordinator::status_json() const {
  std::vector<const Client*> processes;
  for (const auto& [id, client] : connections_.all()) {
    if (client.is_live_process()) processes.push_back(&client);
  }
  std::sort(processes.begin(), processes.end(),
            [](const Client* a, const Client* b) { return a->id < b->id; });
  json list = json::array();
  // The reply is one message (at most STASIS_MAX_PAYLOAD, about 8,000 of these entries): with
  // tens of thousands of processes, the first ones and the count.
  constexpr size_t kProcessesListed = 5000;
  for (const Client* client : processes) {
    if (list.size() == kProcessesListed) break;
    const StasisProcessInfo& info = client->info;
    list.push_back({{"id", client->id},
                    {"pid", info.pid},
                    {"original_pid", info.original_pid},
                    {"pid_space", bounded(info.virtual_pid_space, sizeof info.virtual_pid_space)},
                    {"host", bounded(info.hostname, sizeof info.hostname)},
                    {"program", bounded(info.program, sizeof info.program)},
                    {"restarted", info.restarted != 0},
                    {"state", machine_.state_of(*client)}});
  }
  std::string state = machine_.state(!processes.empty());
  return {{"coordinator",
           {{"pid", getpid()},
            {"host", options_.host},
            {"port", port_},
            {"ckpt_dir", options_.ckpt_dir},
            {"interval", options_.interval}}},
          {"state", state},
          {"processes", list},
          {"process_count", processes.size()},
          {"last_checkpoint", machine_.last_checkpoint()},
          {"checkpoints_done", machine_.checkpoints_done()}};
}

// Detaches (double fork, setsid), and tells the waiting parent through `ready` once listening.
int run_daemon(const Options& options) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", errno_text()));
  pid_t child = fork();
  if (child < 0) throw Error(fmt::format("fork: {}", errno_text()));
  if (child > 0) {
    close(ready[1]);
    std::string message;
    char buffer[512];
    ssize_t n;
    while ((n = read(ready[0], buffer, sizeof buffer)) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      message.append(buffer, static_cast<size_t>(n));
    }
    close(ready[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (message == "ok") return 0;
    if (message.empty()) throw Error("the coordinator daemon exited before it was ready");
    throw Error(message);
  }

  close(ready[0]);
  setsid();
  pid_t daemon = fork();
  if (daemon != 0) _exit(daemon < 0 ? 1 : 0);

  auto tell_parent = [&](const std::string& message) {
    ssize_t ignored = write(ready[1], message.data(), message.size());
    (void)ignored;
    close(ready[1]);
  };
  if (chdir("/") != 0) {
    tell_parent("cannot change directory to /");
    return 1;
  }
  // Only the ready pipe survives: a caller reading our output must see end-of-file.
  int null_fd = open("/dev/null", O_RDWR);
  dup2(null_fd, STDIN_FILENO);
  dup2(null_fd, STDOUT_FILENO);
  dup2(null_fd, STDERR_FILENO);
  if (ready[1] > 3) close_range(3, static_cast<unsigned>(ready[1]) - 1, 0);
  close_range(static_cast<unsigned>(ready[1]) + 1, ~0u, 0);

  try {
    make_private_dirs(options.ckpt_dir);
    std::string log_path =
        options.log_file.empty() ? options.ckpt_dir + "/coordinator.log" : options.log_file;
    Fd log_fd(open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (log_fd.get() < 0) throw Error(fmt::format("cannot open {}: {}", log_path, errno_text()));
    Log log(log_fd.get());
    Coordinator coordinator(options, log);
    try {
      coordinator.start();
    } catch (const Error& e) {
      log.line(fmt::format("cannot start: {}", e.what()));
      throw;
    }
    tell_parent("ok");
    try {
      return coordinator.run();
    } catch (const std::exception& e) {
      log.line(fmt::format("fatal: {}", e.what()));
      return 1;
    }
  } catch (const std::exception& e) {
    tell_parent(e.what());
    return 1;
  }
}

}  // namespace

int run_coordinator(Options options) {
  // A daemon runs in /, so every path is made absolute first.
  options.ckpt_dir = resolve_ckpt_dir(options.ckpt_dir);
  if (!options.port_file.empty()) {
    options.port_file = std::filesystem::absolute(options.port_file).string();
  }
  if (!options.log_file.empty()) {
    options.log_file = std::filesystem::absolute(options.log_file).string();
  }
  if (options.interval < 0 || options.barrier_timeout <= 0) {
    throw Error("--interval and --barrier-timeout must be positive numbers of seconds");
  }
  if (options.daemon) return run_daemon(options);
  Log log(STDERR_FILENO);
  Coordinator coordinator(options, log);
  coordinator.start();
  return coordinator.run();
}

}  // namespace stasis::coordinator
