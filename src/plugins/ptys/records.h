// The image record of pseudo-terminal descriptors (StasisFdRecord::kind_data, same bytes as ever:
// each field is the kind_data word named beside it). The master's description owner saves the
// bytes the slave side wrote and the master's reader had not read (FD_DATA PTY_OUTPUT).
#pragma once
#include "image/kind_data.h"

// STASIS_FD_PTY_MASTER and STASIS_FD_PTY_SLAVE
typedef struct StasisPtyData {
  uint64_t index;    // [0] the pty number at the checkpoint (/dev/pts/N)
  uint64_t flags;    // [1] StasisPtyFlag bits (image/format.h)
  uint64_t winsize;  // [2] rows | columns << 16 | x pixels << 32 | y pixels << 48
  StasisTermios termios;  // [3..7] the slave's
  uint32_t reserved;      // the rest of kind_data[7] (zero)
} StasisPtyData;
#ifdef __cplusplus
static_assert(sizeof(StasisPtyData) == sizeof(((StasisFdRecord*)0)->kind_data), "no padding: every byte is the image's");
#endif
STASIS_KIND_FIELD(StasisPtyData, index, 0);
STASIS_KIND_FIELD(StasisPtyData, flags, 1);
STASIS_KIND_FIELD(StasisPtyData, winsize, 2);
STASIS_KIND_FIELD(StasisPtyData, termios, 3);
