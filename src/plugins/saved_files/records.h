// The image record of a saved file (StasisFdRecord::kind_data, same bytes as ever: each field is
// the kind_data word named beside it). Its contents (`size` bytes) are FD_DATA FILE_BYTES records
// of its first descriptor, unless same_file_as names an earlier descriptor holding the same file
// through another open file description.
#pragma once
#include "image/kind_data.h"

// STASIS_FD_SAVED_FILE
typedef struct StasisSavedFileData {
  uint64_t variant;  // [0] StasisSavedFileVariant (image/format.h)
  uint64_t mode;     // [1] permission bits (st_mode & 07777)
  uint64_t seals;    // [2] memfd: F_GET_SEALS
  uint64_t same_file_as_plus_one;  // [3] 1 + the descriptor whose contents are this file's; 0: own
} StasisSavedFileData;
STASIS_KIND_FIELD(StasisSavedFileData, variant, 0);
STASIS_KIND_FIELD(StasisSavedFileData, mode, 1);
STASIS_KIND_FIELD(StasisSavedFileData, seals, 2);
STASIS_KIND_FIELD(StasisSavedFileData, same_file_as_plus_one, 3);
