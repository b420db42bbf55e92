// Memory the kernel leaves out of a fork: MADV_DONTFORK (absent from the child: QEMU's guest
// RAM, RDMA buffers) and MADV_WIPEONFORK (zeroed in it: random-number state). A forked image
// writer must still see it as the program had it (fork_exclusions.cc).
#pragma once
#include "plugins/memory/mappings.h"
#include "runtime/rt.h"

namespace stasis::rt {
// While every user thread is stopped: the marks of every mapping (StasisMemoryMarkBits), in
// address order, kept in `arena` for the image's MEMORY_MARKS record. False when smaps cannot be
// read (`why` says so): the checkpoint cannot keep the marks and fails.
bool read_memory_marks(Arena& arena, LogLine& why);
// The same for a checkpoint whose image a forked writer will write, without reading smaps in
// the pause when nothing can have changed the fork marks since the last read: no madvise() call
// with a fork mark (note_fork_mark_advice), the same device and anon-inode mappings, every
// marked range still mapped, the previous writer's check passed, the same process. Then the list
// holds the fork marks alone, and the writer completes it (complete_memory_marks).
bool read_memory_marks_for_fork(Arena& arena, const Mapping* maps, uint32_t count, LogLine& why);
// The madvise() wrapper saw MADV_DONTFORK/DOFORK/WIPEONFORK/KEEPONFORK: smaps is read next time.
void note_fork_mark_advice();
// The previous checkpoint failed (maybe on complete_memory_marks' check): read smaps next time.
void forget_cached_fork_marks();
// In the writer, before the image's marks are used: where the pause kept the fork marks alone,
// adds every other mark from the writer's own smaps (a forked copy has the same mappings and
// flags as the program had at the fork) and checks that nothing the pause did not know was left
// out of the fork: a mapping the program had that the writer lacks (MADV_DONTFORK) or one marked
// MADV_WIPEONFORK (zeroed in the writer). Either fails the image, naming the mapping.
bool complete_memory_marks(Arena& arena, LogLine& why);
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
