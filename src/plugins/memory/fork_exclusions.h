// Memory the kernel leaves out of a fork: MADV_DONTFORK (absent from the child: QEMU's guest
// RAM, RDMA buffers) and MADV_WIPEONFORK (zeroed in it: random-number state). A forked image
// writer must still see it as the program had it (fork_exclusions.cc).
#pragma once
#include "runtime/rt.h"

namespace stasis::rt {
// While every user thread is stopped: the marks of every mapping (StasisMemoryMarkBits), in
// address order, kept in `arena` for the image's MEMORY_MARKS record. False when smaps cannot be
// read (`why` says so): the checkpoint cannot keep the marks and fails.
bool read_memory_marks(Arena& arena, LogLine& why);
// What read_memory_marks found (in the forked writer too: the list lives in the arena).
const StasisMemoryMark* memory_marks(uint32_t* count);
// While every user thread is stopped, just before the writer is forked: clears those marks, so
// the writer gets the same copy-on-write snapshot of that memory as of any other. False (nothing
// changed, `why` says what) when a mark cannot be cleared: then the image is written in place.
// Uses read_memory_marks' list.
bool lend_fork_excluded_memory(LogLine& why);
// In the program, once the writer is forked (or the checkpoint gave up before): every mark
// cleared is set again, so the program's own forks see what they always saw.
void take_back_fork_excluded_memory();
}  // namespace stasis::rt
