// The IPC plugin, restart side (runs in `stasis restart`). System V objects are re-created before
// the restart loader runs (it attaches the segments again); POSIX message queues are descriptors
// (open_mqueue in plugins/files/restore.h).
//
// An object or queue left behind by the checkpointed process itself (same kernel id or inode,
// same key or name, that process gone) is removed first, so a restart after `kill -9` finds its
// keys and names free; anything else holding them stops the restart with a message.
#pragma once
#include "image/reader.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {

// Re-creates the System V objects saved in `img` with their contents and records their new ids
// and the attachments in `info` for the loader and the restarted runtime.
void recreate_sysv_objects(const image::Image& img, StasisRestartInfo& info);

// The process that wrote `img` no longer runs (so what it left in the kernel is stale).
bool checkpointed_process_ended(const image::Image& img);

}  // namespace stasis::restore
