#pragma once
#include "runtime/rt.h"

namespace stasis::rt {
// Describes every open descriptor (except the runtime's own). Fails, naming the descriptor and
// its kind, when one cannot be restored by this version (pipes, sockets, event fds...).
// Remembers which descriptors the program inherited at launch (they are the outside world's).
void note_inherited_fds();
bool capture_fds(Arena& arena, StasisFdRecord** out, uint32_t* count, LogLine& error);
}  // namespace stasis::rt
