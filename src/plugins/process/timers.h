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

#include <time.h>

namespace stasis::rt {
void capture_timers_and_clocks(StasisProcessRecord* rec);
void restore_timers_and_clocks(const StasisProcessRecord* rec);
// For the wrappers of calls that take an absolute time (here and in other kinds' folders): true
// only after a restart that gave a clock an offset; then to_kernel_time turns an absolute time on
// `clock` as the program sees it into the one the kernel needs (`scratch` holds it).
bool clock_offset_active();
const timespec* to_kernel_time(clockid_t clock, const timespec* program_time, timespec* scratch);
}  // namespace stasis::rt

namespace stasis::restore {
// `stasis restart`'s test hook STASIS_TEST_CLOCK_SHIFT_NS (nanoseconds, >= 0; 0 when unset):
// pretend the clocks at the checkpoint were this much ahead of the ones at restart, as on a
// machine that rebooted since. Throws Error on a malformed value.
int64_t test_clock_shift_ns_from_env();
}  // namespace stasis::restore
