// The files plugin, checkpoint side (runs in the preloaded runtime, hostile-territory rules).
// capture_fds() describes every open descriptor: plain files, directories, devices and
// descriptors inherited from outside here; every other kind in its own folder under src/plugins/,
// found through the capture table (capture_table.cc). The restart side is restore.h.
// The runtime calls the kinds' process-wide steps (locks, TCP) through this header.
#pragma once
#include "plugins/files/capture.h"
#include "plugins/locks/locks.h"
#include "plugins/saved_files/saved_files.h"
#include "plugins/sockets/sockets.h"

namespace stasis::rt {

// Remembers which descriptors the computation inherited from outside when it was launched
// (they are the outside world's; restart connects its own there). After a restart, `only` is the
// bitmask of descriptors restart connected to the outside (StasisRestartInfo::external_fds).
void note_inherited_fds(const uint64_t* only = nullptr);
// In a process the launched one started: what STASIS_EXTERNAL_INODES says.
void note_external_fds_from_env();
// Describes every open descriptor (except the runtime's own). Fails, naming the descriptor and
// its kind, when one cannot be restored by this version.
bool capture_fds(Arena& arena, StasisFdRecord** out, uint32_t* count, FdDataList& data, LogLine& error);
// This folder's row of the capture table: regular files, directories, devices, and descriptors
// inherited from outside the computation.
int capture_plain_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);

}  // namespace stasis::rt
