#pragma once
#include "runtime/image_writer.h"

namespace stasis::rt {
// Writes a REGION record (and its PAGES) for every mapping except the checkpoint scratch arena
// and the kernel-provided ones, whose layout goes to *vdso instead.
bool write_memory(ImageWriter& writer, Arena& arena, StasisVdsoLayout* vdso, LogLine& error);
}  // namespace stasis::rt
