// Temporary files (plugins/saved_files: is_temporary_path) that processes of the computation map
// shared: POSIX shared memory objects directly in /dev/shm (Open MPI's shared-memory transport
// keeps one per rank, "vader_segment.*", which every rank on the host maps) and session files
// under /tmp (PMIx's dstore segments in Open MPI's session directory, which mpirun removes when
// it ends: without a copy, a checkpoint could be restarted once).
//
// Restart maps such a file again by path, so the file itself must hold its bytes as of the
// checkpoint: the checkpoint saves them once per file and host, and `stasis restart` recreates
// the file from them, on the host where the processes restart, before any process is forked
// (restore_named_shm.cc). The saving process is
// the one that wins an exclusive marker in the generation directory named after the host and the
// file's identity: the processes that map one file need not be related (sibling ranks under
// mpirun or orted), and all of them are stopped while they race, so every copy is of one instant.
#pragma once
#include "plugins/files/files.h"
#include "plugins/memory/mappings.h"

namespace stasis::rt {

// Which process of a host saves an object that several processes of the computation share (a
// file here, a System V segment in plugins/ipc): the one that creates the object's marker first,
// with O_EXCL, while the whole computation is stopped. The marker is
// GENERATION_DIR/.KIND-HOST-A-B (A and B name the object on its host).
void host_marker_path(char* out, size_t cap, const char* generation_dir, const char* kind, uint64_t a, uint64_t b);

// 1: this process created `marker` (it saves the object), 0: another one did, -1: the marker
// cannot be made (error names `what`). Appends `count` bytes to it either way, so that its size
// sums what every process counted (plugins/ipc counts attachments). The marker is closed again:
// a descriptor left open would be saved as the program's.
int claim_for_host(const char* marker, const char* what, uint64_t count, LogLine& error);

// While the computation is stopped, at capture time: for each such file this process maps and
// wins, FD_DATA SHM_FILE (index i) and SHM_FILE_BYTES, one item per data extent (read from a
// descriptor, copied now by FdDataList::read_files_now for a forked writer; holes are skipped).
// Fails, naming the file, when one cannot be saved.
// `maps`: the process's mappings, read once for the whole pause.
bool capture_named_shm_files(Arena& arena, const Mapping* maps, uint32_t count, FdDataList& data,
                             const char* generation_dir, LogLine& error);

}  // namespace stasis::rt
