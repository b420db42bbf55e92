// Pipes and FIFOs, checkpoint side (runtime, pipes.cc). Restart side: restore_pipes.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_pipe_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
}  // namespace stasis::rt
