// The ipc kind's image records (same bytes as ever).
//
// A POSIX message queue descriptor: StasisMqueueData in StasisFdRecord::kind_data; path = its
// name ("/NAME", " (deleted)" once unlinked). The messages are FD_DATA MQUEUE_MESSAGES of the
// queue's first descriptor.
//
// System V objects are not descriptors: their FD_DATA records use `fd` as the object's index in
// the SYSV_OBJECTS table (fd -1 for the table itself and for SYSV_ATTACHMENTS). SYSV_CONTENTS:
// shm, the segment's bytes; sem, a uint16_t value per semaphore; msg, StasisSysvMessage + bytes
// per message, in queue order. An attachment is also a REGION of kind SYSV_SHM without PAGES
// (the segment's contents are saved once, with the segment): file_ino = the kernel's segment id,
// file_offset = where in the segment the region starts.
#pragma once
#include "image/kind_data.h"

// STASIS_FD_MQUEUE
typedef struct StasisMqueueData {
  uint64_t max_messages;  // [0] mq_maxmsg
  uint64_t message_size;  // [1] mq_msgsize
  uint64_t mode;          // [2] permission bits
  uint64_t queued;        // [3] messages queued (mq_curmsgs)
} StasisMqueueData;
STASIS_KIND_FIELD(StasisMqueueData, max_messages, 0);
STASIS_KIND_FIELD(StasisMqueueData, message_size, 1);
STASIS_KIND_FIELD(StasisMqueueData, mode, 2);
STASIS_KIND_FIELD(StasisMqueueData, queued, 3);

enum StasisSysvKind STASIS_ENUM_BASE {
  STASIS_SYSV_SHM = 1,
  STASIS_SYSV_SEM = 2,
  STASIS_SYSV_MSG = 3,
};

// A System V IPC object the program created, obtained or attached (FD_DATA SYSV_OBJECTS).
typedef struct StasisSysvObject {
  uint32_t kind;        // StasisSysvKind
  int32_t id;           // the id the program uses (after a restart, no longer the kernel's)
  int32_t kernel_id;    // the kernel's id when written
  int32_t key;          // IPC_PRIVATE (0) or the key
  uint32_t mode;        // permission bits
  uint32_t uid, gid, cuid;
  uint32_t removed;     // shm: marked for removal (IPC_RMID), gone once the last attachment goes
  // shm: another process of the host saved the segment (it is shared; see plugins/ipc/sysv.cc);
  // this image holds its attachments only
  uint32_t saved_elsewhere;
  uint64_t size;        // shm: bytes; sem: semaphores; msg: queue limit in bytes (msg_qbytes)
  uint64_t count;       // msg: messages queued
} StasisSysvObject;

// Where the program had a System V segment attached (FD_DATA SYSV_ATTACHMENTS).
typedef struct StasisSysvAttachment {
  uint64_t address;
  uint32_t object;      // index in the SYSV_OBJECTS table
  uint32_t shmat_flags; // SHM_RDONLY, SHM_EXEC
} StasisSysvAttachment;

typedef struct StasisSysvMessage {
  int64_t type;
  uint64_t size;
} StasisSysvMessage;
