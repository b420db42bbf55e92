// Dirty-page tracking for incremental checkpoints: userfaultfd write protection in async mode
// (the kernel clears a page's write-protect bit on its first write, nothing is delivered to user
// space) read and re-armed with the PAGEMAP_SCAN ioctl. Tracking starts at the first checkpoint
// of a process launched with --incremental; before that nothing costs anything.
//
// Everything here runs on the checkpoint path (raw syscalls, no allocation outside the arena).
#pragma once
#include "image/format.h"
#include "runtime/rt.h"

namespace stasis::rt {

// What the pause-time scan decided, handed to the image writer (a forked writer shares the arena
// this lives in, so it sees the scan the paused process made).
struct IncrementPlan {
  bool increment = false;        // false: a full image
  StasisParentRecord parent{};   // when increment
  // Mappings tracked since the parent (sorted, disjoint): their pages not written since come from
  // the parent's image. Everything else is saved whole.
  StasisPageRun* inherited = nullptr;
  uint32_t inherited_count = 0;
  // Pages written since the parent (sorted, disjoint), within the inherited mappings.
  StasisPageRun* dirty = nullptr;
  uint32_t dirty_count = 0;
};

class DirtyTracker {
 public:
  // STASIS_INCREMENTAL=1 (launch --incremental); STASIS_FULL_EVERY (launch --full-every).
  void configure(bool enabled, uint32_t full_every);
  bool enabled() const { return enabled_; }
  // Opens the userfaultfd on first use (or again in a forked child / after a restart); false, with
  // one log line the first time, when the kernel cannot track (the process then writes full
  // images).
  bool ready();
  // Whether this checkpoint can be an increment of `offered_parent` (the coordinator's newest
  // complete generation, 0 = write a full image).
  bool can_build_on(uint64_t offered_parent) const;
  // Re-arms [start, end) (through `pagemap`, /proc/self/pagemap) and, with runs, appends the
  // runs of pages written since it was last armed (the array grows in the arena). Returns 1 when
  // the range is tracked, 0 when it is not (never registered, or no longer: a new mapping there),
  // -1 on failure or when the array could not grow.
  int rearm(int pagemap, uint64_t start, uint64_t end, Arena* arena, StasisPageRun** runs,
            uint32_t* count, uint32_t* cap);
  // Starts tracking a mapping (registration, then arming). False when the kernel refuses it.
  bool track(int pagemap, uint64_t start, uint64_t end);
  // Armed at this checkpoint: until commit() nothing can build on any earlier image.
  void armed_for(uint64_t generation);
  // The image of the armed checkpoint is complete. Whether its generation became a complete
  // checkpoint only the coordinator knows: it offers that generation as the next parent or not.
  void committed(uint64_t generation, const char* image_path, uint64_t header_checksum,
                 const StasisParentRecord* parent);
  // The tracking state is not valid in this process (restarted: the descriptor is gone and nothing
  // is registered).
  void forget();
  // The descriptor the files plugin must not save (-1 when none).
  int fd() const { return uffd_; }
  // Fills the parent record of an increment of the committed image.
  void describe_parent(StasisParentRecord* out) const;

 private:
  bool enabled_ = false;
  bool unavailable_ = false;
  uint32_t full_every_ = 8;
  int uffd_ = -1;
  long owner_pid_ = 0;
  uint64_t armed_generation_ = 0;
  // The last committed image that tracking has run since (0: none yet).
  uint64_t base_generation_ = 0;
  uint64_t base_header_checksum_ = 0;
  uint64_t chain_id_ = 0;
  uint32_t depth_ = 0;
  char base_image_[STASIS_IMAGE_PATH_MAX] = {};  // "../000003/prog-42.stasis"
};

extern DirtyTracker g_dirty_tracker;

}  // namespace stasis::rt
