// eventfd, checkpoint side (runtime, eventfd.cc). Restart side: restore_eventfd.h. Record:
// records.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_eventfd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
}  // namespace stasis::rt
