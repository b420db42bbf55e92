#pragma once
#include "runtime/image_writer.h"

namespace stasis::rt {
// Writes a REGION record (and its PAGES) for every mapping except the checkpoint scratch arena
// and the kernel-provided ones, whose layout goes to *vdso instead.
bool write_memory(ImageWriter& writer, Arena& arena, StasisVdsoLayout* vdso, LogLine& error);
// False when a forked copy of the process would not hold all of its memory: a mapping marked
// MADV_WIPEONFORK (zeroed in the child) or MADV_DONTFORK (absent from it).
bool forked_copy_is_faithful(Arena& arena);
}  // namespace stasis::rt
