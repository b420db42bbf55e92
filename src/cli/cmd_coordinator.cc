// `stasis coordinator`: runs the coordinator of one computation (see src/coordinator).
#include "cli/command.h"
#include "image/compression.h"
#include "coordinator/coordinator.h"

namespace stasis::cli {
namespace {

class CoordinatorCommand : public Command {
 public:
  const char* name() const override { return "coordinator"; }
  const char* summary() const override {
    return "Run the coordinator that checkpoints a computation (launch starts one for you)";
  }

  void configure(CLI::App& app) override {
    app.add_option("--port", options_.port, "TCP port to listen on; 0 picks a free one")
        ->capture_default_str();
    app.add_option("--host", options_.host, "Numeric address to listen on")->capture_default_str();
    app.add_option("--port-file", options_.port_file, "Write the port here once listening");
    app.add_option("--ckpt-dir", options_.ckpt_dir,
                   "Checkpoint directory (default: $STASIS_CKPT_DIR or ./stasis-ckpt)");
    app.add_option("--interval", options_.interval,
                   "Checkpoint every this many seconds (fractions allowed)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--compress", options_.compress,
                   "Image compression (default: $STASIS_COMPRESS or the processes' own)")
        ->check(CLI::IsMember(image::compression_names()));
    app.add_option("--keep", options_.keep,
                   "Keep only the newest N complete checkpoints, and delete incomplete ones "
                   "abandoned by a dead coordinator (0 keeps all)");
    app.add_option("--barrier-timeout", options_.barrier_timeout,
                   "Seconds to wait for every process at each barrier")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_flag("--daemon", options_.daemon, "Run in the background; return once it listens");
    app.add_option("--log", options_.log_file,
                   "Log file with --daemon (default: <ckpt-dir>/coordinator.log)");
    app.add_flag("--exit-when-idle", options_.exit_when_idle,
                 "Exit once every process that connected has gone");
    app.add_option("--restart-patience", options_.restart_patience,
                   "Seconds --exit-when-idle waits for the processes `stasis restart` announced")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  }

  int run() override { return coordinator::run_coordinator(options_); }

 private:
  coordinator::Options options_;
};

}  // namespace

std::unique_ptr<Command> make_coordinator_command() {
  return std::make_unique<CoordinatorCommand>();
}

}  // namespace stasis::cli
