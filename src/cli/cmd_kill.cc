// `stasis kill`: ends every process of the computation (no checkpoint; see checkpoint --kill).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/coord_client.h"
#include "common/error.h"

namespace stasis::cli {
namespace {

class KillCommand : public Command {
 public:
  const char* name() const override { return "kill"; }
  const char* summary() const override { return "End every process of a computation"; }

  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_,
                   "Coordinator HOST:PORT (default: $STASIS_COORD, in a Slurm allocation its first node:7781, else 127.0.0.1:7781)");
  }

  int run() override {
    CoordConnection connection(coordinator_address(coord_));
    StasisCommand command{};
    command.verb = STASIS_CMD_KILL;
    bool ok = false;
    std::string text = connection.command(command, ok);
    nlohmann::json reply = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!reply.is_object())
      throw Error(fmt::format("unexpected answer from the coordinator: {}", text));
    if (!ok) throw Error(reply.value("error", "kill failed"));
    size_t killed = reply.value("killed", size_t{0});
    fmt::print("ended {} process{}\n", killed, killed == 1 ? "" : "es");
    return 0;
  }

 private:
  std::string coord_;
};

}  // namespace

std::unique_ptr<Command> make_kill_command() { return std::make_unique<KillCommand>(); }

}  // namespace stasis::cli
