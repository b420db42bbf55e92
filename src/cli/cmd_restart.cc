// Placeholder until the real implementation lands.
#include "cli/command.h"
#include "common/error.h"
namespace stasis::cli {
namespace {
class RestartCommand : public Command {
 public:
  const char* name() const override { return "restart"; }
  const char* summary() const override { return "(not yet implemented)"; }
  void configure(CLI::App&) override {}
  int run() override { throw Error("restart is not implemented yet"); }
};
}  // namespace
std::unique_ptr<Command> make_restart_command() { return std::make_unique<RestartCommand>(); }
}  // namespace stasis::cli
