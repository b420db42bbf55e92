// The image record of pipes and FIFOs (StasisFdRecord::kind_data, same bytes as ever). The bytes
// in flight are FD_DATA PIPE_BYTES records of the read end's description owner.
#pragma once
#include "image/kind_data.h"

// STASIS_FD_PIPE and STASIS_FD_FIFO (a FIFO is reopened by its path).
typedef struct StasisPipeData {
  uint64_t buffer_size;  // [0] F_GETPIPE_SZ (0: unknown)
  // [1] a FIFO in a temporary directory (plugins/saved_files: is_temporary_path): 1 + its
  // permission bits, and restart makes it again where it is missing; 0: it must exist.
  uint64_t recreate_mode_plus_one;
} StasisPipeData;
STASIS_KIND_FIELD(StasisPipeData, buffer_size, 0);
STASIS_KIND_FIELD(StasisPipeData, recreate_mode_plus_one, 1);
