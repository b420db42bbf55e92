// Descriptors a checkpoint opens to read what goes into the image: a file the program holds
// write-only, opened again for reading (saved_files); a temporary file mapped shared
// (memory/named_shm); a memfd copy of a System V segment (ipc/sysv). Not the program's: the
// descriptor listing skips them. They are closed at resume (a forked writer has its own copies
// by then, an in-place one has written the image), at
// the start of the next capture when a failed checkpoint never resumed, and forgotten at restart
// (their numbers are from before). No allocation, no lock.
#pragma once

namespace stasis::rt {
// Keeps `fd` until resume; false (the caller closes it and refuses) when too many are kept.
bool hold_checkpoint_source(int fd);
bool is_checkpoint_source(int fd);
// Closes every one kept (a checkpoint that failed, or the start of a new one).
void close_checkpoint_sources();
}  // namespace stasis::rt
