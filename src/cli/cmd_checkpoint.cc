// `stasis checkpoint`: asks the coordinator for a checkpoint and waits until it is complete.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "image/compression.h"
#include "protocol/compression.h"
#include "cli/coord_client.h"
#include "cli/progress.h"
#include "common/error.h"

namespace fs = std::filesystem;

namespace stasis::cli {
namespace {

// The coordinator's checkpoint root ("" if it cannot say).
std::string checkpoint_root(const CoordAddress& address) {
  try {
    CoordConnection connection(address);
    StasisCommand command{};
    command.verb = STASIS_CMD_STATUS;
    bool ok = false;
    nlohmann::json status = nlohmann::json::parse(connection.command(command, ok), nullptr, false);
    if (!ok || !status.is_object() || !status["coordinator"].is_object()) return "";
    return status["coordinator"].value("ckpt_dir", "");
  } catch (const Error&) {
    return "";  // the checkpoint itself reports what is wrong
  }
}

// The highest-numbered generation under `root` (0 if none) and its directory.
std::pair<uint64_t, fs::path> newest_generation(const std::string& root) {
  std::error_code error;
  std::pair<uint64_t, fs::path> newest{0, {}};
  for (const auto& entry : fs::directory_iterator(root, error)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    if (uint64_t generation = std::stoull(name); generation > newest.first) newest = {generation, entry.path()};
  }
  return newest;
}

// Bytes of the images (finished or still being written) of a generation newer than `known`:
// the one the checkpoint in progress writes.
uint64_t bytes_written_after(const std::string& root, uint64_t known) {
  auto [generation, dir] = newest_generation(root);
  if (generation <= known) return 0;
  std::error_code error;
  uint64_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().string().find(".stasis") == std::string::npos) continue;
    std::error_code gone;  // renamed from .tmp meanwhile: counted at the next sample
    uint64_t size = entry.file_size(gone);
    if (!gone) bytes += size;
  }
  return bytes;
}

class CheckpointCommand : public Command {
 public:
  const char* name() const override { return "checkpoint"; }
  const char* summary() const override {
    return "Checkpoint a running computation; prints the checkpoint directory";
  }

  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_,
                   "Coordinator HOST:PORT (default: $STASIS_COORD, in a Slurm allocation its first node:7781, else 127.0.0.1:7781)");
    app.add_flag("--kill", kill_, "End the computation once the checkpoint is complete");
    app.add_flag("--full", full_, "Write full images, even for processes launched with --incremental");
    app.add_option("--compress", compress_, "Image compression for this checkpoint")
        ->check(CLI::IsMember(image::compression_names()));
  }

  int run() override {
    CoordAddress address = coordinator_address(coord_);
    // Progress on a terminal: the images growing in the generation being written.
    std::string ckpt_root = isatty(STDERR_FILENO) == 1 ? checkpoint_root(address) : "";
    uint64_t known = ckpt_root.empty() ? 0 : newest_generation(ckpt_root).first;
    ProgressSampler writing("stasis checkpoint: written", [&ckpt_root, known] {
      return ckpt_root.empty() ? 0 : bytes_written_after(ckpt_root, known);
    });
    CoordConnection connection(address);
    StasisCommand command{};
    command.verb = STASIS_CMD_CHECKPOINT;
    command.kill_after = kill_ ? 1 : 0;
    command.full = full_ ? 1 : 0;
    StasisCompressionSetting compression = STASIS_COMPRESSION_DEFAULT;
    protocol::compression_from_name(compress_, &compression);  // checked by --compress
    command.compression = compression;
    bool ok = false;
    std::string text = connection.command(command, ok);
    writing.stop();
    nlohmann::json reply = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!reply.is_object())
      throw Error(fmt::format("unexpected answer from the coordinator: {}", text));
    // What the processes' runtimes said during the checkpoint (never on the program's output).
    if (reply.contains("notes") && reply["notes"].is_array()) {
      for (const auto& note : reply["notes"])
        if (note.is_string()) fmt::print(stderr, "stasis checkpoint: {}\n", note.get<std::string>());
    }
    if (!ok) throw Error(reply.value("error", "the checkpoint failed"));
    if (reply.contains("warning")) {
      fmt::print(stderr, "stasis checkpoint: warning: {}\n", reply["warning"].get<std::string>());
    }
    fmt::print("{}\n", reply.value("dir", ""));
    return 0;
  }

 private:
  std::string coord_;
  bool kill_ = false;
  bool full_ = false;
  std::string compress_;
};

}  // namespace

std::unique_ptr<Command> make_checkpoint_command() { return std::make_unique<CheckpointCommand>(); }

}  // namespace stasis::cli
