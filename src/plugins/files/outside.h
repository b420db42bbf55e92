// Which processes are outside the computation, and how they use the regular files the computation
// writes (runtime side, hostile-territory rules). A description the computation shares with one
// of them is an outside stream: restart never cuts it (README.md, Output files).
#pragma once
#include <stdint.h>
#include <sys/stat.h>

namespace stasis::rt {

// At launch (before main, single-threaded): the launched process's ancestors are outside the
// computation. Noted with their start times (a pid may be reused) and passed on to the processes
// it starts in STASIS_OUTSIDE_PROCESSES.
void note_outside_processes_at_launch();
// In a process the launched one started: what STASIS_OUTSIDE_PROCESSES says.
void note_outside_processes_from_env();
// After a restart: `stasis restart`'s ancestors are outside too (a description restart connected
// from its own is found shared with them again; one it opened to append to is the computation's,
// with the job, if it lives, as another writer).
void note_outside_after_restart();

// How processes outside the computation use one regular file the computation has open.
enum class OutsideUse {
  kNone,               // none has it open for writing
  kOtherWriter,        // one has it open for writing through a description of its own
  kSharedDescription,  // one holds this very description
};
// Starts a checkpoint: the outside processes' descriptors are listed again when first needed.
void begin_outside_lookups();
OutsideUse outside_use_of(int fd, const struct stat& st);

}  // namespace stasis::rt
