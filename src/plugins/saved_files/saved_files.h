// Files whose contents go into the image, checkpoint side (runtime, saved_files.cc): deleted
// while open, memfds, `launch --save-files`. Restart side: restore_saved_files.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_saved_file_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
// The contents of the named file at `path`, open with F_GETFL `flags`, go into the image:
// `launch --save-files[=PATTERN]` asked for them (and the program can read them), or it is a
// temporary file (below), open for reading or writing.
bool named_file_saved(const char* path, uint32_t flags);
// The second half of named_file_saved: a temporary file (variant STASIS_SAVED_FILE_TEMPORARY).
bool temporary_file_saved(const char* path, uint32_t flags);
// Whether `path` lies in a node-local temporary directory, whose files the checkpoint saves
// because they may be gone at restart (README, Temporary files): under /tmp, /var/tmp or the
// process's $TMPDIR (as it was at start), at any depth, or directly in /dev/shm (a POSIX shared
// memory object; subdirectories of /dev/shm hold tools' machine-wide state and are left alone).
bool is_temporary_path(const char* path);
// A descriptor of the program open on the file (dev, ino), or -1.
int descriptor_holding_file(uint64_t dev, uint64_t ino);
}  // namespace stasis::rt
