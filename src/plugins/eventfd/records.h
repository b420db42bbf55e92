// The image record of an eventfd (StasisFdRecord::kind_data, same bytes as ever: each field is the
// kind_data word named beside it).
#pragma once
#include "image/kind_data.h"

// STASIS_FD_EVENTFD
typedef struct StasisEventfdData {
  uint64_t counter;    // [0]
  uint64_t semaphore;  // [1] EFD_SEMAPHORE: 0 or 1
} StasisEventfdData;
STASIS_KIND_FIELD(StasisEventfdData, counter, 0);
STASIS_KIND_FIELD(StasisEventfdData, semaphore, 1);
