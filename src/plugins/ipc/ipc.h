// The IPC plugin, checkpoint side (runs in the preloaded runtime, hostile-territory rules).
// System V shared memory, semaphores and message queues are in sysv.cc, with the library
// wrappers that keep the ids the program holds valid after a restart; POSIX message queues are
// a kind of descriptor (mqueue.cc, a row of the capture table). The restart side
// is restore_ipc.h.
#pragma once
#include "plugins/files/files.h"
#include "plugins/ipc/restart_info.h"
#include "plugins/memory/mappings.h"

namespace stasis::rt {

// A POSIX message queue descriptor (mqueue.cc): a row of the descriptor capture table, tried first
// (a queue looks like a regular file).
int capture_mqueue_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);

// Saves every System V object the program obtained (shmget, semget, msgget) or has attached,
// with its contents, its attachments and its ids, as FD_DATA records. Fails, naming the object,
// when one cannot be restored. `maps`: the process's mappings as the capture read them.
bool capture_sysv_objects(Arena& arena, const Mapping* maps, uint32_t map_count, FdDataList& data, LogLine& error);

// A System V segment's attachment (its contents are saved with the segment): the capture table's
// ClaimMappingFn. maps shows the segment's id as the inode.
bool claim_sysv_mapping(const Mapping& m, StasisRegionRecord* r);

// syscall(SYS_shmat, ...) as the shmat wrapper treats shmat (the id translated after a restart,
// the attachment noted); returns as syscall() does.
long shmat_syscall(long id, long address, long flags);

// The forked image writer inherits no System V attachment, so no shm_nattch counts it while it
// lives on after "resume" (writer_attachments.cc). In the pause, just before the fork: marks each
// attachment of `maps` (the pause's list) MADV_DONTFORK and keeps its mapping.
void withhold_sysv_attachments_from_writer(const Mapping* maps, uint32_t count);
// In the program right after the fork (done or failed), before take_back_fork_excluded_memory:
// clears those marks and forgets them.
void return_sysv_attachments_after_fork();
// read_mappings of /proc/self/maps: in the writer, adds the attachments withheld from it, in
// address order, so its image keeps their REGION records. Elsewhere returns `count` untouched.
uint32_t add_withheld_sysv_attachments(Arena& arena, Mapping** maps, uint32_t count);

}  // namespace stasis::rt
