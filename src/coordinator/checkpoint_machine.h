// The checkpoint state machine: runs one operation at a time (a checkpoint, a kill, the end of a
// restart) as the sequence of barriers protocol/barriers.h lays out, over a fixed set of
// processes: generations, images, commit or abort, MANIFEST.json and `latest`.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "coordinator/basics.h"
#include "coordinator/connections.h"
#include "coordinator/coordinator.h"
#include "coordinator/log.h"
#include "protocol/barriers.h"
#include "protocol/protocol.h"

namespace stasis::coordinator {

enum class OpKind { Checkpoint, Kill, Restart };

struct Operation {
  OpKind kind = OpKind::Checkpoint;
  bool kill_after = false;
  bool full = false;  // `checkpoint --full`: no incremental images
  StasisCompressionSetting compression = STASIS_COMPRESSION_DEFAULT;  // command override
  std::vector<uint64_t> waiters;  // command connections awaiting the reply
  uint64_t restart_generation = 0;
  std::vector<uint64_t> restart_members;
};

struct ImageResult {
  std::string path;
  uint64_t image_bytes = 0;
  uint64_t memory_bytes = 0;
  uint64_t parent_generation = 0;  // an incremental image builds on that generation's
  uint64_t checksum = 0;           // its END record's chain of record headers
  bool checked = false;            // its host's relay checked the file at "commit"
};

// Where a checkpoint's time goes, to tell coordinating from writing as the process count grows.
struct CheckpointTiming {
  // Seconds from the previous barrier's end (or the start) to each barrier's end, in the order
  // run: a repeated "children" barrier, with its waits, counts as one. They add up to the total.
  std::vector<std::pair<std::string, double>> barrier_seconds;
  Clock::time_point last_mark;
  uint64_t slowest_write_ns = 0;  // the longest any process took to write its image
  uint64_t messages = 0;          // barrier messages to and from processes: O(N) per checkpoint
  uint64_t aggregated_answers = 0;  // of those, answers a relay counted (kRelayEntryAllOfMine)
  // Barriers the coordinator sent once per relay, each relay giving it to its processes
  // (kRelayEntryFirstJoined): counted per process.
  uint64_t barriers_given_by_relays = 0;
  // Messages through the coordinator's sockets, from the start: O(hosts) when every process
  // joined through its host's relay (a relay's batch is one message), else as `messages`.
  uint64_t wire_messages_at_start = 0;

  void barrier_ended(const std::string& name);
  double write_seconds() const { return static_cast<double>(slowest_write_ns) / 1e9; }
};

// The operation in progress: a sequence of barriers over a fixed set of processes.
struct RunningOp {
  Operation op;
  std::vector<uint64_t> members;                     // in a stable order, for the manifest
  std::unordered_set<uint64_t> alive;                // members still connected
  protocol::Barrier step = protocol::Barrier::None;  // the barrier under way; None between
  std::string barrier;                               // its name on the wire; "" between barriers
  std::string state_during, state_after;             // a member's `state` while and after it runs
  // Who has not answered the barrier yet, counted without a set rebuilt per barrier: a member
  // asked in this round (Client::asked_round) that has not answered by name
  // (Client::answered_round) nor through its relay's aggregated answer (RelayRound).
  uint64_t round = 0;
  size_t unanswered = 0;
  // A relay's processes still to answer, by the ask (Client::asked_ask) they were asked in:
  // the relay's aggregated answer covers every ask up to the one it names.
  struct RelayRound {
    std::map<uint32_t, size_t> waiting_by_ask;
    uint32_t covered_up_to = 0;
  };
  std::unordered_map<uint64_t, RelayRound> relay_rounds;  // by the relay's client id
  // At "commit": the last ask up to which a relay's aggregated answer vouched for its processes'
  // images (STASIS_RELAY_ENTRY_IMAGE_CHECKED), by the relay's client id.
  std::unordered_map<uint64_t, uint32_t> images_checked_up_to;
  bool waiting_for_exits = false;                    // KILL sent; waiting for disconnects
  Clock::time_point deadline;                        // of the barrier or of the wait for exits
  std::string failure;  // the first failure, one line; "" = none so far
  uint64_t generation = 0;
  std::string generation_dir;
  int generation_lock = -1;  // flock on generation_dir while it is written (lock_generation)
  bool committed = false;    // MANIFEST.json and latest written
  bool resumed = false;      // "resume" done: the computation runs again
  bool aborting = false;     // failed before "resume": "commit" (abort=1) then ends it
  double pause_seconds = 0;  // from sending "suspend" until "resume" was done everywhere
  std::unordered_map<uint64_t, ImageResult> images;
  // Members that ended (exited, or exec'd) once their image was durable: the checkpoint holds
  // them as they were when it stopped the computation, so the manifest still lists them.
  std::unordered_map<uint64_t, Client> ended_after_image;
  CheckpointTiming timing;
  // Process trees: each member's live children (real pids) from the "children" barrier; the
  // barrier is repeated until every child is a member, so a child forked as the checkpoint began
  // joins it (late joiners are suspended and brought up to date). A repeat asks only the members
  // that have no answer here: the parents still missing a child, and late joiners.
  std::unordered_map<uint64_t, std::vector<uint32_t>> children;
  std::unordered_set<uint64_t> late_joiners;
  std::optional<Clock::time_point> children_retry;
  Clock::time_point children_deadline;
  // The computation is still being stopped: processes may join (and leave) the checkpoint.
  bool stopping() const {
    return step == protocol::Barrier::Suspend || step == protocol::Barrier::Children ||
           (step == protocol::Barrier::None && children_retry);
  }
  Clock::time_point started;
  nlohmann::json success;  // the reply once committed
  std::vector<std::string> notes;  // the members' own lines (STASIS_MSG_LOG), for the reply
};

class CheckpointMachine {
 public:
  CheckpointMachine(const Options& options, Connections& connections, const Log& log)
      : options_(options), connections_(connections), log_(log) {}

  // Before the first operation: the default compression, the port MANIFEST.json records, and
  // the newest checkpoint already in the directory.
  void start(StasisCompressionSetting compression, uint16_t port);

  // Queues an operation (identical checkpoints waiting their turn merge) and starts it if idle.
  void enqueue(Operation op);
  // A process joined: it takes part in a checkpoint that is still stopping the computation.
  void process_joined(Client& client);
  // A process left (the connection is closing).
  void process_left(const Client& client);
  // Messages from processes.
  // image_checked: the process's relay checked its image at "commit" (image_fault), so the
  // commit need not open it again.
  void barrier_done(Client& client, const StasisBarrierDone& done, bool image_checked = false);
  // A relay's aggregated answer (protocol/relay_batch.h, kRelayEntryAllOfMine): all `count` of
  // its processes asked this barrier that have not answered by name gave `done`.
  // `up_to_ask`: the last ask (StasisMsgHeader::reserved of a BARRIER) it covers.
  // images_checked: a "commit" whose processes' images the relay checked, each (image_fault).
  // At "children", each of them has no child (it sent no CHILDREN list: relay protocol 3).
  void relay_all_done(Client& relay, const StasisBarrierDone& done, uint32_t count, uint32_t up_to_ask,
                      bool images_checked = false);
  // A process's state for `stasis status`: its own, or its relay's aggregated answer's.
  const std::string& state_of(const Client& client) const;
  void children_reported(const Client& client, const uint32_t* pids, size_t count);
  // A line of a process's runtime: a member's goes into the reply of the operation under way.
  void note(const Client& client, const std::string& text);
  // The plugin barriers a process declares (comma-separated), added to every checkpoint.
  void learn_plugin_barriers(Client& client);
  // Barrier timeouts, the retry of "children", the wait for killed processes to end.
  void check_deadlines(Clock::time_point now);
  std::optional<Clock::time_point> next_deadline() const;

  bool idle() const { return !running_ && queue_.empty(); }
  bool checkpoint_pending() const;
  // A checkpoint under way that includes this process.
  bool checkpointing(uint64_t client) const;
  // "idle" / "running" / "checkpointing" / "restarting" for `stasis status`.
  const char* state(bool any_process) const;
  const nlohmann::json& last_checkpoint() const { return last_checkpoint_; }
  uint64_t checkpoints_done() const { return checkpoints_done_; }

 private:
  void start_next_op();
  void start_checkpoint();
  void start_kill();
  void start_restart();
  void check_children();
  void start_barrier(protocol::Barrier barrier, uint64_t arg, const std::string& plugin = "");
  // After `finished` (a step of the running sequence, or a plugin barrier): the next one.
  void start_next_barrier(protocol::Barrier finished, const std::string& finished_name);
  // ask: the ask it is counted in (mark_asked), 0 for a barrier no answer is counted for.
  void send_barrier(Client& client, const StasisBarrier& barrier, uint64_t arg, uint32_t ask);
  // The member is asked the barrier under way (in ask `ask`, sent with the barrier so that its
  // relay can name what its aggregated answer covers) / has answered it / is still to answer it.
  // count_in_relay false: the caller counts the relay's processes asked at once. False when it
  // was asked already.
  bool mark_asked(Client& client, uint32_t ask, bool count_in_relay = true);
  bool asks_all_joined_up_to(const Client& relay, size_t asked, uint64_t up_to_join);
  void mark_answered(Client& client);
  bool is_pending(const Client& client) const;
  // Its image was checked by its relay: named in its own answer, or in its relay's aggregated one.
  bool image_checked_by_relay(const Client& client, const ImageResult& image) const;
  void barrier_complete();
  void fail(const std::string& why);
  // How a checkpoint ends (checkpoint_commit.cc): dropped, or recorded in MANIFEST.json.
  void abandon_checkpoint();
  void remove_incomplete_generation();
  void commit_checkpoint();
  void kill_members();
  // A member of the running checkpoint, connected or ended after its image was saved.
  const Client& member(uint64_t id) const;
  void finish_op(bool ok, nlohmann::json body);

  static constexpr double kChildrenJoinPatienceSeconds = 20;
  static constexpr size_t kImagesListedInReply = 1000;

  const Options& options_;
  Connections& connections_;
  const Log& log_;
  // --compress / $STASIS_COMPRESS
  StasisCompressionSetting compression_ = STASIS_COMPRESSION_DEFAULT;
  uint16_t port_ = 0;
  std::deque<Operation> queue_;
  std::optional<RunningOp> running_;
  std::vector<std::string> plugin_barriers_;  // run between "drain" and "checkpoint"
  nlohmann::json last_checkpoint_ = nullptr;
  uint64_t checkpoints_done_ = 0;
  // The newest generation this coordinator completed: the parent incremental images may name.
  uint64_t newest_complete_ = 0;
  // Numbers each barrier sent (RunningOp::round), across operations.
  uint64_t rounds_ = 0;
  // Numbers each group of processes asked a counted barrier at once (never 0).
  uint32_t asks_ = 0;
  uint32_t next_ask() { return ++asks_ == 0 ? ++asks_ : asks_; }
};

}  // namespace stasis::coordinator
