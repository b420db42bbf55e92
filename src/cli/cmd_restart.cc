// `stasis restart [PATH]`: parses its options into a RestartOptions and hands them to the restart
// engine (src/restart/session.h), which verifies the checkpoint, rebuilds the processes and
// execs the restart loader in each.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <fmt/format.h>

#include "cli/checkpoint_on_signal.h"
#include "cli/command.h"
#include "cli/coord_client.h"
#include "common/error.h"
#include "coordinator/command_environment.h"
#include "restart/session.h"
#include "restart/slurm_allocation.h"
#include "plugins/mpi_split/restore_mpi_rank.h"

namespace fs = std::filesystem;

namespace stasis::cli {
namespace {

// --ib's library: softib's (as `launch --ib=soft` uses it) or the file given.
std::string verbs_library_path(const std::string& choice) {
  if (choice == "soft") return (fs::path(softib_library_dir()) / "libibverbs.so.1").string();
  std::error_code error;
  if (!fs::is_regular_file(choice, error))
    throw Error(fmt::format("--ib {}: expected 'soft' or the path of a verbs library (libibverbs.so.1)", choice));
  return fs::absolute(choice).lexically_normal().string();
}

class RestartCommand : public Command {
 public:
  const char* name() const override { return "restart"; }
  const char* summary() const override {
    return "Restart a computation from a checkpoint (the newest complete one by default)";
  }
  void configure(CLI::App& app) override {
    app.add_option("--coord", options_.coord, "Coordinator HOST:PORT (default $STASIS_COORD, in a Slurm allocation its first node:7781, else 127.0.0.1:7781)");
    app.add_option("--hosts", options_.hosts,
                   "For a computation that ran on several hosts: OLD=NEW,... restarts the processes of "
                   "host OLD (as MANIFEST.json lists it) on host NEW; others on their own host");
    app.add_option("--rsh", options_.rsh, "How to run a command on another host (default $STASIS_RSH or ssh)");
    app.add_option("--part", part_,
                   "(internal) restart only the part of the computation rooted at this process (VPID[@PID_SPACE])")
        ->group("");
    app.add_option("--task-parts", task_parts_,
                   "(internal) in a task of a Slurm job step: restart the part given for its rank, of P0,P1,... "
                   "(each VPID[@PID_SPACE])")
        ->group("");
    app.add_flag("--mpi-rank", mpi_rank_,
                 "Split-process MPI (src/plugins/mpi_split/README.md): run by an MPI launcher in each rank's "
                 "place (`mpirun -np N stasis restart --mpi-rank DIR`, or srun's, on any nodes), restores the "
                 "image of this rank, which starts a fresh MPI library under this launcher");
    app.add_option("--restart-id", options_.restart_id, "(internal) names this restart's meetings")->group("");
    app.add_flag("--lazy", options_.lazy,
                 "Map uncompressed memory without reading it first: the program runs again at once "
                 "and pages load as it touches them, but their checksums are not verified "
                 "(memory that is copied still is)");
    app.add_option("--clock", clock_,
                   "What the program's monotonic clocks (CLOCK_MONOTONIC, BOOTTIME and their RAW and "
                   "COARSE forms, and absolute deadlines on them) show after the restart: 'elapsed' "
                   "includes the time since the checkpoint, never going back; 'continue' "
                   "resumes them from their checkpoint values, as if no time had passed (a VM's "
                   "guest then sees no gap: no soft lockup). Default: 'continue' where the "
                   "computation holds a KVM virtual machine, 'elapsed' otherwise")
        ->check(CLI::IsMember({"elapsed", "continue"}));
    app.add_option("--setenv", options_.setenv,
                   "NAME=VALUE: every restarted process finds this in its environment (which is otherwise "
                   "the checkpoint's) before its plugins re-create their resources; repeatable")
        ->type_name("NAME=VALUE")
        ->allow_extra_args(false);  // one assignment per --setenv: PATH follows
    app.add_option("--ib", ib_library_,
                   "Re-create InfiniBand verbs objects over another verbs library than the checkpoint's: "
                   "'soft' (softib, for a host without InfiniBand) or the path of a libibverbs.so.1 "
                   "(see docs/infiniband.md)")
        ->type_name("soft|PATH");
    app.add_option("--checkpoint-on-signal", checkpoint_signal_,
                   "On this signal, checkpoint and stop the restarted computation, then exit with 128 + "
                   "its number (as `launch --checkpoint-on-signal`)")
        ->type_name("SIG");
    app.add_option("path", path_,
                   "A checkpoint directory, or the checkpoint root (default $STASIS_CKPT_DIR or ./stasis-ckpt)");
  }
  int run() override {
    std::optional<CheckpointOnSignal> on_signal;
    if (!checkpoint_signal_.empty()) on_signal.emplace(checkpoint_signal_);
    // The plugin reads it at its restart event, as any --setenv (remote parts get it so too).
    if (!ib_library_.empty()) options_.setenv.push_back("STASIS_IB_LIBRARY=" + verbs_library_path(ib_library_));
    // The X proxy of `launch --x11` reconnects to this X server (src/plugins/x11/README.md).
    const bool display_given = std::any_of(options_.setenv.begin(), options_.setenv.end(),
                                           [](const std::string& a) { return a.rfind("STASIS_X11_DISPLAY=", 0) == 0; });
    if (const char* display = getenv("DISPLAY"); display && *display && !display_given)
      options_.setenv.push_back(std::string("STASIS_X11_DISPLAY=") + display);
    if (!task_parts_.empty()) {
      options_.part = restart::part_of_this_task(task_parts_);
      const CommandEnvironment env = CommandEnvironment::read();
      std::vector<std::string> step = env.slurm_step;
      // A step in place of an srun a restarted process ran: the tasks name it again, first.
      if (!env.srun.empty()) step.insert(step.begin(), "STASIS_SRUN=" + env.srun);
      options_.setenv = restart::with_step_environment(step, options_.setenv);
    }
    if (!part_.empty()) options_.part = restart::parse_part_name(part_, "--part");
    options_.checkpoint = path_;
    options_.clock_continue = clock_ == "continue";
    options_.clock_chosen = !clock_.empty();
    if (options_.checkpoint.empty())
      options_.checkpoint = CommandEnvironment::read().ckpt_dir;
    if (options_.checkpoint.empty()) options_.checkpoint = "stasis-ckpt";
    if (mpi_rank_) {
      restart::MpiRankPart part = restart::mpi_rank_part(options_.checkpoint);
      options_.part = restart::PartName{part.vpid, part.space};
      options_.keep_fds = part.launcher_sockets;
      if (options_.restart_id.empty()) options_.restart_id = part.restart_id;
      // The launcher's variables first: the user's --setenv still wins.
      part.setenv.insert(part.setenv.end(), options_.setenv.begin(), options_.setenv.end());
      options_.setenv = std::move(part.setenv);
    }
    options_.loader = restart_loader_path();
    options_.coord = coordinator_address(options_.coord).str();
    if (on_signal) on_signal->fork_watcher(coord_address_from(options_.coord));
    restart::RestartSession(std::move(options_)).run();
  }

 private:
  restart::RestartOptions options_;
  std::string path_;        // the positional PATH
  std::string clock_;  // --clock; empty: continue for a computation holding a KVM VM, else elapsed
  std::string ib_library_;  // --ib soft|PATH
  std::string part_;        // --part VPID[@PID_SPACE]
  std::string task_parts_;  // --task-parts P0,P1,...
  bool mpi_rank_ = false;   // --mpi-rank
  std::string checkpoint_signal_;  // --checkpoint-on-signal SIG
};

}  // namespace

std::unique_ptr<Command> make_restart_command() { return std::make_unique<RestartCommand>(); }

}  // namespace stasis::cli
