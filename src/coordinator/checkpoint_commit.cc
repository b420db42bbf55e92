// See checkpoint_machine.h: the end of a checkpoint, apart from the sequence that leads to it
// (checkpoint_machine.cc): commit (MANIFEST.json checked and written, `latest`, the reply and
// its figures, pruning) or abandon (the incomplete generation removed, the computation resumed).
#include <fmt/format.h>
#include <time.h>

#include <filesystem>

#include "common/error.h"
#include "coordinator/checkpoint_machine.h"
#include "coordinator/checkpoint_store.h"

namespace stasis::coordinator {

using nlohmann::json;
using protocol::Barrier;

namespace {

// The name of the file `path` names if it is directly in `dir`, else nullopt. The common case
// (the generation directory, a slash, a name) without std::filesystem: it runs once per process.
std::optional<std::string> file_name_in(const std::string& path, const std::string& dir) {
  namespace fs = std::filesystem;
  if (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/' &&
      path.find('/', dir.size() + 1) == std::string::npos)
    return path.substr(dir.size() + 1);
  if (fs::path(path).parent_path().lexically_normal() != fs::path(dir).lexically_normal())
    return std::nullopt;
  return fs::path(path).filename().string();
}

}  // namespace

// The computation keeps running; the partial generation disappears.
void CheckpointMachine::abandon_checkpoint() {
  RunningOp& op = *running_;
  remove_incomplete_generation();
  if (op.resumed) {  // only "commit" can fail after "resume": nothing is left to run
    finish_op(false, {{"ok", false}, {"error", op.failure}});
    return;
  }
  log_.line(fmt::format("checkpoint {} failed after {:.3f} s; resuming", op.generation,
                        seconds_since(op.started)));
  op.aborting = true;
  start_barrier(Barrier::Resume, op.generation);
}

void CheckpointMachine::remove_incomplete_generation() {
  RunningOp& op = *running_;
  if (!remove_tree(op.generation_dir)) {
    log_.line(fmt::format("could not remove the incomplete checkpoint {}", op.generation_dir));
  }
}

void CheckpointMachine::commit_checkpoint() {
  RunningOp& op = *running_;
  Manifest manifest;
  manifest.generation = op.generation;
  manifest.unix_time = time(nullptr);
  manifest.coordinator_host = options_.host;
  manifest.coordinator_port = port_;
  json images = json::array();
  uint64_t image_bytes = 0;
  uint64_t memory_bytes = 0;
  size_t checked_by_relays = 0;
  std::string fault;
  for (uint64_t id : op.members) {
    const Client& client = member(id);
    auto found = op.images.find(id);
    static const ImageResult kNoImage;
    const ImageResult& image = found != op.images.end() ? found->second : kNoImage;
    bool checked = !image.path.empty() && image_checked_by_relay(client, image);
    std::string path = image.path;
    if (!path.empty() && path.front() != '/') path = op.generation_dir + "/" + path;
    std::optional<std::string> file_name = file_name_in(path, op.generation_dir);
    if (fault.empty() && !file_name)
      fault = fmt::format("{} reported the image '{}', which is not in {}", client.describe(),
                          image.path, op.generation_dir);
    manifest.processes.push_back(
        ManifestProcess{.pid = client.info.pid,
                        .original_pid = client.info.original_pid,
                        .host = bounded(client.info.hostname, sizeof client.info.hostname),
                        .address = client.peer.substr(0, client.peer.rfind(':')),
                        .program = bounded(client.info.program, sizeof client.info.program),
                        .image = file_name.value_or(""),
                        .image_bytes = image.image_bytes,
                        .memory_bytes = image.memory_bytes,
                        .parent_generation = image.parent_generation,
                        .image_checksum = image.checksum,
                        .srun_vpid = client.info.srun_vpid,
                        .srun_parent_vpid = client.info.srun_parent_vpid,
                        .pid_space = bounded(client.info.virtual_pid_space,
                                             sizeof client.info.virtual_pid_space),
                        .image_checked = checked});
    // The reply lists at most kImagesListedInReply (MANIFEST.json has them all).
    if (images.size() < kImagesListedInReply) images.push_back(path);
    checked_by_relays += checked ? 1 : 0;
    image_bytes += image.image_bytes;
    memory_bytes += image.memory_bytes;
  }
  manifest.seconds = round_ms(seconds_since(op.started));
  // Never reported complete unless every file the manifest names is there, whole.
  if (fault.empty()) fault = manifest_fault(options_.ckpt_dir, manifest);
  if (!fault.empty()) {
    fail(fmt::format("checkpoint {} is not complete: {}", op.generation, fault));
    abandon_checkpoint();
    return;
  }
  try {
    write_manifest(options_.ckpt_dir, manifest);
    point_latest(options_.ckpt_dir, op.generation);
  } catch (const Error& e) {
    fail(fmt::format("checkpoint {} could not be recorded: {}", op.generation, e.what()));
    abandon_checkpoint();
    return;
  }
  op.committed = true;
  newest_complete_ = op.generation;
  checkpoints_done_++;
  last_checkpoint_ = {{"generation", op.generation},
                      {"dir", op.generation_dir},
                      {"unix_time", manifest.unix_time},
                      {"seconds", manifest.seconds}};
  uint64_t coordinator_messages = connections_.wire_messages() - op.timing.wire_messages_at_start;
  op.success = {{"ok", true},
                {"generation", op.generation},
                {"dir", op.generation_dir},
                {"images", std::move(images)},
                {"image_count", op.members.size()},
                {"seconds", manifest.seconds},
                {"image_bytes", image_bytes},
                {"memory_bytes", memory_bytes},
                {"pause_seconds", op.pause_seconds},
                {"write_seconds", round_ms(op.timing.write_seconds())},
                {"coordination_seconds", round_ms(manifest.seconds - op.timing.write_seconds())},
                {"messages", op.timing.messages},
                {"coordinator_messages", coordinator_messages},
                {"images_checked_by_relays", checked_by_relays}};
  // The reply is one message (at most STASIS_MAX_PAYLOAD): tens of thousands of paths do not
  // fit, and MANIFEST.json lists them all anyway.
  if (op.members.size() > kImagesListedInReply) op.success["images_listed"] = kImagesListedInReply;
  json barrier_seconds = json::object();
  std::string barrier_times;
  for (const auto& [name, seconds] : op.timing.barrier_seconds) {
    barrier_seconds[name] = round_ms(seconds);
    barrier_times += fmt::format("{}{} {:.3f}", barrier_times.empty() ? "" : ", ", name, seconds);
  }
  op.success["barrier_seconds"] = barrier_seconds;
  // One line per checkpoint, never one per process: bench/coordination_time.py reads it.
  log_.line(fmt::format(
      "checkpoint {} timing: {} process{}, {} messages; barriers (s): {}; "
      "slowest image write {:.3f} s; coordination {:.3f} s; {} messages at the coordinator's sockets",
      op.generation, op.members.size(), op.members.size() == 1 ? "" : "es", op.timing.messages,
      barrier_times, op.timing.write_seconds(), manifest.seconds - op.timing.write_seconds(),
      coordinator_messages));
  log_.line(
      fmt::format("checkpoint {} complete in {:.3f} s (computation paused {:.3f} s): {} image{}, "
                  "{} bytes written, {} bytes of memory; {} image{} checked by their hosts' relays; "
                  "{} answers counted in relays' aggregates; {} barriers given by relays to all their "
                  "processes at once",
                  op.generation, manifest.seconds, op.pause_seconds, op.members.size(),
                  op.members.size() == 1 ? "" : "s", image_bytes, memory_bytes, checked_by_relays,
                  checked_by_relays == 1 ? "" : "s", op.timing.aggregated_answers,
                  op.timing.barriers_given_by_relays));
  for (uint64_t removed : prune_generations(options_.ckpt_dir, options_.keep)) {
    log_.line(fmt::format("removed generation {} (--keep {})", removed, options_.keep));
  }
  for (uint64_t removed : prune_incomplete_generations(options_.ckpt_dir, options_.keep)) {
    log_.line(fmt::format("removed incomplete generation {}, left by a checkpoint that never "
                          "ended (--keep {})",
                          removed, options_.keep));
  }
  if (op.op.kill_after) {
    kill_members();
  } else {
    finish_op(true, op.success);
  }
}

}  // namespace stasis::coordinator
