// Placeholder until the real implementation lands.
#include "cli/command.h"
#include "common/error.h"
namespace stasis::cli {
namespace {
class InspectCommand : public Command {
 public:
  const char* name() const override { return "inspect"; }
  const char* summary() const override { return "(not yet implemented)"; }
  void configure(CLI::App&) override {}
  int run() override { throw Error("inspect is not implemented yet"); }
};
}  // namespace
std::unique_ptr<Command> make_inspect_command() { return std::make_unique<InspectCommand>(); }
}  // namespace stasis::cli
