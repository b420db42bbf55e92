// The environment variables the `stasis` command reads (its subcommands, the restart engine and
// the coordinator), each named here once; an empty one counts as unset. Read when asked, not
// kept: `stasis launch` sets several of them for the program it starts, and tests set them in
// the process. The preloaded runtime's are in src/runtime/settings.h; what a user sets is
// described in docs/user-guide.md (Environment variables).
#pragma once
#include <string>
#include <vector>

namespace stasis {

struct CommandEnvironment {
  std::string coord;        // STASIS_COORD: HOST:PORT or PORT of the coordinator
  std::string secret;       // STASIS_SECRET: the computation's secret (64 hex digits), not its file's
  std::string runtime_dir;  // STASIS_RUNTIME_DIR: where the secret files are (default $HOME/.stasis)
  std::string ckpt_dir;     // STASIS_CKPT_DIR: the checkpoint root (default ./stasis-ckpt)
  std::string compress;     // STASIS_COMPRESS: zstd, lz4 or none
  std::string plugins;      // STASIS_PLUGINS: plugin libraries, ':'-separated (launch --plugin adds)
  std::string ib;           // STASIS_IB: the --ib of the launch a remote launcher comes from
  std::string rsh;          // STASIS_RSH: the remote shell of a restart on several hosts (default ssh)
  std::string progress_delay_ms;    // STASIS_PROGRESS_DELAY_MS: before progress is drawn (default 500)
  std::string test_clock_shift_ns;  // STASIS_TEST_CLOCK_SHIFT_NS: test hook, restart's clocks N ns behind
  // Inside a Slurm allocation (src/restart/slurm_allocation.h): where a restart's tasks go.
  std::string slurm_job_nodelist;  // SLURM_JOB_NODELIST: the allocation's nodes
  std::string slurm_procid;        // SLURM_PROCID: this task's rank in its job step
  std::string srun;                // STASIS_SRUN: in a restarted task's step, the srun it replaces
  std::vector<std::string> slurm_step;  // every SLURM_* and SLURMD_* as NAME=VALUE: the job step it runs in

  static CommandEnvironment read();
};

}  // namespace stasis
