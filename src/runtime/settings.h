// The runtime's settings: every environment variable the preloaded runtime and its built-in
// plugins read, read once when the runtime is loaded (before any other constructor of it runs),
// into fixed buffers, from the environment block itself (no getenv: a shell's own getenv finds
// nothing before it has set up its variables). Nothing reads the environment after that: the
// checkpoint path must not (a stopped thread may be inside setenv), and a restarted process keeps
// the settings it was launched with (they are restored with its memory; `restart --setenv`
// changes the program's environment, and of these settings only the ones marked so below).
// What a user sets is described in docs/user-guide.md (Environment variables); the rest is set
// by `stasis launch` or by the runtime for the processes a process starts.
#pragma once
#include <stddef.h>

#include "image/format.h"  // STASIS_IMAGE_PATH_MAX

namespace stasis::rt {

// One variable's value as read: `set` false when the environment did not name it.
template <size_t kCapacity>
struct Setting {
  bool set = false;
  char text[kCapacity] = {};
  // The value, or `fallback` when unset.
  const char* or_else(const char* fallback) const { return set ? text : fallback; }
};

struct Settings {
  // Joining the computation (`stasis launch`): without both, the process runs without checkpoints.
  Setting<128> coord;        // STASIS_COORD: HOST:PORT of the coordinator
  Setting<24> launch_pid;    // STASIS_LAUNCH_PID: pid of the process `stasis launch` started
  Setting<72> secret;        // STASIS_SECRET: the computation's secret, hex
  // How checkpoints are taken.
  Setting<STASIS_IMAGE_PATH_MAX> ckpt_dir;  // STASIS_CKPT_DIR: checkpoint root
  Setting<16> compress;                     // STASIS_COMPRESS: zstd (default), lz4, none
  Setting<16> compress_threads;             // STASIS_COMPRESS_THREADS: compressing threads, 1..16
  Setting<32> interval;                     // STASIS_INTERVAL: seconds between checkpoints (launch --interval)
  Setting<8> forked_checkpoint;             // STASIS_FORKED_CHECKPOINT: 0 writes images in place
  Setting<8> incremental;                   // STASIS_INCREMENTAL: 1 for incremental images
  Setting<16> full_every;                   // STASIS_FULL_EVERY: a full image after this many increments
  Setting<16> signal;                       // STASIS_SIGNAL: the signal that stops threads
  Setting<4096> plugins;                    // STASIS_PLUGINS: plugin libraries, ':'-separated
  // Descriptors.
  Setting<STASIS_IMAGE_PATH_MAX> save_files;  // STASIS_SAVE_FILES: glob of files whose bytes are saved
  Setting<STASIS_IMAGE_PATH_MAX> tmpdir;      // TMPDIR: where temporary files are (saved_files)
  Setting<8> x11_proxy;  // STASIS_X11_PROXY: 1 in stasis-x11-proxy, whose X connections are its own (../plugins/x11)
  // Set by the launched process for the ones it starts: what it inherited from outside.
  Setting<2048> outside_processes;  // STASIS_OUTSIDE_PROCESSES: "PID:START_TIME,..." of its ancestors
  Setting<2048> external_inodes;    // STASIS_EXTERNAL_INODES: "FD:INODE_KEY,..." of inherited descriptors
  // Launching on other hosts (../plugins/launchers, ../plugins/ssh): what the remote command
  // line carries and which programs are remote launchers.
  Setting<STASIS_IMAGE_PATH_MAX> exe;          // STASIS_EXE: the stasis command, for remote commands
  Setting<8> ssh_relay;                        // STASIS_SSH_RELAY: 0 keeps ssh's plain rewrite
  Setting<8> relay;                            // STASIS_RELAY: 1 joins through this host's relay
  Setting<STASIS_IMAGE_PATH_MAX> runtime_dir;  // STASIS_RUNTIME_DIR: where the secret file is
  Setting<256> ib;                             // STASIS_IB: the verbs plugin's mode (launch --ib)
  Setting<1024> remote_launchers;              // STASIS_REMOTE_LAUNCHERS: more launcher names
  Setting<1024> ompi_rsh_agent;                // OMPI_MCA_plm_rsh_agent: Open MPI's launcher
  Setting<STASIS_IMAGE_PATH_MAX> hydra_launcher_exec;  // HYDRA_LAUNCHER_EXEC: MPICH's launcher
  // Slurm (../plugins/launchers/slurm_tasks.cc): is this a step's task talking to a PMI server?
  Setting<32> slurm_step_id;    // SLURM_STEP_ID
  Setting<16> pmi_fd;           // PMI_FD (srun --mpi=pmi2)
  Setting<512> pmix_namespace;  // PMIX_NAMESPACE (srun --mpi=pmix; PMIx names are < 256 bytes)
  // Set by an srun a process of the computation ran, for its tasks: "PID:PARENT:VPID:PARENT_VPID"
  // (srun's and its parent's real and virtual pids); read again after a restart, from the job
  // step that took srun's place.
  Setting<64> srun;             // STASIS_SRUN
  // Read again after a restart, from `restart --setenv` (restart --ib): plugins ask for it by
  // name (stasis_plugin_setting, include/stasis/plugin.h).
  Setting<STASIS_IMAGE_PATH_MAX> ib_library;  // STASIS_IB_LIBRARY: the verbs library to re-create over
};
extern Settings g_settings;

// The value read from variable `name` (null when unset); *known, when given, says whether `name`
// is one of the settings at all (a caller forwarding a list of names checks that it is).
const char* setting_named(const char* name, bool* known = nullptr);

// After a restart: the settings marked above as read again take their value from the
// `restart --setenv` assignments (NUL-separated, an empty one ends them), if they name one.
void update_settings_after_restart(const char* setenv_entries);

}  // namespace stasis::rt
