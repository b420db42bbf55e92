// Restarting a computation that ran on several hosts, part by part (hosts.h says what a part
// is): the split of the checkpoint's processes into this restart's part and the others, and the
// starting of the other parts.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "image/reader.h"
#include "plugins/files/restore.h"
#include "restart/hosts.h"
#include "restart/slurm_allocation.h"

namespace stasis::restart {

// A part this restart starts (or, for root_elsewhere, becomes) on another `stasis restart`.
struct RemotePart {
  size_t index = 0;  // in PartPlan::others
  uint32_t vpid = 0;
  std::string host;
  // How its root was started on its host, to reach that host the same way when no --rsh is given
  // (the remote half of an ssh session: restore::part_launcher). Empty otherwise.
  std::vector<std::string> launcher;
  std::string space;  // its root's pid space (vpid is unique within it)
  PartName name() const { return {vpid, space}; }
};

// What this restart does about the other parts, decided by split_into_parts.
struct PartPlan {
  std::string restart_id;                                        // names this restart's meetings
  std::string own_address, old_address;                          // this part's host: new, old
  std::vector<image::Image> others;                              // the other parts' processes
  std::map<uint32_t, std::vector<RemotePart>> remote_children;  // by the parent's virtual pid
  std::vector<RemotePart> detached;                              // parts with no parent restarted
  RemotePart root_elsewhere;                                     // this restart's part, on another host
  // sruns that restarted processes ran, by the parent's virtual pid: their tasks come back
  // through new job steps (slurm_allocation.h), not as parts of this restart.
  std::map<uint32_t, std::vector<SrunStep>> srun_steps;
};

// A fresh name for a restart's meetings, picked by the first `stasis restart` and passed to the parts.
std::string new_restart_id();

// A computation that ran on several hosts comes back part by part: keeps in `images` only this
// restart's part (the others', in PartPlan::others, tell it about the far ends of connections),
// and notes the parts it must start. `parents`, `root`: the process tree of all the images;
// `old_hosts`: each image's host (MANIFEST.json); `hosts_text`: --hosts; `part`: --part (vpid 0:
// this is the first `stasis restart`, which picks a fresh restart id). On one host, only checks
// that --hosts is not given. Throws stasis::Error for what cannot be restarted apart.
PartPlan split_into_parts(std::vector<image::Image>& images, const std::vector<int>& parents, size_t root,
                          const std::vector<std::string>& old_hosts, bool several_hosts,
                          const std::string& hosts_text, const PartName& part, const std::string& restart_id);

// Starts parts: `stasis restart --part VPID` on a part's host, directly if it is this host, else
// through the remote launcher (as ssh passes no environment, what the part needs is on its
// command line).
struct PartStarter {
  std::string restart_id;
  std::string coord;           // HOST:PORT
  std::string hosts_text;      // --hosts, passed on
  std::vector<std::string> setenv;  // --setenv, passed on
  std::string rsh;             // --rsh ("": $STASIS_RSH or ssh)
  std::string checkpoint_dir;
  bool clock_continue = false;  // --clock=continue, passed on

  // The parts no restarted process starts, and this restart's own if it belongs elsewhere
  // (then it does not return).
  void start_other_parts(const PartPlan& plan) const;
  // In a child of the restarted parent of `part` (whose image is `img`): its standard streams
  // travel through the remote launcher; what this restart has there (`shared` descriptions or
  // one opened now) stands for the outside world.
  [[noreturn]] void exec_child_part(const image::Image& img, const std::map<restore::DescriptionKey, int>& shared,
                                    const RemotePart& part) const;
  // In a child of the restarted process that ran srun (whose image is `parent`): the new job
  // step in srun's place, with the parent's standard streams as srun had them.
  [[noreturn]] void exec_srun_step(const image::Image& parent, const std::map<restore::DescriptionKey, int>& shared,
                                   const SrunStep& step) const;
  [[noreturn]] void exec_part(const PartName& part, const std::string& host,
                              const std::vector<std::string>& launcher = {}) const;
};

}  // namespace stasis::restart
