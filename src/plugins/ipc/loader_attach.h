// The ipc kind's step in the restart loader (restart/loader_special_regions.h): a System V
// segment's region is not mapped but attached again, to the segment `stasis restart` re-created
// (restore_sysv.cc). No libc: static functions on raw system calls, included by loader.c.
#pragma once
#include <sys/syscall.h>

#include "common/raw_syscall.h"
#include "restart/loader_protocol.h"

static inline int stasis_ipc_claims_region(const StasisLoaderRegion* region) {
  return region->kind == STASIS_REGION_SYSV_SHM;
}

// A segment is attached whole at its first region (offset 0 in the segment); the attachment's
// later regions (split by mprotect) are already mapped then. Returns the address or -errno;
// *failure says why when the plan names no attachment there.
static inline long stasis_ipc_attach_region(const StasisRestartInfo* info, const StasisLoaderRegion* region,
                                            const char** failure) {
  if (region->file_offset != 0) return (long)region->start;
  const StasisSysvRestart* sysv = &info->sysv;
  for (uint32_t i = 0; i < sysv->attach_count && i < STASIS_MAX_SHM_ATTACHMENTS; i++) {
    const StasisShmReattach* a = &sysv->attach[i];
    if (a->address != region->start) continue;
    long addr = STASIS_SYS3(SYS_shmat, a->kernel_id, a->address, a->flags & ~STASIS_SHM_REMOVE_AFTER_ATTACH);
    // Linux keeps a segment marked for removal attachable until its last detach.
    if (!(addr < 0 && addr > -4096) && (a->flags & STASIS_SHM_REMOVE_AFTER_ATTACH))
      STASIS_SYS3(SYS_shmctl, a->kernel_id, 0 /* IPC_RMID */, 0);
    return addr;
  }
  *failure = "the restart plan has a System V shared memory region that `stasis restart` did not recreate";
  return 0;
}
