// POSIX timers (timer_create) and the clocks a program must never see go backwards
// (CLOCK_MONOTONIC, CLOCK_BOOTTIME and their variants) across a checkpoint and restart.
//
// Checkpoint side (runtime, checkpoint thread, user threads stopped): refuse_if_posix_timers()
// (declared in process_state.h) refuses the timers this version cannot recreate;
// capture_timers_and_clocks() saves every timer and the clocks into the process record.
// Restart side (restarted runtime, before user threads continue): restore_timers_and_clocks()
// recreates each timer with its id, and, when a clock is now behind its saved value, makes the
// runtime's clock wrappers (timers.cc) add an offset.
#pragma once
#include <stdint.h>

#include "image/format.h"

namespace stasis::rt {
void capture_timers_and_clocks(StasisProcessRecord* rec);
void restore_timers_and_clocks(const StasisProcessRecord* rec);
}  // namespace stasis::rt

namespace stasis::restore {
// `stasis restart`'s test hook STASIS_TEST_CLOCK_SHIFT_NS (nanoseconds, >= 0; 0 when unset):
// pretend the clocks at the checkpoint were this much ahead of the ones at restart, as on a
// machine that rebooted since. Throws Error on a malformed value.
int64_t test_clock_shift_ns_from_env();
}  // namespace stasis::restore
