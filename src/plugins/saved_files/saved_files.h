// Files whose contents go into the image, checkpoint side (runtime, saved_files.cc): deleted
// while open, memfds, `launch --save-files`. Restart side: restore_saved_files.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_saved_file_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
// `launch --save-files[=PATTERN]` asked for the contents of the named file at `path`, open with
// F_GETFL `flags`.
bool save_files_requested(const char* path, uint32_t flags);
// A descriptor of the program open on the file (dev, ino), or -1.
int descriptor_holding_file(uint64_t dev, uint64_t ino);
}  // namespace stasis::rt
