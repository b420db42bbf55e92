// After a mapped restart, the program's anonymous memory is partly private mappings of image
// files (the loader maps uncompressed chunks instead of copying them). Two calls see the
// difference, and are wrapped here:
// - madvise(MADV_DONTNEED/MADV_DONTNEED_LOCKED/MADV_FREE): on a file mapping the kernel drops
//   the private copies, so the pages read the image's bytes again where the program expects
//   zeros; MADV_FREE and MADV_WIPEONFORK are refused on file mappings. The image-backed part of
//   the range becomes fresh anonymous memory first (its contents copied over for WIPEONFORK).
// - mremap: every mapped chunk is a mapping of its own (the chunks lie apart in the file), and
//   the kernel refuses (EFAULT) to remap a range that spans several. The image-backed part of
//   the range is copied into anonymous memory first; mapped at its own address, with nothing
//   faulted in yet, it merges with the anonymous neighbours, so the region is one mapping again.
// A process that was not restarted from mapped images pays one predictable branch per call. The
// wrappers do not see libc's internal calls (malloc's trimming, realloc of mmapped chunks: those
// ignore what DONTNEED'd pages hold and fall back to copying when mremap fails) nor raw syscall().
#include "runtime/mapped_restart.h"

#include <stdarg.h>
#include <sys/mman.h>

#include <cerrno>

#include "plugins/memory/fork_exclusions.h"
#include "plugins/memory/mappings.h"
#include "runtime/rt.h"

using stasis::rt::next_symbol;

namespace stasis::rt {
namespace {

constexpr uint64_t kPage = 4096;

// Where image-backed memory was at restart: a superset (ranges are merged when the table is
// full, and never shrunk as the program replaces that memory), so a call outside every range
// needs no look at /proc/self/maps.
struct Range {
  uint64_t start, end;
};
constexpr uint32_t kMaxRanges = 64;
Range g_image_ranges[kMaxRanges];
uint32_t g_image_range_count = 0;

bool is_image_mapping(const Mapping& m) {
  return !m.shared && (str_ends(m.path, ".stasis") || str_ends(m.path, ".stasis (deleted)"));
}

bool touches_image_memory(uint64_t start, uint64_t end) {
  for (uint32_t i = 0; i < g_image_range_count; i++)
    if (g_image_ranges[i].start < end && g_image_ranges[i].end > start) return true;
  return false;
}

// The mappings of this process, read into `arena`; 0 when they cannot be read.
uint32_t current_mappings(Arena& arena, Mapping** maps) {
  LogLine ignored;
  if (!arena.create(16u << 20)) return 0;
  return read_mappings(arena, maps, ignored, "/proc/self/maps", 8u << 20);
}

// Moves [start, end) of an image mapping out of the way, maps anonymous memory in its place and
// copies the bytes back: the program sees the same contents, now in anonymous memory.
bool copy_into_anonymous_memory(uint64_t start, uint64_t end, uint32_t prot) {
  uint64_t len = end - start;
  // A move to a place of its own (without MREMAP_FIXED, a same-size mremap stays where it is).
  long moved = STASIS_SYS6(SYS_mmap, 0, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (moved < 0 && moved > -4096) return false;
  if (stasis_syscall6(SYS_mremap, static_cast<long>(start), static_cast<long>(len), static_cast<long>(len),
                      MREMAP_MAYMOVE | MREMAP_FIXED, moved, 0) != moved) {
    STASIS_SYS2(SYS_munmap, moved, len);
    return false;
  }
  long fresh = STASIS_SYS6(SYS_mmap, start, len, prot | PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  bool ok = fresh == static_cast<long>(start);
  if (ok) {
    if (!(prot & PROT_READ)) STASIS_SYS3(SYS_mprotect, moved, len, PROT_READ);
    __builtin_memcpy(reinterpret_cast<void*>(start), reinterpret_cast<void*>(moved), len);
    if ((prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE))
      STASIS_SYS3(SYS_mprotect, start, len, prot);
  }
  STASIS_SYS2(SYS_munmap, moved, len);
  return ok;
}

// Makes every image-backed page of [start, end) anonymous memory: zero-filled, or with its
// contents (`keep_contents`). False (errno set) when the kernel refused.
bool make_anonymous(uint64_t start, uint64_t end, bool keep_contents) {
  Arena arena;
  Mapping* maps = nullptr;
  uint32_t count = current_mappings(arena, &maps);
  bool ok = true;
  for (uint32_t i = 0; i < count && ok; i++) {
    const Mapping& m = maps[i];
    if (m.end <= start || m.start >= end || !is_image_mapping(m)) continue;
    uint64_t from = m.start > start ? m.start : start, to = m.end < end ? m.end : end;
    if (keep_contents) {
      ok = copy_into_anonymous_memory(from, to, m.prot);
    } else {
      ok = STASIS_SYS6(SYS_mmap, from, to - from, m.prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       -1, 0) == static_cast<long>(from);
    }
  }
  if (arena.start()) arena.destroy();
  if (!ok) errno = ENOMEM;
  return ok;
}

uint64_t page_end(uint64_t start, size_t len) { return (start + len + kPage - 1) & ~(kPage - 1); }

int madvise_near_image_memory(void* addr, size_t len, int advice);
void* mremap_near_image_memory(void* old, size_t old_size, size_t new_size, int flags, void* target);

using MadviseFn = int (*)(void*, size_t, int);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
MadviseFn g_madvise;
MremapFn g_mremap;

}  // namespace

void note_image_mappings() {
  Arena arena;
  Mapping* maps = nullptr;
  uint32_t count = current_mappings(arena, &maps);
  g_image_range_count = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (!is_image_mapping(maps[i])) continue;
    if (g_image_range_count == kMaxRanges) {
      g_image_ranges[kMaxRanges - 1].end = maps[i].end;  // sorted: the last range grows over it
      continue;
    }
    g_image_ranges[g_image_range_count++] = {maps[i].start, maps[i].end};
  }
  if (arena.start()) arena.destroy();
}

namespace {

int madvise_near_image_memory(void* addr, size_t len, int advice) {
  auto start = reinterpret_cast<uint64_t>(addr);
  bool discards = advice == MADV_DONTNEED || advice == MADV_FREE || advice == 24 /* MADV_DONTNEED_LOCKED */;
  bool keeps = advice == MADV_WIPEONFORK;
  // An unaligned or empty range is the kernel's to refuse, as it would without the image.
  if ((discards || keeps) && start % kPage == 0 && len != 0 &&
      touches_image_memory(start, page_end(start, len)) &&
      !make_anonymous(start, page_end(start, len), keeps))
    return -1;
  return next_symbol(g_madvise, "madvise")(addr, len, advice);
}

void* mremap_near_image_memory(void* old, size_t old_size, size_t new_size, int flags, void* target) {
  auto start = reinterpret_cast<uint64_t>(old);
  // old_size 0 duplicates a shared mapping: not image memory, which is private.
  if (start % kPage == 0 && old_size != 0 && touches_image_memory(start, page_end(start, old_size)) &&
      !make_anonymous(start, page_end(start, old_size), /*keep_contents=*/true))
    return MAP_FAILED;
  return next_symbol(g_mremap, "mremap")(old, old_size, new_size, flags, target);
}

}  // namespace
}  // namespace stasis::rt

extern "C" {

__attribute__((visibility("default"))) int madvise(void* addr, size_t len, int advice) {
  // The fork marks: the next checkpoint reads smaps again (fork_exclusions.h).
  if (__builtin_expect(advice >= MADV_DONTFORK && advice <= MADV_KEEPONFORK, 0) &&
      (advice <= MADV_DOFORK || advice >= MADV_WIPEONFORK))
    stasis::rt::note_fork_mark_advice();
  if (__builtin_expect(stasis::rt::g_image_range_count != 0, 0))
    return stasis::rt::madvise_near_image_memory(addr, len, advice);
  return next_symbol(stasis::rt::g_madvise, "madvise")(addr, len, advice);
}

__attribute__((visibility("default"))) void* mremap(void* old, size_t old_size, size_t new_size,
                                                    int flags, ...) {
  void* target = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list args;
    va_start(args, flags);
    target = va_arg(args, void*);
    va_end(args);
  }
  if (__builtin_expect(stasis::rt::g_image_range_count != 0, 0))
    return stasis::rt::mremap_near_image_memory(old, old_size, new_size, flags, target);
  return next_symbol(stasis::rt::g_mremap, "mremap")(old, old_size, new_size, flags, target);
}

}  // extern "C"
