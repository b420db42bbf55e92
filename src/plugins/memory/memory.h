#pragma once
#include "plugins/memory/dirty_tracking.h"
#include "runtime/image_writer.h"

namespace stasis::rt {
// Writes a REGION record (and its PAGES) for every mapping except the checkpoint scratch arena
// and the kernel-provided ones, whose layout goes to *vdso instead. For an increment, mappings
// the plan inherits get only the pages written since the parent (and INHERIT records).
bool write_memory(ImageWriter& writer, Arena& arena, const IncrementPlan& plan,
                  StasisVdsoLayout* vdso, LogLine& error);
// While user threads are stopped, before the snapshot: reads and re-arms dirty tracking (when the
// process tracks) and decides whether this image can be an increment of `offered_parent`.
bool plan_increment(Arena& arena, uint64_t offered_parent, IncrementPlan* plan, LogLine& error);
}  // namespace stasis::rt
