// The restore table's second part (restart side): process-wide state that is not a descriptor,
// one row per kind (memory shared between processes, System V IPC, clocks), saying what the kind
// does before any image is checked, once before the process tree forks, and in each process
// before the loader is fed. The rows are in restore_table.cc, beside the descriptor kinds'; each
// kind's functions in its folder under src/plugins/. The restart engine (src/restart/) runs the
// steps and names no kind.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "image/reader.h"
#include "plugins/ipc/restore_ipc.h"
#include "plugins/memory/restore_memory.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {

// What the steps make once and every restored process takes.
struct SharedRestore {
  std::set<std::string> recreated_files;                   // named /dev/shm files written again
  std::map<MemoryObjectKey, int> shared_memory;            // memory several regions map
  HostSegments sysv_segments;                               // System V segments, made once
  int64_t clock_shift_ns = 0;                               // test hook (STASIS_TEST_CLOCK_SHIFT_NS)
};

// What the steps give the process that becomes one image.
struct ProcessRestore {
  StasisRestartInfo& info;                  // what the loader and the restarted runtime read
  int floor;                                // descriptors for the loader go at or above it
  std::map<uint64_t, int> loader_objects;   // region start -> descriptor the loader maps
};

struct ProcessWideRestore {
  const char* name;
  // Before any image is checked (regions find recreated files by path). Null: nothing to do.
  void (*before_checks)(const std::vector<image::Image>& images, SharedRestore& shared);
  // Once, before the process tree forks, after the shared descriptions are made.
  void (*before_fork)(const std::vector<image::Image>& images, SharedRestore& shared);
  // In the process that becomes `img`, before the descriptor kinds' enter steps.
  void (*enter)(const image::Image& img, const SharedRestore& shared, ProcessRestore& process);
  // As the process tree forks, in the process that becomes `proc`: right after it is back in its
  // session (setsid), before it forks its children, who inherit what it does.
  void (*in_session)(const StasisProcessRecord& proc) = nullptr;
  // There again, once its children are forked and it is in its process group.
  void (*in_group)(const StasisProcessRecord& proc) = nullptr;
  // A restart on several hosts, before anything is made: where each host of the checkpoint is
  // now (old address -> new).
  void (*hosts_moved)(const std::map<std::string, std::string>& old_to_new) = nullptr;
  // For a part of a restart on several hosts that no restarted process starts: the command that
  // started `img` (its part's root) on its host, to start it the same way; empty: none known.
  std::vector<std::string> (*part_launcher)(const image::Image& img) = nullptr;
};

// Every row's step of each kind, in the order of the table.
void restore_before_checks(const std::vector<image::Image>& images, SharedRestore& shared);
void restore_before_fork(const std::vector<image::Image>& images, SharedRestore& shared);
void enter_process_wide(const image::Image& img, const SharedRestore& shared, ProcessRestore& process);
void enter_session(const StasisProcessRecord& proc);
void enter_process_group(const StasisProcessRecord& proc);
void note_moved_hosts(const std::map<std::string, std::string>& old_to_new);
// The first row's answer that is not empty.
std::vector<std::string> part_launcher(const image::Image& img);

}  // namespace stasis::restore
