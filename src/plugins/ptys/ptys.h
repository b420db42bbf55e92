// Pseudo-terminals, checkpoint side (runtime, ptys.cc). Restart side: restore_ptys.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_pty_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
}  // namespace stasis::rt
