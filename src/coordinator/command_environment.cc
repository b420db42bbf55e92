#include "coordinator/command_environment.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace stasis {

CommandEnvironment CommandEnvironment::read() {
  auto value = [](const char* name) {
    const char* text = std::getenv(name);
    return std::string(text ? text : "");
  };
  CommandEnvironment env;
  env.coord = value("STASIS_COORD");
  env.secret = value("STASIS_SECRET");
  env.runtime_dir = value("STASIS_RUNTIME_DIR");
  env.ckpt_dir = value("STASIS_CKPT_DIR");
  env.compress = value("STASIS_COMPRESS");
  env.plugins = value("STASIS_PLUGINS");
  env.ib = value("STASIS_IB");
  env.rsh = value("STASIS_RSH");
  env.progress_delay_ms = value("STASIS_PROGRESS_DELAY_MS");
  env.test_clock_shift_ns = value("STASIS_TEST_CLOCK_SHIFT_NS");
  env.slurm_job_nodelist = value("SLURM_JOB_NODELIST");
  env.slurm_procid = value("SLURM_PROCID");
  env.srun = value("STASIS_SRUN");
  for (char** assignment = environ; *assignment; assignment++) {
    std::string_view text(*assignment);
    if (text.starts_with("SLURM_") || text.starts_with("SLURMD_")) env.slurm_step.emplace_back(text);
  }
  return env;
}

}  // namespace stasis
