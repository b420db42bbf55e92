// Memory shared between processes (or mapped twice in one) that no path leads to: shared
// anonymous memory, and memfds or deleted files mapped shared without a descriptor (POSIX
// semaphores made by sem_open and unlinked, as python's multiprocessing does).
//
// Each such mapping is saved once per computation: by the topmost ancestor in the computation
// that maps all of its bytes. Descendants that inherited it record only where it sits in the
// object (STASIS_REGION_SHARED_ELSEWHERE), and restart makes one object for all of them. The
// decision is taken while the computation is stopped, because ancestors run on (and may unmap)
// while forked writers write. For a forked writer the saved bytes are also copied then: shared
// memory is not frozen by the fork as private memory is.
#pragma once
#include "plugins/memory/mappings.h"
#include "runtime/image_writer.h"

namespace stasis::rt {

struct SharedRegionPlan {
  uint64_t start, end;
  bool saved_elsewhere;  // an ancestor in the computation saves these bytes
  // Saved here from a copy made while the computation was stopped (forked writer): runs of
  // resident pages [first_run, first_run + run_count) of the plan's run table.
  bool copied;
  uint32_t first_run, run_count;
};

// Memory the object plan applies to: shared, no path leads to it, not a System V segment (saved
// with the segment), and not reachable through one of the process's descriptors (saved with it).
bool is_unnamed_shared_memory(const Mapping& m, const Arena& arena);

// While the computation is stopped: decides who saves each such mapping of this process (`maps`:
// its mappings, read once for the whole pause), and with `copy_for_forked_writer` copies the
// bytes this process saves. Fails with `error` set.
bool plan_shared_memory(Arena& arena, const Mapping* maps, uint32_t count, bool copy_for_forked_writer,
                        LogLine& error);
// The plan for the mapping [start, end), or nullptr when it has none.
const SharedRegionPlan* shared_region_plan(uint64_t start, uint64_t end);
// The copy is the forked writer's: the program drops its own mapping of it once the writer exists.
void drop_shared_memory_copy();
// True for the copy's own mapping (not program memory).
bool is_shared_memory_copy(uint64_t start, uint64_t end);
// Writes REGION (and PAGES, from the copy when there is one) for a mapping with a plan.
bool write_shared_region(ImageWriter& writer, StasisRegionRecord& r, const SharedRegionPlan& plan,
                         LogLine& error);

}  // namespace stasis::rt
