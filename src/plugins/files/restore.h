// The descriptor plugins, restart side (runs in `stasis restart`, before the restart loader). For
// each process, every saved open file description is re-created once (open_description), put at
// its descriptor numbers, then kinds that refer to other descriptors are finished (epoll interest
// lists). Each kind's functions are in its folder, found through the restore table
// (restore_kinds.h); this header gathers what the restart engine calls.
#pragma once
#include <map>
#include <utility>

#include "plugins/events/restore_events.h"
#include "plugins/files/restore_kinds.h"
#include "plugins/ipc/restore_ipc.h"
#include "plugins/pipes/restore_pipes.h"
#include "plugins/ptys/restore_ptys.h"
#include "plugins/saved_files/restore_saved_files.h"
#include "plugins/sockets/restore_sockets.h"

namespace stasis::restore {

// Once per restart, before the process tree is forked: every kind's step that makes what the
// processes share (ptys, Unix socketpairs, TCP, datagram sockets), in the restore table's order.
void prepare_before_fork(const std::vector<image::Image>& images, const BeforeFork& how);

// Called before anything changes: throws stasis::Error saying what prevents restoring `rec`.
void check_descriptor(const image::Image& img, const StasisFdRecord& rec);
// Returns a new descriptor (close-on-exec, above the descriptor floor) holding a new open file
// description equal to the saved one. Pipes: both ends of one pipe come from one pipe.
int open_description(const image::Image& img, const StasisFdRecord& rec);
// Puts every saved descriptor of `img` at its number in the calling process. `shared` maps a
// description owner (virtual pid, fd) to a descriptor already open here (created before the
// process tree was forked); the rest are opened now.
using DescriptionKey = std::pair<int32_t, int32_t>;
void place_descriptors(const image::Image& img, const std::map<DescriptionKey, int>& shared);
// The saved state of `rec` by name, for `stasis inspect --json` (an object; empty when the
// common fields say it all).
nlohmann::json describe_descriptor(const image::Image& img, const StasisFdRecord& rec);

// Regular files, directories, devices, and what came from outside the computation (restore_fds.cc).
int open_regular_file(const image::Image& img, const StasisFdRecord& rec);
void describe_external(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);

}  // namespace stasis::restore
