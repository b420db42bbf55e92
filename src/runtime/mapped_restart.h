// Anonymous-memory semantics for memory a restart mapped from an image file (mapped_restart.cc).
#pragma once

namespace stasis::rt {

// Called once in the restarted process, before any program thread runs: notes where memory is
// a private mapping of an image, which turns on the madvise/mremap wrappers' slow path.
void note_image_mappings();

}  // namespace stasis::rt
