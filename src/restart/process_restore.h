// Restoring one process of the computation, in the process that becomes it (forked by the
// process tree): each kind's step there (restore table), its descriptors, working directory,
// umask and limits; then it execs the restart loader, which a feeder process streams its memory
// to (loader_feed.h). Also what the processes share, made once before the tree forks.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "image/reader.h"
#include "plugins/files/process_wide_restore.h"
#include "plugins/files/restore.h"
#include "restart/loader_protocol.h"
#include "restart/parts.h"

namespace stasis::restart {

// What every restored process takes from the restart that forked it.
struct RestoreContext {
  StasisRestartInfo info = {};  // what the runtime reads after the restart (loader_protocol.h)
  int floor = 3;                // above every descriptor number any restored process uses
  std::string loader;           // the stasis-loader executable
  bool payloads_verified = true;  // false with --lazy: mapped memory is not checked
  std::map<restore::DescriptionKey, int> shared_descriptions;  // held by several processes
  restore::SharedRestore shared;  // what the process-wide kinds made once (process_wide_restore.h)
  std::map<std::string, StasisVdsoProxy> vdso_plans;  // by image path: check_restartable's (compatibility.h)
  // `stasis restart`'s own stderr (close-on-exec, at or above `floor`): where every restored
  // process reports a failed restart, since its descriptor 2 becomes the program's.
  int restart_stderr = 2;
  // Descriptors of `stasis restart` the restored process keeps at their numbers, which no saved
  // descriptor may take (the MPI launcher's connections a split MPI rank's fresh library uses).
  std::set<int> keep_fds;
};

// Writes "stasis restart: <message>" on `stasis restart`'s own stderr.
void report_restart_failure(const RestoreContext& context, const std::string& message);

// --setenv's NAME=VALUE assignments as StasisRestartInfo carries them (a later one for the same
// name wins, as with env(1)). Throws stasis::Error for a malformed one or too many bytes.
void pack_setenv_entries(const std::vector<std::string>& assignments, char (&entries)[STASIS_MAX_SETENV_BYTES]);

// Open file descriptions held by several processes (inherited across fork) and pipes whose ends
// several processes hold are made here, before the tree is forked, so every process inherits
// the same one. Counts the processes of `images` and the standard streams of the parts they
// start on other hosts.
std::map<restore::DescriptionKey, int> create_shared_descriptions(const std::vector<image::Image>& images,
                                                                  const PartPlan& parts);

// Becomes the restarted process of `img` (`ancestors`: the images it builds on). Throws
// stasis::Error when something fails before the loader runs.
[[noreturn]] void restore_process(const RestoreContext& context, const image::Image& img,
                                  const std::vector<image::Image>& ancestors);

}  // namespace stasis::restart
