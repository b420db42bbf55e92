// See checkpoint_machine.h. The sequences themselves, in order, are protocol/barriers.h.
#include "coordinator/checkpoint_machine.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "coordinator/checkpoint_store.h"

namespace stasis::coordinator {

using nlohmann::json;
using protocol::Barrier;
using protocol::Sequence;

namespace {

// What a process is doing while (sending) and after (done) a barrier; a plugin barrier's name.
std::string state_during(const char* barrier) {
  const protocol::BarrierStep* step = protocol::find_named(barrier);
  return step != nullptr ? step->state_during : barrier;
}

std::string state_after(const char* barrier) {
  const protocol::BarrierStep* step = protocol::find_named(barrier);
  return step != nullptr ? step->state_after : barrier;
}

}  // namespace

void CheckpointTiming::barrier_ended(const std::string& name) {
  Clock::time_point now = Clock::now();
  double seconds = std::chrono::duration<double>(now - last_mark).count();
  last_mark = now;
  if (!barrier_seconds.empty() && barrier_seconds.back().first == name) {
    barrier_seconds.back().second += seconds;
  } else {
    barrier_seconds.emplace_back(name, seconds);
  }
}

void CheckpointMachine::start(StasisCompressionSetting compression, uint16_t port) {
  compression_ = compression;
  port_ = port;
  if (auto manifest = read_latest_manifest(options_.ckpt_dir)) {
    uint64_t generation = manifest->value("generation", uint64_t{0});
    last_checkpoint_ = {{"generation", generation},
                        {"dir", options_.ckpt_dir + "/" + generation_name(generation)},
                        {"unix_time", manifest->value("unix_time", int64_t{0})},
                        {"seconds", manifest->value("seconds", 0.0)}};
  }
}

// A process that joins while a checkpoint is still stopping the computation (a child forked, or
// a program exec'd, as it began) is taken into it: suspended now, and asked for its children
// with the others. Later joiners wait for the next checkpoint.
void CheckpointMachine::process_joined(Client& client) {
  if (!running_ || running_->op.kind != OpKind::Checkpoint) return;
  RunningOp& op = *running_;
  if (!op.stopping() || !op.failure.empty()) return;
  op.members.push_back(client.id);
  op.alive.insert(client.id);
  op.late_joiners.insert(client.id);
  log_.line(fmt::format("{} joins checkpoint {} under way", client.describe(), op.generation));
  StasisBarrier barrier{};
  copy_field(barrier.name, protocol::barrier_name(Barrier::Suspend));
  if (op.step == Barrier::Suspend) {
    uint32_t ask = next_ask();
    mark_asked(client, ask);
    send_barrier(client, barrier, op.generation, ask);
  } else {
    send_barrier(client, barrier, op.generation, 0);  // catching up: answered apart
    if (op.step == Barrier::Children) {
      copy_field(barrier.name, protocol::barrier_name(Barrier::Children));
      uint32_t ask = next_ask();
      mark_asked(client, ask);
      send_barrier(client, barrier, op.generation, ask);
    }
  }
}

namespace {
// Where a process's pid names it (StasisProcessInfo::pid_space): its kernel and pid namespace.
// A process that crossed into another host's network and UTS namespaces (a remote launcher
// that execs into its remote command, as the test hosts' nsrsh does) is still its parent's child.
std::string pid_space_of(const Client& c) {
  std::string space = bounded(c.info.pid_space, sizeof c.info.pid_space);
  return space.empty() ? "host " + bounded(c.info.hostname, sizeof c.info.hostname) : space;
}
}  // namespace

// After the "children" barrier: every live child of every member must be a member.
void CheckpointMachine::check_children() {
  RunningOp& op = *running_;
  std::set<std::pair<std::string, uint32_t>> members;
  // An srun a member ran is outside the computation, its tasks (started by slurmd on the nodes)
  // inside: such a child counts as one when a member is a task of it (srun's pid and parent's).
  std::set<std::pair<uint32_t, uint32_t>> sruns_of_tasks;
  // Most members have no child (every stand-in, every MPI rank): the set of all members, a
  // string each, is built only when some member has one to look up.
  bool any_child = std::any_of(op.children.begin(), op.children.end(), [&](const auto& entry) {
    return !entry.second.empty() && op.alive.count(entry.first) > 0;
  });
  for (auto id = op.alive.begin(); any_child && id != op.alive.end(); ++id) {
    const StasisProcessInfo& info = connections_.at(*id).info;
    members.insert({pid_space_of(connections_.at(*id)), info.pid});
    if (info.srun_pid != 0) sruns_of_tasks.insert({info.srun_parent_pid, info.srun_pid});
  }
  std::string missing;
  size_t missing_count = 0;
  std::vector<uint64_t> incomplete_parents;
  for (const auto& [id, kids] : op.children) {
    if (op.alive.count(id) == 0) continue;
    const Client& parent = connections_.at(id);
    const std::string space = pid_space_of(parent);
    size_t missing_before = missing_count;
    for (uint32_t pid : kids)
      if (!members.count({space, pid}) && !sruns_of_tasks.count({parent.info.pid, pid})) {
        if (missing_count++ == 0)
          missing = fmt::format("pid {} (a child of {})", pid, parent.describe());
      }
    if (missing_count > missing_before) incomplete_parents.push_back(id);
  }
  if (missing_count == 0) {
    op.children.clear();
    std::erase_if(op.members, [&](uint64_t id) { return op.alive.count(id) == 0; });
    start_next_barrier(Barrier::Children, "");
    return;
  }
  if (Clock::now() >= op.children_deadline) {
    fail(
        fmt::format("{}{} not running under Stasis (a static program, or one started with its "
                    "environment cleared?); a process tree is checkpointed only as a whole",
                    missing,
                    missing_count > 1 ? fmt::format(" and {} more are", missing_count - 1)
                                      : std::string(" is")));
    abandon_checkpoint();
    return;
  }
  // Only these are asked again (with late joiners): a suspended process forks no new child.
  for (uint64_t id : incomplete_parents) op.children.erase(id);
  op.children_retry = Clock::now() + std::chrono::milliseconds(20);
}

void CheckpointMachine::enqueue(Operation op) {
  if (op.kind == OpKind::Checkpoint) {
    // Identical requests waiting their turn become one checkpoint with several waiters.
    for (Operation& queued : queue_) {
      if (queued.kind == OpKind::Checkpoint && queued.kill_after == op.kill_after &&
          queued.full == op.full && queued.compression == op.compression) {
        queued.waiters.insert(queued.waiters.end(), op.waiters.begin(), op.waiters.end());
        return;
      }
    }
  }
  queue_.push_back(std::move(op));
  start_next_op();
}

void CheckpointMachine::start_next_op() {
  while (!running_ && !queue_.empty()) {
    running_.emplace();
    running_->op = std::move(queue_.front());
    running_->started = Clock::now();
    running_->timing.last_mark = running_->started;
    running_->timing.wire_messages_at_start = connections_.wire_messages();
    queue_.pop_front();
    switch (running_->op.kind) {
      case OpKind::Checkpoint:
        start_checkpoint();
        break;
      case OpKind::Kill:
        start_kill();
        break;
      case OpKind::Restart:
        start_restart();
        break;
    }
  }
}

void CheckpointMachine::start_checkpoint() {
  RunningOp& op = *running_;
  for (auto& [id, client] : connections_.all()) {
    if (client.is_live_process() && client.in_computation) {
      op.members.push_back(id);
    }
  }
  if (op.members.empty()) {
    finish_op(false, {{"ok", false}, {"error", "no processes are connected to this coordinator"}});
    return;
  }
  std::sort(op.members.begin(), op.members.end());
  op.alive.insert(op.members.begin(), op.members.end());
  op.generation = next_generation(options_.ckpt_dir);
  op.generation_dir = options_.ckpt_dir + "/" + generation_name(op.generation);
  if (mkdir(op.generation_dir.c_str(), 0700) != 0) {
    std::string why = fmt::format("cannot create {}: {}", op.generation_dir, errno_text());
    log_.line("checkpoint failed: " + why);
    finish_op(false, {{"ok", false}, {"error", why}});
    return;
  }
  // Tells coordinators pruning the same directory (--keep) that this one is not abandoned.
  op.generation_lock = lock_generation(op.generation_dir);
  if (op.generation_lock < 0)
    log_.line(fmt::format("cannot lock {} ({}); another coordinator pruning this directory "
                          "will leave it alone anyway",
                          op.generation_dir, errno_text()));
  log_.line(fmt::format("checkpoint {} started: {} process{}", op.generation, op.members.size(),
                        op.members.size() == 1 ? "" : "es"));
  start_barrier(protocol::first_step(Sequence::Checkpoint).barrier, op.generation);
}

void CheckpointMachine::start_kill() {
  RunningOp& op = *running_;
  for (auto& [id, client] : connections_.all()) {
    if (client.is_live_process()) op.members.push_back(id);
  }
  if (op.members.empty()) {
    finish_op(false, {{"ok", false}, {"error", "no processes are connected to this coordinator"}});
    return;
  }
  op.alive.insert(op.members.begin(), op.members.end());
  log_.line(
      fmt::format("killing {} process{}", op.members.size(), op.members.size() == 1 ? "" : "es"));
  kill_members();
}

void CheckpointMachine::start_restart() {
  RunningOp& op = *running_;
  for (uint64_t id : op.op.restart_members) {
    Client* client = connections_.find(id);
    if (client != nullptr && !client->dead) op.members.push_back(id);
  }
  if (op.members.empty()) {
    finish_op(false, nullptr);
    return;
  }
  op.alive.insert(op.members.begin(), op.members.end());
  log_.line(fmt::format("restart of generation {}: {} process{} connected",
                        op.op.restart_generation, op.members.size(),
                        op.members.size() == 1 ? "" : "es"));
  start_barrier(protocol::first_step(Sequence::Restart).barrier, op.op.restart_generation);
}

void CheckpointMachine::start_barrier(Barrier step, uint64_t arg, const std::string& plugin) {
  RunningOp& op = *running_;
  op.step = step;
  op.barrier = step == Barrier::Plugin ? plugin : protocol::barrier_name(step);
  op.state_during = state_during(op.barrier.c_str());
  op.state_after = state_after(op.barrier.c_str());
  op.round = ++rounds_;
  op.unanswered = 0;
  op.relay_rounds.clear();
  op.images_checked_up_to.clear();
  op.deadline = after_seconds(options_.barrier_timeout);
  StasisBarrier barrier{};
  copy_field(barrier.name, op.barrier);
  // Every barrier of a checkpoint names its directory: plugins that share objects between
  // processes decide there, before "checkpoint", who saves them (the ipc plugin, at "drain").
  copy_field(barrier.ckpt_dir, op.generation_dir);
  if (step == Barrier::Checkpoint) {
    barrier.compression =
        op.op.compression != STASIS_COMPRESSION_DEFAULT ? op.op.compression : compression_;
    barrier.kill_after = op.op.kill_after ? 1 : 0;
    // Processes that track their dirty pages since that generation's images write increments.
    barrier.parent_generation = op.op.full ? 0 : newest_complete_;
  }
  if (step == Barrier::Commit) barrier.abort = op.failure.empty() ? 0 : 1;
  uint32_t ask = next_ask();
  // A relay's members are asked together: when they are all of its processes that joined up to
  // the last of them, the barrier goes down once for the relay (kRelayEntryFirstJoined), not
  // once per process; otherwise (a repeated "children" that asks some of them) by name.
  struct RelayAsk {
    uint64_t relay = 0;
    std::vector<Client*> asked;
    uint64_t up_to_join = 0;
    bool by_name = false;
  };
  std::vector<RelayAsk> relay_asks;
  std::unordered_map<uint64_t, size_t> relay_ask_of;  // by the relay's client id
  RelayAsk* last = nullptr;
  for (uint64_t id : op.members) {
    // A repeated "children" barrier asks only the members that have not answered it.
    bool skip = step == Barrier::Children && op.children.count(id) > 0;
    Client* client = connections_.find(id);
    // (A member that left is no client any more: ids are never reused.)
    if (client == nullptr) continue;
    if (client->relay != 0 && (last == nullptr || last->relay != client->relay)) {
      auto [at, added] = relay_ask_of.try_emplace(client->relay, relay_asks.size());
      if (added) relay_asks.push_back(RelayAsk{.relay = client->relay});
      last = &relay_asks[at->second];
    }
    if (skip || client->dead) {
      if (client->relay != 0) last->by_name = true;
      continue;
    }
    if (client->relay == 0) {
      mark_asked(*client, ask);
      send_barrier(*client, barrier, arg, ask);
      continue;
    }
    if (!mark_asked(*client, ask, /*count_in_relay=*/false)) continue;
    client->state = op.state_during;
    last->asked.push_back(client);
    last->up_to_join = std::max(last->up_to_join, client->relay_join);
  }
  for (RelayAsk& group : relay_asks) {
    if (group.asked.empty()) continue;
    op.relay_rounds[group.relay].waiting_by_ask[ask] += group.asked.size();
    op.timing.messages += group.asked.size();
    Client* relay = connections_.find(group.relay);
    if (relay == nullptr || relay->dead) continue;  // its processes are reported closed
    if (!group.by_name && asks_all_joined_up_to(*relay, group.asked.size(), group.up_to_join)) {
      connections_.send_to_first_joined(*relay, group.up_to_join, STASIS_MSG_BARRIER, arg, &barrier,
                                        sizeof barrier, ask);
      op.timing.barriers_given_by_relays += group.asked.size();
      continue;
    }
    for (Client* client : group.asked)
      connections_.send(*client, STASIS_MSG_BARRIER, arg, &barrier, sizeof barrier, ask);
  }
  if (op.unanswered == 0) barrier_complete();
}

// Whether `asked` processes of `relay` are every process it has that joined among its first
// `up_to_join` and is not being dropped: then "each of yours up to that join" names them.
bool CheckpointMachine::asks_all_joined_up_to(const Client& relay, size_t asked, uint64_t up_to_join) {
  if (relay.relayed.size() == asked) return true;  // every one of them (the common case)
  size_t joined = 0;
  for (const auto& [local, id] : relay.relayed) {
    const Client* process = connections_.find(id);
    if (process != nullptr && !process->dead && process->relay_join <= up_to_join) joined++;
  }
  return joined == asked;
}

// The table's next barrier. Where it says Barrier::Plugin, the barriers plugins added run one
// after another, in the order processes declared them; then the table goes on.
void CheckpointMachine::start_next_barrier(Barrier finished, const std::string& finished_name) {
  RunningOp& op = *running_;
  Sequence sequence = op.op.kind == OpKind::Restart ? Sequence::Restart : Sequence::Checkpoint;
  uint64_t arg = op.op.kind == OpKind::Restart ? op.op.restart_generation : op.generation;
  Barrier next = protocol::find_step(sequence, finished)->next;
  auto plugin = plugin_barriers_.end();
  if (finished == Barrier::Plugin) {
    plugin = std::find(plugin_barriers_.begin(), plugin_barriers_.end(), finished_name);
    if (plugin != plugin_barriers_.end()) ++plugin;
  } else if (next == Barrier::Plugin) {
    plugin = plugin_barriers_.begin();
  }
  if (plugin != plugin_barriers_.end()) {
    start_barrier(Barrier::Plugin, arg, *plugin);
    return;
  }
  if (next == Barrier::Plugin) next = protocol::find_step(sequence, Barrier::Plugin)->next;
  start_barrier(next, arg);
}

void CheckpointMachine::send_barrier(Client& client, const StasisBarrier& barrier, uint64_t arg,
                                     uint32_t ask) {
  // Looked up once per barrier, not once per process.
  client.state = running_->barrier == barrier.name ? running_->state_during : state_during(barrier.name);
  running_->timing.messages++;
  connections_.send(client, STASIS_MSG_BARRIER, arg, &barrier, sizeof barrier, ask);
}

void CheckpointMachine::barrier_done(Client& client, const StasisBarrierDone& done,
                                     bool image_checked) {
  if (running_) running_->timing.messages++;
  std::string name = bounded(done.name, sizeof done.name);
  if (running_ && running_->late_joiners.count(client.id) &&
      protocol::barrier_named(name.c_str()) == Barrier::Suspend &&
      running_->step != Barrier::Suspend) {  // a late joiner catching up
    if (done.status != 0)
      fail(fmt::format("process {} failed to suspend: {}", client.describe(),
                       bounded(done.message, sizeof done.message)));
    return;
  }
  if (!running_ || running_->barrier != name || !is_pending(client)) {
    log_.line(
        fmt::format("ignoring an unexpected BARRIER_DONE \"{}\" from {}", name, client.describe()));
    return;
  }
  RunningOp& op = *running_;
  mark_answered(client);
  if (done.status != 0) {
    std::string message = bounded(done.message, sizeof done.message);
    std::replace(message.begin(), message.end(), '\n', ' ');
    if (message.empty()) message = fmt::format("error {}", done.status);
    client.state = "failed " + name;
    fail(fmt::format("process {} failed to {}: {}", client.describe(), name, message));
  } else {
    client.state = op.state_after;
    // The image is named at "checkpoint" (written in place) or at "commit" (a forked writer
    // finished it); the later answer wins.
    if ((op.step == Barrier::Checkpoint || op.step == Barrier::Commit) &&
        done.image_path[0] != '\0') {
      op.images[client.id] =
          ImageResult{bounded(done.image_path, sizeof done.image_path), done.image_bytes,
                      done.memory_bytes, done.parent_generation, done.image_checksum};
      op.timing.slowest_write_ns = std::max(op.timing.slowest_write_ns, done.write_nanoseconds);
    }
    // The relay checked the image named last (at "checkpoint", or in this very answer).
    if (op.step == Barrier::Commit && image_checked) {
      if (auto image = op.images.find(client.id); image != op.images.end()) image->second.checked = true;
    }
  }
  if (op.unanswered == 0) barrier_complete();
}

bool CheckpointMachine::mark_asked(Client& client, uint32_t ask, bool count_in_relay) {
  RunningOp& op = *running_;
  if (client.asked_round == op.round) return false;
  client.asked_round = op.round;
  client.asked_ask = ask;
  op.unanswered++;
  if (client.relay != 0 && count_in_relay) op.relay_rounds[client.relay].waiting_by_ask[ask]++;
  return true;
}

void CheckpointMachine::mark_answered(Client& client) {
  RunningOp& op = *running_;
  client.answered_round = op.round;
  op.unanswered--;
  if (client.relay != 0) op.relay_rounds[client.relay].waiting_by_ask[client.asked_ask]--;
}

bool CheckpointMachine::is_pending(const Client& client) const {
  if (!running_ || running_->barrier.empty()) return false;
  const RunningOp& op = *running_;
  if (client.asked_round != op.round || client.answered_round == op.round) return false;
  if (client.relay == 0) return true;
  auto relay = op.relay_rounds.find(client.relay);
  return relay == op.relay_rounds.end() || client.asked_ask > relay->second.covered_up_to;
}

void CheckpointMachine::relay_all_done(Client& relay, const StasisBarrierDone& done, uint32_t count,
                                       uint32_t up_to_ask, bool images_checked) {
  std::string name = bounded(done.name, sizeof done.name);
  if (!running_ || running_->barrier != name) {
    log_.line(fmt::format("ignoring an unexpected aggregated BARRIER_DONE \"{}\" from the relay at {}",
                          name, relay.peer));
    return;
  }
  RunningOp& op = *running_;
  RunningOp::RelayRound& round = op.relay_rounds[relay.id];
  size_t waiting = 0;
  auto covered_end = round.waiting_by_ask.upper_bound(up_to_ask);
  for (auto it = round.waiting_by_ask.begin(); it != covered_end; ++it) waiting += it->second;
  // At "children" the count stands for their (empty) CHILDREN lists too, as the processes sent them.
  op.timing.messages += op.step == Barrier::Children ? 2 * count : count;
  op.timing.aggregated_answers += count;
  // The relay and the coordinator must agree on who was asked: a count that differs would
  // complete the barrier for processes that never reached it, or leave some waiting forever.
  if (done.status != 0 || count != waiting || up_to_ask <= round.covered_up_to) {
    fail(fmt::format("the relay at {} answered \"{}\" for {} of its processes (asks up to {}), but {} "
                     "were waiting (status {}): the relay and the coordinator disagree",
                     relay.peer, name, count, up_to_ask, waiting, done.status));
    return;
  }
  round.waiting_by_ask.erase(round.waiting_by_ask.begin(), covered_end);
  round.covered_up_to = up_to_ask;
  if (images_checked && op.step == Barrier::Commit) op.images_checked_up_to[relay.id] = up_to_ask;
  op.unanswered -= waiting;
  relay.all_answered_round = op.round;
  relay.all_answered_up_to = up_to_ask;
  relay.all_answered_state = op.state_after;
  if (op.unanswered == 0) barrier_complete();
}

bool CheckpointMachine::image_checked_by_relay(const Client& client, const ImageResult& image) const {
  if (image.checked) return true;
  // Answered "commit" (the round just finished) in its relay's aggregated, checked answer.
  const RunningOp& op = *running_;
  if (client.relay == 0 || client.asked_round != op.round || client.answered_round == op.round) return false;
  auto relay = op.images_checked_up_to.find(client.relay);
  return relay != op.images_checked_up_to.end() && client.asked_ask <= relay->second;
}

const std::string& CheckpointMachine::state_of(const Client& client) const {
  if (client.relay != 0 && client.asked_round != client.answered_round) {
    const Client* relay = connections_.find(client.relay);
    if (relay != nullptr && relay->all_answered_round == client.asked_round &&
        client.asked_ask <= relay->all_answered_up_to)
      return relay->all_answered_state;
  }
  return client.state;
}

// Records the first failure; a checkpoint that has one is abandoned after the current barrier.
void CheckpointMachine::fail(const std::string& why) {
  log_.line(why);
  if (running_ && running_->failure.empty()) running_->failure = why;
}

void CheckpointMachine::barrier_complete() {
  RunningOp& op = *running_;
  Barrier finished = op.step;
  std::string finished_name = op.barrier;
  op.step = Barrier::None;
  op.barrier.clear();
  op.unanswered = 0;
  op.relay_rounds.clear();
  op.timing.barrier_ended(finished_name);

  if (op.op.kind == OpKind::Restart) {
    if (protocol::find_step(Sequence::Restart, finished)->next != Barrier::None) {
      start_next_barrier(finished, finished_name);
      return;
    }
    for (uint64_t id : op.alive) connections_.at(id).in_computation = true;
    log_.line(fmt::format("restart of generation {} complete: {} process{} running",
                          op.op.restart_generation, op.alive.size(),
                          op.alive.size() == 1 ? "" : "es"));
    finish_op(true, nullptr);
    return;
  }

  // A checkpoint (protocol/barriers.h): each process has its snapshot after "checkpoint"
  // (written, or being written by a forked writer) and every image is durable after "commit";
  // then MANIFEST.json and `latest`. With --kill: checkpoint, commit, KILL (no resume).
  if (finished == Barrier::Resume) {
    op.resumed = true;
    op.pause_seconds = round_ms(seconds_since(op.started));
    // After a failure too: "commit" then carries abort=1, so forked writers are stopped and
    // reaped and nobody waits for an image that will not count.
    start_next_barrier(finished, finished_name);
    return;
  }
  if (finished == Barrier::Commit && (op.aborting || !op.failure.empty())) {
    remove_incomplete_generation();
    if (op.resumed) {
      finish_op(false, {{"ok", false}, {"error", op.failure}});
    } else {
      start_barrier(Barrier::Resume, op.generation);  // --kill whose commit failed: keep running
    }
    return;
  }
  if (!op.failure.empty()) {
    abandon_checkpoint();
    return;
  }
  switch (finished) {
    case Barrier::Suspend:
      // A child forked as the checkpoint began joins within moments; one that has not by then
      // never will (it runs without Stasis): no reason to hold the computation for the barrier
      // timeout.
      op.children_deadline =
          after_seconds(std::min(options_.barrier_timeout, kChildrenJoinPatienceSeconds));
      start_next_barrier(finished, finished_name);
      break;
    case Barrier::Children:
      check_children();  // repeated until every child is a member; then the next
      break;
    case Barrier::Checkpoint:
      if (op.op.kill_after) {
        start_barrier(Barrier::Commit, op.generation);
      } else {
        start_next_barrier(finished, finished_name);
      }
      break;
    case Barrier::Commit:
      commit_checkpoint();
      break;
    default:  // "drain", the plugins' barriers
      start_next_barrier(finished, finished_name);
  }
}

const Client& CheckpointMachine::member(uint64_t id) const {
  auto ended = running_->ended_after_image.find(id);
  return ended != running_->ended_after_image.end() ? ended->second : connections_.at(id);
}

void CheckpointMachine::kill_members() {
  RunningOp& op = *running_;
  op.waiting_for_exits = true;
  op.deadline = after_seconds(options_.kill_timeout);
  for (uint64_t id : op.alive) {
    Client& client = connections_.at(id);
    client.state = "killing";
    connections_.send(client, STASIS_MSG_KILL, op.generation, nullptr, 0);
  }
  if (op.alive.empty())
    finish_op(true, op.op.kind == OpKind::Kill ? json{{"ok", true}} : op.success);
}

void CheckpointMachine::process_left(const Client& client) {
  if (!running_ || running_->alive.erase(client.id) == 0) return;
  RunningOp& op = *running_;
  if (op.waiting_for_exits) {
    if (op.alive.empty()) {
      log_.line(fmt::format("all {} process{} ended", op.members.size(),
                            op.members.size() == 1 ? "" : "es"));
      json body = op.op.kind == OpKind::Kill ? json{{"ok", true}, {"killed", op.members.size()}}
                                             : op.success;
      finish_op(true, body);
    }
    return;
  }
  if (op.op.kind == OpKind::Checkpoint && op.stopping() && op.failure.empty()) {
    // It ended (or exec'd: the new program joins again) before the computation was stopped:
    // not part of this checkpoint; its parent records it as a zombie if it is one. It leaves
    // op.members once the computation is stopped (check_children), not in an O(N) step per exit.
    op.late_joiners.erase(client.id);
    log_.line(fmt::format("{} ended as checkpoint {} began; not part of it", client.describe(),
                          op.generation));
  } else if (op.op.kind == OpKind::Checkpoint && !op.committed && op.images.count(client.id) &&
             op.failure.empty()) {
    // Its image is durable (written in place at "checkpoint", or committed by its forked
    // writer, which exit and exec wait for): the checkpoint holds it as it was when stopped, and
    // restart brings it back to end again. A short-lived child often ends right after "commit".
    op.ended_after_image.emplace(client.id, client);
    log_.line(fmt::format("{} ended after its image was saved; it stays in checkpoint {}",
                          client.describe(), op.generation));
  } else if (op.op.kind == OpKind::Checkpoint && !op.committed) {
    fail(fmt::format("process {} disconnected during checkpoint {}{}", client.describe(),
                     op.generation, client.dead_reason.empty() ? "" : ": " + client.dead_reason));
  }
  if (is_pending(client)) {
    op.unanswered--;
    if (client.relay != 0) op.relay_rounds[client.relay].waiting_by_ask[client.asked_ask]--;
    if (op.unanswered == 0) barrier_complete();
  }
}

// `body` is taken by value: callers pass parts of running_, which is reset here.
void CheckpointMachine::finish_op(bool ok, json body) {
  if (running_->generation_lock >= 0) close(running_->generation_lock);
  Operation finished = std::move(running_->op);
  if (body.is_object() && !running_->notes.empty()) body["notes"] = running_->notes;
  running_.reset();
  std::string text = body.dump();
  for (uint64_t waiter : finished.waiters) connections_.reply(waiter, ok, text);
  start_next_op();
}

// Plugins add barriers to the checkpoint sequence; names that clash with the built-in ones, or
// are not plain words, are ignored (and logged) rather than trusted.
void CheckpointMachine::learn_plugin_barriers(Client& client) {
  client.info.plugin_barriers[sizeof client.info.plugin_barriers - 1] = '\0';
  std::string list = client.info.plugin_barriers;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(start, end - start);
    start = end + 1;
    bool plain =
        !name.empty() && name.size() < 32 && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        });
    if (!plain || protocol::is_builtin_barrier_name(name.c_str())) {
      log_.line(fmt::format("ignoring plugin barrier '{}' from {}", name, client.describe()));
      continue;
    }
    if (std::find(plugin_barriers_.begin(), plugin_barriers_.end(), name) ==
        plugin_barriers_.end()) {
      plugin_barriers_.push_back(name);
      log_.line(fmt::format("checkpoints now include the plugin barrier '{}'", name));
    }
  }
}

void CheckpointMachine::children_reported(const Client& client, const uint32_t* pids,
                                          size_t count) {
  if (!running_) return;
  running_->timing.messages++;
  std::vector<uint32_t>& children = running_->children[client.id];
  children.assign(pids, pids + count);
}

void CheckpointMachine::check_deadlines(Clock::time_point now) {
  if (running_ && running_->children_retry && *running_->children_retry <= now) {
    running_->children_retry.reset();
    start_barrier(Barrier::Children, running_->generation);
  }

  if (running_ && running_->deadline <= now) {
    RunningOp& op = *running_;
    if (!op.barrier.empty()) {
      std::vector<std::string> late;
      for (uint64_t id : op.members) {
        if (const Client* client = connections_.find(id); client != nullptr && is_pending(*client))
          late.push_back(client->describe());
      }
      if (late.empty()) late.push_back("a relay's processes");
      std::sort(late.begin(), late.end());
      std::string who = late.front();
      if (late.size() > 1) who += fmt::format(" and {} more", late.size() - 1);
      std::string why = fmt::format("the \"{}\" barrier timed out after {} s waiting for {}",
                                    op.barrier, options_.barrier_timeout, who);
      if (op.op.kind == OpKind::Checkpoint && !op.committed) {
        fail(why);
      } else {
        log_.line(why);
      }
      barrier_complete();
    } else if (op.waiting_for_exits) {
      std::string why =
          fmt::format("{} process{} did not exit within {} s of being told to", op.alive.size(),
                      op.alive.size() == 1 ? "" : "es", options_.kill_timeout);
      log_.line(why);
      if (op.op.kind == OpKind::Kill) {
        finish_op(false, {{"ok", false}, {"error", why}});
      } else {
        json body = op.success;
        body["warning"] = why;
        finish_op(true, body);
      }
    }
  }
}

std::optional<Clock::time_point> CheckpointMachine::next_deadline() const {
  std::optional<Clock::time_point> soonest;
  if (running_ && (!running_->barrier.empty() || running_->waiting_for_exits)) {
    soonest = running_->deadline;
  }
  if (running_ && running_->children_retry && (!soonest || *running_->children_retry < *soonest)) {
    soonest = *running_->children_retry;
  }
  return soonest;
}

bool CheckpointMachine::checkpoint_pending() const {
  return (running_ && running_->op.kind == OpKind::Checkpoint) ||
         std::any_of(queue_.begin(), queue_.end(),
                     [](const Operation& op) { return op.kind == OpKind::Checkpoint; });
}

void CheckpointMachine::note(const Client& client, const std::string& text) {
  constexpr size_t kMaxNotes = 64;  // the reply stays small whatever a computation says
  if (running_ && running_->alive.count(client.id) > 0 && running_->notes.size() < kMaxNotes)
    running_->notes.push_back(client.describe() + ": " + text);
}

bool CheckpointMachine::checkpointing(uint64_t client) const {
  return running_ && running_->op.kind == OpKind::Checkpoint && running_->alive.count(client) > 0;
}

const char* CheckpointMachine::state(bool any_process) const {
  if (running_ && running_->op.kind == OpKind::Checkpoint) return "checkpointing";
  if (running_ && running_->op.kind == OpKind::Restart) return "restarting";
  return any_process ? "running" : "idle";
}

}  // namespace stasis::coordinator
