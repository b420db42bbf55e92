// The image record of a POSIX message queue descriptor (StasisFdRecord::kind_data, same bytes as
// ever); path = its name ("/NAME", " (deleted)" once unlinked). The messages are FD_DATA
// MQUEUE_MESSAGES of the queue's first descriptor.
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
