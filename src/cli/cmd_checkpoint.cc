// `stasis checkpoint`: asks the coordinator for a checkpoint and waits until it is complete.
#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "image/compression.h"
#include "cli/coord_client.h"
#include "common/error.h"

namespace stasis::cli {
namespace {

class CheckpointCommand : public Command {
 public:
  const char* name() const override { return "checkpoint"; }
  const char* summary() const override {
    return "Checkpoint a running computation; prints the checkpoint directory";
  }

  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_,
                   "Coordinator HOST:PORT (default: $STASIS_COORD or 127.0.0.1:7781)");
    app.add_flag("--kill", kill_, "End the computation once the checkpoint is complete");
    app.add_flag("--full", full_, "Write full images, even for processes launched with --incremental");
    app.add_option("--compress", compress_, "Image compression for this checkpoint")
        ->check(CLI::IsMember(image::compression_names()));
  }

  int run() override {
    CoordConnection connection(coord_address_from(coord_));
    StasisCommand command{};
    command.verb = STASIS_CMD_CHECKPOINT;
    command.kill_after = kill_ ? 1 : 0;
    command.full = full_ ? 1 : 0;
    strncpy(command.compress, compress_.c_str(), sizeof command.compress - 1);
    bool ok = false;
    std::string text = connection.command(command, ok);
    nlohmann::json reply = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!reply.is_object())
      throw Error(fmt::format("unexpected answer from the coordinator: {}", text));
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
