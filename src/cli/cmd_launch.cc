// Placeholder until the real implementation lands.
#include "cli/command.h"
#include "common/error.h"
namespace stasis::cli {
namespace {
class LaunchCommand : public Command {
 public:
  const char* name() const override { return "launch"; }
  const char* summary() const override { return "(not yet implemented)"; }
  void configure(CLI::App&) override {}
  int run() override { throw Error("launch is not implemented yet"); }
};
}  // namespace
std::unique_ptr<Command> make_launch_command() { return std::make_unique<LaunchCommand>(); }
}  // namespace stasis::cli
