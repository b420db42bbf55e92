// `stasis relay`: a host's relay for a computation's processes (see src/relay).
#include <fcntl.h>
#include <linux/close_range.h>
#include <unistd.h>

#include "cli/command.h"
#include "common/error.h"
#include "relay/relay.h"

namespace stasis::cli {
namespace {

class RelayCommand : public Command {
 public:
  const char* name() const override { return "relay"; }
  const char* summary() const override {
    return "Serve this host's processes of a computation: they join it, it talks to the "
           "coordinator for them in batches";
  }

  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_, "The coordinator's HOST:PORT (default: $STASIS_COORD)");
    app.add_option("--socket", options_.socket,
                   "Abstract socket name (default: one per user, coordinator and network "
                   "namespace); for stand-ins of several hosts on one machine");
    app.add_option("--log", options_.log_file, "Log file (default: standard error)");
    app.add_option("--hold", options_.hold_seconds,
                   "Seconds a barrier's answers wait for the host's slower processes")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_flag("--daemon", daemon_, "Run in the background (a new session); return at once");
  }

  int run() override {
    options_.coordinator = coord_address_from(coord_);
    if (daemon_) {
      pid_t child = fork();
      if (child < 0) throw Error("fork failed");
      if (child > 0) return 0;
      setsid();
      if (fork() != 0) _exit(0);
      // Nothing of its starter's stays open here (a program's pipe kept open would never see
      // end-of-file); its lines go to --log only.
      int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
      dup2(null_fd, STDIN_FILENO);
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
      close_range(3, ~0u, 0);
      if (chdir("/") != 0) _exit(1);
    }
    return relay::run_relay(options_);
  }

 private:
  relay::Options options_;
  std::string coord_;
  bool daemon_ = false;
};

}  // namespace

std::unique_ptr<Command> make_relay_command() { return std::make_unique<RelayCommand>(); }

}  // namespace stasis::cli
