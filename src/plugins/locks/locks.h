// File locks (locks.cc; runtime only: the restarted process takes them back itself).
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
// Notes the flock, POSIX record and OFD locks held through the captured descriptors in the
// runtime's memory, which the image saves; fails, naming the descriptor, on a lock this version
// cannot take back (a lease) or too many locks. The capture table's process-wide step.
bool capture_held_locks(const StasisFdRecord* fds, uint32_t count, LogLine& error);
// In the restarted process, before its threads run: takes every noted lock again. A lock someone
// else now holds ends the process with a message naming the file and the holder.
void retake_held_locks();
}  // namespace stasis::rt
