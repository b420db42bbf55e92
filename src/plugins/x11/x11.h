// X11 connections, checkpoint side (runtime, x11.cc): for now a connection to an X server
// outside the computation is refused at once, naming the display (README.md).
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_x11_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
}  // namespace stasis::rt
