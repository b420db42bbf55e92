// srun talks to slurmctld and slurmd over TCP and its tasks are started by slurmstepd, a root
// daemon: they are not srun's children, and srun's connections lead out of the computation, so
// a restarted srun could do nothing useful. srun therefore never joins; its environment, which
// Slurm hands to every task (--export=ALL, the default), carries the runtime and the launch's
// STASIS_* variables, with STASIS_LAUNCH_PID replaced by a mark. A task seeing the mark is the
// launched process of its own tree: what it inherited from slurmstepd (its standard streams)
// is outside the computation, as a launched program's inheritance from its shell is.
// An srun that a process of the computation ran (a launched script's `srun`) is that process's
// child: its tasks carry srun's pids (STASIS_SRUN) and report them when they join, so that the
// coordinator takes srun for the outside end of those tasks at the "children" barrier and the
// restart replaces it with a new job step (docs/clusters.md, Slurm).
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fixed_text.h"
#include "runtime/rt.h"
#include "runtime/settings.h"
#include "plugins/launchers/slurm_tasks.h"
#include "stasis/plugin.h"

namespace stasis::rt {
namespace {
constexpr const char kSrunTaskMark[] = "srun-task";

// MPI under Slurm (srun --mpi=pmi2, --mpi=pmix) connects each task to a PMI server inside
// slurmstepd: a socket it inherits (PMI_FD), or PMIx's socket and shared-memory store in
// slurmd's spool. A restarted task would find no server there (seen: MPICH's MPI_Finalize fails
// on its PMI barrier; Open MPI's store is gone), so such a task refuses every checkpoint.
char g_pmi_refusal[200];

// In the launched process of a task of an srun run by a process of the computation: srun's real
// pid, its parent's, and their virtual pids (STASIS_SRUN). Zero elsewhere.
uint32_t g_srun_of_task[4];

bool is_launched_task(const char* launch_pid) {
  return g_settings.slurm_step_id.set && launch_pid &&
         (str_eq(launch_pid, kSrunTaskMark) || atol(launch_pid) == sys_getpid());
}

// A constructor, before main: it may run before or after the runtime's own (adopt_srun_task).
__attribute__((constructor)) void note_slurm_pmi_server() {
  const char* launch_pid = g_settings.launch_pid.or_else(nullptr);
  // Only the task itself holds slurmstepd's end; a process it starts (an MPI rank of a launcher
  // that is part of the computation) talks to a server inside the computation.
  if (!is_launched_task(launch_pid)) return;
  if (const char* fd = g_settings.pmi_fd.or_else(nullptr)) {
    FixedText(g_pmi_refusal, sizeof g_pmi_refusal)
        << "descriptor " << fd
        << ": PMI connection to slurmstepd (srun --mpi=pmi2), which a restarted task cannot reach";
  } else if (g_settings.pmix_namespace.set) {
    FixedText(g_pmi_refusal, sizeof g_pmi_refusal)
        << "PMIx server of slurmstepd (srun --mpi=pmix): its connection and shared-memory store "
           "cannot be restored";
  }
}

int on_event(stasis_event_t event, const stasis_event_data_t*, void*) {
  if (event == STASIS_EVENT_PRE_SUSPEND && g_pmi_refusal[0]) {
    stasis_plugin_refuse(g_pmi_refusal);
    return 1;
  }
  return 0;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "slurm", on_event, nullptr, nullptr};

__attribute__((constructor)) void register_slurm_plugin() { stasis_register_plugin(&g_plugin); }
}  // namespace

bool srun_stays_outside() {
  if (!str_eq(program_invocation_short_name, "srun")) return false;
  const char* launch_pid = g_settings.launch_pid.or_else(nullptr);
  if (launch_pid && !str_eq(launch_pid, kSrunTaskMark) && atol(launch_pid) != sys_getpid()) {
    // Run by a process of the computation, whose child it is (fork joined it, exec left it).
    attach_pid_table();
    const long pid = sys_getpid(), parent = STASIS_SYS0(SYS_getppid);
    char text[64] = {};
    FixedText(text, sizeof text) << static_cast<unsigned long>(pid) << ":" << static_cast<unsigned long>(parent)
                                 << ":" << static_cast<unsigned long>(virtual_pid_of(pid)) << ":"
                                 << static_cast<unsigned long>(virtual_pid_of(parent));
    setenv("STASIS_SRUN", text, 1);
  } else {
    unsetenv("STASIS_SRUN");  // the launched program, or run by a task: its tasks are plain ones
  }
  setenv("STASIS_LAUNCH_PID", kSrunTaskMark, 1);  // before main: srun reads its environment later
  return true;
}

bool adopt_srun_task(const char* launch_pid) {
  if (!str_eq(launch_pid, kSrunTaskMark)) return false;
  char own[24];
  format_uint(own, static_cast<unsigned long>(sys_getpid()));
  setenv("STASIS_LAUNCH_PID", own, 1);  // what the processes this task starts see
  return true;
}

void describe_srun_of_task(StasisProcessInfo& info) {
  // Read at the first join (in the checkpoint thread, which the runtime's constructor may start
  // before this file's constructors run), and said only by that process: a child it forks has
  // its own virtual pid, a restarted task the one it had. Read again when a restart changed it
  // (the job step in srun's place names its own srun and parent).
  static bool noted = false, launched_task = false;
  static uint32_t noted_for = 0;
  static char noted_text[sizeof g_settings.srun.text];
  if (!noted) {
    noted = true;
    noted_for = g_config.original_pid;
    launched_task = is_launched_task(g_settings.launch_pid.or_else(nullptr));
  }
  if (launched_task && g_config.original_pid == noted_for && !str_eq(noted_text, g_settings.srun.text)) {
    str_copy(noted_text, g_settings.srun.text, sizeof noted_text);
    for (uint32_t& pid : g_srun_of_task) pid = 0;
    if (const char* srun = g_settings.srun.or_else(nullptr)) {
      const char* at = srun;
      for (uint32_t& pid : g_srun_of_task) {
        char* end = nullptr;
        pid = static_cast<uint32_t>(strtoul(at, &end, 10));
        at = *end == ':' ? end + 1 : end;
      }
      if (*at || !g_srun_of_task[0] || !g_srun_of_task[2]) {  // refused whole: half a record would mislead
        LogLine line;
        (line << "STASIS_SRUN=" << srun << " is malformed; this task's srun is unknown").emit();
        for (uint32_t& pid : g_srun_of_task) pid = 0;
      }
    }
  }
  if (g_config.original_pid != noted_for) return;
  info.srun_pid = g_srun_of_task[0];
  info.srun_parent_pid = g_srun_of_task[1];
  info.srun_vpid = g_srun_of_task[2];
  info.srun_parent_vpid = g_srun_of_task[3];
}

}  // namespace stasis::rt
