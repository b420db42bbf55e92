// The runtime's settings (settings.h), read from the environment block once, at load time.
#include "runtime/settings.h"

#include "runtime/rt.h"

extern char** environ;

namespace stasis::rt {

constinit Settings g_settings;  // zeroed before any constructor: read_settings fills it

namespace {

// One row per variable: where its value goes. The order is settings.h's.
struct SettingRow {
  const char* name;
  bool* set;
  char* text;
  size_t capacity;
  bool after_restart;  // restart --setenv may change it (update_settings_after_restart)
};

template <size_t kCapacity>
constexpr SettingRow row(const char* name, Setting<kCapacity>& setting, bool after_restart = false) {
  return {name, &setting.set, setting.text, kCapacity, after_restart};
}

const SettingRow kRows[] = {
    row("STASIS_COORD", g_settings.coord),
    row("STASIS_LAUNCH_PID", g_settings.launch_pid),
    row("STASIS_SECRET", g_settings.secret),
    row("STASIS_CKPT_DIR", g_settings.ckpt_dir),
    row("STASIS_COMPRESS", g_settings.compress),
    row("STASIS_COMPRESS_THREADS", g_settings.compress_threads),
    row("STASIS_INTERVAL", g_settings.interval),
    row("STASIS_FORKED_CHECKPOINT", g_settings.forked_checkpoint),
    row("STASIS_INCREMENTAL", g_settings.incremental),
    row("STASIS_FULL_EVERY", g_settings.full_every),
    row("STASIS_SIGNAL", g_settings.signal),
    row("STASIS_PLUGINS", g_settings.plugins),
    row("STASIS_SAVE_FILES", g_settings.save_files),
    row("TMPDIR", g_settings.tmpdir),
    row("STASIS_X11_PROXY", g_settings.x11_proxy),
    row("STASIS_OUTSIDE_PROCESSES", g_settings.outside_processes),
    row("STASIS_EXTERNAL_INODES", g_settings.external_inodes),
    row("STASIS_EXE", g_settings.exe),
    row("STASIS_SSH_RELAY", g_settings.ssh_relay),
    row("STASIS_RELAY", g_settings.relay),
    row("STASIS_RUNTIME_DIR", g_settings.runtime_dir),
    row("STASIS_IB", g_settings.ib),
    row("STASIS_REMOTE_LAUNCHERS", g_settings.remote_launchers),
    row("OMPI_MCA_plm_rsh_agent", g_settings.ompi_rsh_agent),
    row("HYDRA_LAUNCHER_EXEC", g_settings.hydra_launcher_exec),
    row("SLURM_STEP_ID", g_settings.slurm_step_id),
    row("PMI_FD", g_settings.pmi_fd),
    row("PMIX_NAMESPACE", g_settings.pmix_namespace),
    row("STASIS_SRUN", g_settings.srun, /*after_restart=*/true),
    row("STASIS_IB_LIBRARY", g_settings.ib_library, /*after_restart=*/true),
};

// A value that does not fit is refused whole, loudly: a cut plugin list or path would be a
// different setting.
void assign(const SettingRow& r, const char* value) {
  if (str_len(value) >= r.capacity) {
    LogLine error;
    (error << r.name << " is longer than " << r.capacity - 1 << " bytes; ignored").emit();
    return;
  }
  str_copy(r.text, value, r.capacity);
  *r.set = true;
}

// Before the runtime's other constructors (priority 101 runs ahead of the default): they and
// stasis_runtime_init read these settings.
__attribute__((constructor(101))) void read_settings() {
  for (const SettingRow& r : kRows)
    if (char** entry = environment_entry(environ, r.name, str_len(r.name))) assign(r, *entry + str_len(r.name) + 1);
}

}  // namespace

void update_settings_after_restart(const char* setenv_entries) {
  for (const char* a = setenv_entries; *a; a += str_len(a) + 1)
    for (const SettingRow& r : kRows) {
      const size_t n = str_len(r.name);
      if (r.after_restart && str_starts(a, r.name) && a[n] == '=') assign(r, a + n + 1);
    }
}

const char* setting_named(const char* name, bool* known) {
  for (const SettingRow& r : kRows)
    if (str_eq(r.name, name)) {
      if (known) *known = true;
      return *r.set ? r.text : nullptr;
    }
  if (known) *known = false;
  return nullptr;
}

}  // namespace stasis::rt

// The value of a setting by its variable's name, as the runtime read it (settings.h); null when
// unset or not a setting. For plugins, which must not read the environment on the restart path.
extern "C" __attribute__((visibility("default"))) const char* stasis_plugin_setting(const char* name) {
  return stasis::rt::setting_named(name);
}
