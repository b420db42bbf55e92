#pragma once
#include "runtime/rt.h"

namespace stasis::rt {
// Process-wide state: ids, cwd, umask, rlimits, signal handlers and pending signals, itimers,
// the mm layout (heap break, argument/environment bounds, auxv). vdso layout is filled later by
// the memory plugin.
void capture_process_record(StasisProcessRecord* rec);
// After restart, in the checkpoint thread, before user threads run again.
void restore_process_record(const StasisProcessRecord* rec);
// Child processes (process trees come in a later version): fills `error` and returns false.
bool refuse_if_children(LogLine& error);
}  // namespace stasis::rt
