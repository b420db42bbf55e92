// The image record of pipes and FIFOs (StasisFdRecord::kind_data, same bytes as ever). The bytes
// in flight are FD_DATA PIPE_BYTES records of the read end's description owner.
#pragma once
#include "image/kind_data.h"

// STASIS_FD_PIPE and STASIS_FD_FIFO (a FIFO is reopened by its path).
typedef struct StasisPipeData {
  uint64_t buffer_size;  // [0] F_GETPIPE_SZ (0: unknown)
} StasisPipeData;
STASIS_KIND_FIELD(StasisPipeData, buffer_size, 0);
