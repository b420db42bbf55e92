// The ipc kind's part of StasisRestartInfo (restart/loader_protocol.h): the System V objects
// `stasis restart` re-created. The kernel gave them new ids: the restarted runtime translates
// the ids the program holds (sysv.cc); the loader attaches the segments (loader_attach.h).
// Plain C, fixed size: the libc-free loader reads it.
#pragma once
#include <stdint.h>

#define STASIS_MAX_SYSV_OBJECTS 256
#define STASIS_MAX_SHM_ATTACHMENTS 128
typedef struct StasisSysvIdPair {
  uint32_t kind;       // StasisSysvKind
  int32_t id;          // what the program holds
  int32_t kernel_id;   // what the kernel now calls it
} StasisSysvIdPair;
// The loader attaches the segment at `address` (the SYSV_SHM region there has file_offset 0).
#define STASIS_SHM_REMOVE_AFTER_ATTACH 0x80000000u  // marked for removal at the checkpoint
typedef struct StasisShmReattach {
  uint64_t address;
  int32_t kernel_id;
  uint32_t flags;      // shmat flags (SHM_RDONLY, SHM_EXEC) | STASIS_SHM_REMOVE_AFTER_ATTACH
} StasisShmReattach;

typedef struct StasisSysvRestart {
  uint32_t object_count;
  uint32_t attach_count;
  StasisSysvIdPair ids[STASIS_MAX_SYSV_OBJECTS];
  StasisShmReattach attach[STASIS_MAX_SHM_ATTACHMENTS];
} StasisSysvRestart;
