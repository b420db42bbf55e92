#include "plugins/memory/dirty_tracking.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

namespace stasis::rt {
namespace {

// Kernel ABI newer than the build system's headers (Linux 6.7: PAGEMAP_SCAN, WP_ASYNC).
struct PageRegion {
  uint64_t start, end, categories;
};
struct PmScanArg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
      category_mask, category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr uint64_t kPageIsWritten = 1 << 1;
constexpr uint64_t kScanWpMatching = 1 << 0, kScanCheckWpAsync = 1 << 1;
constexpr uint64_t kFeatureWpUnpopulated = 1 << 13, kFeatureWpAsync = 1 << 15;
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

// Where the userfaultfd lives: high, out of the way of the program's usual numbers (the
// coordinator connection and the pid table sit just above).
constexpr int kTrackerFdFloor = 1000;

constexpr uint32_t kScanBatch = 512;
PageRegion g_scan_batch[kScanBatch];  // only the paused process's checkpoint thread uses it

// The descriptor is still ours: a program may have closed or replaced that number.
bool is_userfaultfd(int fd) {
  char link[64], proc[40] = "/proc/self/fd/";
  format_uint(proc + str_len(proc), static_cast<unsigned long>(fd));
  long n = STASIS_SYS3(SYS_readlink, proc, link, sizeof link - 1);
  if (n <= 0) return false;
  link[n] = 0;
  return str_eq(link, "anon_inode:[userfaultfd]");
}

}  // namespace

DirtyTracker g_dirty_tracker;

int dirty_tracking_fd() { return g_dirty_tracker.fd(); }

void DirtyTracker::configure(bool enabled, uint32_t full_every) {
  enabled_ = enabled;
  if (full_every > 0) full_every_ = full_every;
}

bool DirtyTracker::ready() {
  if (!enabled_ || unavailable_) return false;
  long pid = STASIS_SYS0(SYS_getpid);
  if (uffd_ >= 0 && owner_pid_ == pid && is_userfaultfd(uffd_)) return true;
  // A fork child: its copy of the descriptor is its parent's context (closing it leaves the
  // parent's registrations alone), and none of its own mappings is registered.
  if (uffd_ >= 0 && owner_pid_ != pid && is_userfaultfd(uffd_)) STASIS_SYS1(SYS_close, uffd_);
  forget();
  LogLine why;
  long fd = STASIS_SYS1(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
  if (fd < 0) {
    why << "userfaultfd is not available (errno " << -fd << ")";
  } else {
    uffdio_api api = {};
    api.api = UFFD_API;
    api.features = kFeatureWpAsync | kFeatureWpUnpopulated;
    long r = STASIS_SYS3(SYS_ioctl, fd, UFFDIO_API, &api);
    if (r != 0) why << "this kernel's userfaultfd has no asynchronous write protection (errno " << -r << ")";
  }
  if (why.size() == 0) {
    long high = STASIS_SYS3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, kTrackerFdFloor);
    STASIS_SYS1(SYS_close, fd);
    if (high < 0) why << "no descriptor free for userfaultfd (errno " << -high << ")";
    fd = high;
  } else if (fd >= 0) {
    STASIS_SYS1(SYS_close, fd);
  }
  if (why.size() != 0) {
    unavailable_ = true;
    LogLine line;
    (line << "incremental checkpoints unavailable: " << why.c_str() << "; writing full checkpoints").emit();
    return false;
  }
  uffd_ = static_cast<int>(fd);
  owner_pid_ = pid;
  return true;
}

bool DirtyTracker::can_build_on(uint64_t offered_parent) const {
  return offered_parent != 0 && uffd_ >= 0 && base_generation_ == offered_parent &&
         depth_ < full_every_;
}

int DirtyTracker::rearm(int pagemap, uint64_t start, uint64_t end, Arena* arena,
                        StasisPageRun** runs, uint32_t* count, uint32_t* cap) {
  for (uint64_t at = start; at < end;) {
    PmScanArg arg = {};
    arg.size = sizeof arg;
    arg.flags = kScanWpMatching | kScanCheckWpAsync;
    arg.start = at;
    arg.end = end;
    arg.vec = reinterpret_cast<uint64_t>(g_scan_batch);
    arg.vec_len = kScanBatch;
    arg.category_mask = arg.return_mask = kPageIsWritten;
    long n = STASIS_SYS3(SYS_ioctl, pagemap, kPagemapScan, &arg);
    if (n == -EPERM) return 0;  // some page of the range is not under asynchronous protection
    if (n < 0) return -1;
    for (long i = 0; runs && i < n; i++) {
      StasisPageRun run = {g_scan_batch[i].start, g_scan_batch[i].end - g_scan_batch[i].start};
      if (*count > 0 && (*runs)[*count - 1].start + (*runs)[*count - 1].len == run.start) {
        (*runs)[*count - 1].len += run.len;
        continue;
      }
      if (*count == *cap && !arena->grow(*runs, *cap)) return -1;
      (*runs)[(*count)++] = run;
    }
    if (arg.walk_end <= at) return -1;
    at = arg.walk_end;
  }
  return 1;
}

bool DirtyTracker::track(int pagemap, uint64_t start, uint64_t end) {
  uffdio_register reg = {};
  reg.range.start = start;
  reg.range.len = end - start;
  reg.mode = UFFDIO_REGISTER_MODE_WP;
  if (STASIS_SYS3(SYS_ioctl, uffd_, UFFDIO_REGISTER, &reg) != 0) return false;
  return rearm(pagemap, start, end, nullptr, nullptr, nullptr, nullptr) == 1;
}

void DirtyTracker::armed_for(uint64_t generation) {
  armed_generation_ = generation;
  base_generation_ = 0;
}

void DirtyTracker::committed(uint64_t generation, const char* image_path, uint64_t header_checksum,
                             const StasisParentRecord* parent) {
  if (generation != armed_generation_ || uffd_ < 0) return;
  // The image's path relative to a sibling generation directory: "../<generation>/<file>".
  const char* file = image_path;
  const char* dir = image_path;
  for (const char* p = image_path; *p; p++)
    if (*p == '/') dir = file, file = p + 1;
  str_copy(base_image_, "../", sizeof base_image_);
  str_copy(base_image_ + 3, dir, sizeof base_image_ - 3);
  base_generation_ = generation;
  base_header_checksum_ = header_checksum;
  chain_id_ = parent ? parent->chain_id : header_checksum;
  depth_ = parent ? parent->depth : 0;
}

void DirtyTracker::describe_parent(StasisParentRecord* out) const {
  *out = {};
  out->parent_generation = base_generation_;
  out->parent_header_checksum = base_header_checksum_;
  out->chain_id = chain_id_;
  out->depth = depth_ + 1;
  str_copy(out->parent_image, base_image_, sizeof out->parent_image);
}

void DirtyTracker::forget() {
  uffd_ = -1;
  owner_pid_ = 0;
  base_generation_ = armed_generation_ = 0;
}

}  // namespace stasis::rt
