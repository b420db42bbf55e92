// The IPC plugin, restart side (runs in `stasis restart`). System V objects are re-created before
// the restart loader runs (it attaches the segments again); POSIX message queues are descriptors
// (open_mqueue, a row of the restore table).
//
// An object or queue left behind by the checkpointed process itself (same kernel id or inode,
// same key or name, that process gone) is removed first, so a restart after `kill -9` finds its
// keys and names free; anything else holding them stops the restart with a message.
#pragma once
#include <map>
#include <vector>

#include "image/reader.h"
#include "plugins/files/restore_kinds.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {

// The System V segments of the processes this restart brings back on this host (its part of a
// restart on several hosts), each made once before any process is forked: processes of the
// computation share segments (each saved by one of them), and one may attach after the restart a
// segment it only knew the id of, so every process gets the ids of all of them.
struct HostSegments {
  std::map<int32_t, int32_t> new_id_of;           // by the kernel id at the checkpoint
  std::vector<StasisSysvIdPair> translations;     // the program's id -> the new kernel id
};
HostSegments recreate_host_segments(const std::vector<image::Image>& images);

// Re-creates the other System V objects saved in `img` (semaphore sets, message queues) with
// their contents and records, with `segments`, the new ids and the attachments in `info` for
// the loader and the restarted runtime.
void recreate_sysv_objects(const image::Image& img, const HostSegments& segments, StasisRestartInfo& info);

// A POSIX message queue descriptor, re-created with its messages (restore_mqueue.cc).
int open_mqueue(const image::Image& img, const StasisFdRecord& rec);
void describe_mqueue(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);

// The process that wrote `img` no longer runs (so what it left in the kernel is stale).
bool checkpointed_process_ended(const image::Image& img);

}  // namespace stasis::restore
