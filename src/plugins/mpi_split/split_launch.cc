// The launcher outside, the ranks inside (split_launch.h). Read once, in the runtime's
// constructor, before the program runs: the environment is the launcher's.
#include "plugins/mpi_split/split_launch.h"

#include <stdlib.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "runtime/settings.h"

namespace stasis::rt {
namespace {
bool is_mpi_rank() {
  return getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK") || getenv("PMIX_RANK");
}

bool under_mark(const char* launch_pid) { return launch_pid && str_eq(launch_pid, kMpiRankMark); }
}  // namespace

bool mpi_launcher_stays_outside() {
  return under_mark(g_settings.launch_pid.or_else(nullptr)) && !is_mpi_rank();
}

bool adopt_mpi_rank(const char* launch_pid) {
  if (!under_mark(launch_pid) || !is_mpi_rank()) return false;
  char own[24];
  format_uint(own, static_cast<unsigned long>(sys_getpid()));
  setenv("STASIS_LAUNCH_PID", own, 1);  // what the processes this rank starts see
  return true;
}
}  // namespace stasis::rt
