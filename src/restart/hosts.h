// Restarting a computation that ran on several hosts: which processes come back together, and
// where. Processes are grouped into parts: a part is a process whose parent is not on its host
// (or not in the computation) with its descendants on the same host. Each part is restarted by
// a `stasis restart --part VPID` of its own on the part's new host, started through a remote
// launcher by the restarted parent (so a process started through ssh is started through ssh
// again) or, for a part with no parent in the computation, by the first `stasis restart`.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stasis::restart {

// "OLD=NEW,OLD=NEW": old host (the address it reached the coordinator from, as MANIFEST.json
// lists it) to the host that restarts its processes. Throws stasis::Error when malformed.
std::map<std::string, std::string> parse_host_mapping(const std::string& text);

// True if `address` is an address of one of this host's interfaces.
bool is_local_address(const std::string& address);

// For each process (parents[i]: index of its parent, -1 if none in the computation), the index of
// the root of its part: the nearest ancestor-or-self whose parent is on another host or absent.
std::vector<size_t> part_roots(const std::vector<int>& parents, const std::vector<std::string>& hosts);

// A part as the command line names it (--part, --task-parts): its root's virtual pid and, when
// the checkpoint records pid spaces, the root's ("VPID@SPACE"): a virtual pid is unique only
// within its pid space, and the hosts of a computation each have theirs.
struct PartName {
  uint32_t vpid = 0;  // 0: no part named (the first `stasis restart`)
  std::string space;
  std::string text() const { return space.empty() ? std::to_string(vpid) : std::to_string(vpid) + "@" + space; }
};
// "VPID" or "VPID@SPACE"; throws stasis::Error naming `option` when malformed.
PartName parse_part_name(const std::string& text, const char* option);

// `text` as one word of a POSIX shell command line.
std::string shell_quote(const std::string& text);

}  // namespace stasis::restart
