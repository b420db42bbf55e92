// Memory a plugin leaves out of the image (stasis_plugin_leave_out_memory, include/stasis/plugin.h):
// the split MPI mode's lower half, which a restart replaces with a fresh one
// (src/plugins/mpi_split/README.md). Checkpoint path: no allocation but the arena.
#pragma once
#include "plugins/memory/mappings.h"

namespace stasis::rt {
// The mappings without the left-out ranges: a mapping inside one is dropped, one reaching into one
// is cut into the parts outside (a file's offset follows its part). *maps is replaced by an array
// from the arena when anything is cut; returns the new count (the old one when nothing is left
// out, or the arena is exhausted, which the caller's next allocation reports).
uint32_t cut_left_out_memory(Arena& arena, Mapping** maps, uint32_t count);
}  // namespace stasis::rt
