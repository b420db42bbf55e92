// The madvise marks of the program's memory (smaps' VmFlags), read once per checkpoint while it
// is stopped: the image keeps them (write_memory), so that a restart sets them again.
// Lending memory marked MADV_DONTFORK / MADV_WIPEONFORK to the forked image writer: the marks are
// cleared for the fork and set again at once after it, while every user thread is still stopped.
// The pause stays the fork's (page tables, copy-on-write), where writing such a process's image
// in place kept it stopped for the whole write (a 256 MiB QEMU guest: 0.1-0.3 s). Measured
// against the alternatives in docs/vms.md: copying the memory into the writer during the pause
// costs a memcpy of all of it; process_vm_readv from the writer needs the program stopped
// until the writer has read it (the same copy, and ptrace rights over a parent).
// Pages pinned for DMA (RDMA registers its buffers, ibv_fork_init marks them MADV_DONTFORK) stay
// the program's only where fork copies a pinned page for the child instead of sharing it (Linux
// 5.9's early copy-on-write for pinned pages): on an older kernel the program's next write would
// move its page away from the device's DMA. There, MADV_DONTFORK memory is not lent and the image
// is written in place, as before; MADV_WIPEONFORK memory (never pinned by it) still is.
#include <sys/mman.h>

#include "plugins/memory/fork_exclusions.h"

namespace stasis::rt {

namespace {
constexpr uint32_t kForkMarks = STASIS_MARK_DONTFORK | STASIS_MARK_WIPEONFORK;
StasisMemoryMark* g_marks = nullptr;  // in the arena, which outlives the fork: the writer's copy too
uint32_t g_marks_count = 0;
uint32_t g_lent_upto = 0;             // the fork marks of g_marks[0, g_lent_upto) are lifted

// The fork marks of the last smaps read, kept between checkpoints (not in the arena, which each
// checkpoint makes anew), and what says they still hold.
constexpr uint32_t kMaxCachedForkMarks = 256;
StasisMemoryMark g_cached[kMaxCachedForkMarks];
uint32_t g_cached_count = 0;
bool g_cache_valid = false;
long g_cache_pid = 0;
uint64_t g_cache_special_hash = 0;
std::atomic<uint32_t> g_fork_mark_advice{0};  // madvise() calls with a fork mark, ever
uint32_t g_cache_advice = 0;
// This checkpoint's: the list holds fork marks only (the writer completes it), and the
// mappings the pause saw (in the arena, for the writer's check).
bool g_marks_partial = false;
long g_pause_pid = 0;
const Mapping* g_pause_maps = nullptr;
uint32_t g_pause_map_count = 0;

long set_advice(uint64_t start, uint64_t end, int advice) {
  return STASIS_SYS3(SYS_madvise, start, end - start, advice);
}

// The marks among the VmFlags of one smaps entry ("dc", "wf", "dd", "hg", "nh", "mg").
uint32_t marks_of(const char* flags) {
  uint32_t marks = 0;
  for (const char* p = flags; *p && *p != '\n'; p++)
    if (p[0] == ' ' && p[1] && p[2] && (p[3] == ' ' || p[3] == '\n' || p[3] == 0)) {
      char a = p[1], b = p[2];
      if (a == 'd' && b == 'c') marks |= STASIS_MARK_DONTFORK;
      if (a == 'w' && b == 'f') marks |= STASIS_MARK_WIPEONFORK;
      if (a == 'd' && b == 'd') marks |= STASIS_MARK_DONTDUMP;
      if (a == 'h' && b == 'g') marks |= STASIS_MARK_HUGEPAGE;
      if (a == 'n' && b == 'h') marks |= STASIS_MARK_NOHUGEPAGE;
      if (a == 'm' && b == 'g') marks |= STASIS_MARK_MERGEABLE;
    }
  return marks;
}

// Reads /proc/self/smaps into the arena and calls each_entry(start, end, marks) for every
// mapping, in address order, until it returns false.
template <typename F>
bool each_smaps_entry(Arena& arena, LogLine& why, F&& each_entry) {
  constexpr size_t kCap = 16u << 20;
  char* text = static_cast<char*>(arena.alloc(kCap));
  if (!text || read_small_file("/proc/self/smaps", text, kCap) <= 0) {
    why << "cannot read /proc/self/smaps (the memory's madvise marks)";
    return false;
  }
  uint64_t start = 0, end = 0;
  for (const char* line = text; *line;) {
    bool header = (*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f');
    if (header) {
      const char* p = line;
      start = parse_hex(p);
      p++;  // '-'
      end = parse_hex(p);
    } else if (str_starts(line, "VmFlags:") && !each_entry(start, end, marks_of(line + 8))) {
      return false;
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return true;
}

// Whether fork copies DMA-pinned pages for the child (Linux 5.10 and later, the first long-term
// kernel with the early copy-on-write of 5.9); `release` names the kernel for the message.
bool fork_copies_pinned_pages(char (&release)[65]) {
  struct {
    char s[6][65];
  } uts;
  if (STASIS_SYS1(SYS_uname, &uts) != 0) return false;
  str_copy(release, uts.s[2], sizeof release);
  const char* p = release;
  uint64_t major = 0, minor = 0;
  while (*p >= '0' && *p <= '9') major = major * 10 + static_cast<uint64_t>(*p++ - '0');
  if (*p++ != '.') return false;
  while (*p >= '0' && *p <= '9') minor = minor * 10 + static_cast<uint64_t>(*p++ - '0');
  return major > 5 || (major == 5 && minor >= 10);
}

long set_fork_marks(const StasisMemoryMark& r, bool on) {
  long a = 0, b = 0;
  if (r.marks & STASIS_MARK_DONTFORK) a = set_advice(r.start, r.end, on ? MADV_DONTFORK : MADV_DOFORK);
  if (r.marks & STASIS_MARK_WIPEONFORK) b = set_advice(r.start, r.end, on ? MADV_WIPEONFORK : MADV_KEEPONFORK);
  return a != 0 ? a : b;
}
}  // namespace

namespace {
// Mappings whose flags the kernel sets itself (a driver's VM_DONTCOPY): device files and anon
// inodes. A change among them means reading smaps again. Not shared anonymous memory ("/dev/zero
// (deleted)": the checkpoint's own scratch among it, new every time) nor /dev/shm files.
uint64_t special_mappings_hash(const Mapping* maps, uint32_t count) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (uint32_t i = 0; i < count; i++) {
    const char* path = maps[i].path;
    bool device = str_starts(path, "/dev/") && !str_starts(path, "/dev/zero") && !str_starts(path, "/dev/shm/");
    if (!device && !str_starts(path, "anon_inode:")) continue;
    mix(maps[i].start);
    mix(maps[i].end);
    mix(maps[i].inode);
  }
  return h;
}

// Whether [start, end) lies inside the union of the (ascending) mappings.
bool covered(const Mapping* maps, uint32_t count, uint64_t start, uint64_t end) {
  for (uint32_t i = 0; i < count && start < end; i++) {
    if (maps[i].end <= start) continue;
    if (maps[i].start > start) return false;
    start = maps[i].end;
  }
  return start >= end;
}
}  // namespace

void note_fork_mark_advice() { g_fork_mark_advice.fetch_add(1, std::memory_order_relaxed); }
void forget_cached_fork_marks() { g_cache_valid = false; }

bool read_memory_marks_for_fork(Arena& arena, const Mapping* maps, uint32_t count, LogLine& why) {
  long pid = STASIS_SYS0(SYS_getpid);
  uint64_t special = special_mappings_hash(maps, count);
  uint32_t advice = g_fork_mark_advice.load(std::memory_order_relaxed);
  bool usable = g_cache_valid && g_cache_pid == pid && g_cache_special_hash == special && g_cache_advice == advice;
  for (uint32_t i = 0; usable && i < g_cached_count; i++)
    usable = covered(maps, count, g_cached[i].start, g_cached[i].end);
  g_pause_pid = pid;
  g_pause_maps = maps;
  g_pause_map_count = count;
  if (usable) {
    g_lent_upto = 0;
    g_marks = static_cast<StasisMemoryMark*>(arena.alloc(sizeof(StasisMemoryMark) * (g_cached_count + 1)));
    if (!g_marks) {
      why << "no scratch memory for the list of memory with madvise marks";
      return false;
    }
    for (uint32_t i = 0; i < g_cached_count; i++) g_marks[i] = g_cached[i];
    g_marks_count = g_cached_count;
    g_marks_partial = true;
    return true;
  }
  if (!read_memory_marks(arena, why)) return false;
  g_cached_count = 0;
  g_cache_valid = true;
  for (uint32_t i = 0; i < g_marks_count && g_cache_valid; i++) {
    if (!(g_marks[i].marks & kForkMarks)) continue;
    if (g_cached_count == kMaxCachedForkMarks) g_cache_valid = false;  // too many: read every time
    else g_cached[g_cached_count++] = {g_marks[i].start, g_marks[i].end, g_marks[i].marks & kForkMarks, 0};
  }
  g_cache_pid = pid;
  g_cache_special_hash = special;
  g_cache_advice = advice;
  return true;
}

namespace {
// One smaps entry's marks, with the fork marks of `lent` added where its ranges overlap it,
// appended to `out` piece by piece (ascending: both lists ascend).
bool add_with_lent(uint64_t start, uint64_t end, uint32_t marks, const StasisMemoryMark* lent,
                   uint32_t lent_count, uint32_t& next_lent, StasisMemoryMark*& out, uint32_t& n,
                   uint32_t& cap, Arena& arena) {
  auto emit = [&](uint64_t s, uint64_t e, uint32_t m) {
    if (m == 0 || s >= e) return true;
    if (n == cap && !arena.grow(out, cap)) return false;
    out[n++] = {s, e, m, 0};
    return true;
  };
  while (next_lent < lent_count && lent[next_lent].end <= start) next_lent++;
  uint64_t at = start;
  for (uint32_t j = next_lent; j < lent_count && lent[j].start < end; j++) {
    uint64_t s = lent[j].start > at ? lent[j].start : at, e = lent[j].end < end ? lent[j].end : end;
    if (!emit(at, s, marks) || !emit(s, e, marks | lent[j].marks)) return false;
    at = e;
  }
  return emit(at, end, marks);
}
}  // namespace

bool complete_memory_marks(Arena& arena, LogLine& why) {
  if (!g_marks_partial) return true;
  bool in_writer = STASIS_SYS0(SYS_getpid) != g_pause_pid;
  const StasisMemoryMark* lent = g_marks;
  uint32_t lent_count = g_marks_count;
  if (in_writer) {
    // Every mapping the program had at the pause must be the writer's too.
    Mapping* own = nullptr;
    LogLine error;
    uint32_t own_count = read_mappings(arena, &own, error);
    for (uint32_t i = 0; own_count != 0 && i < g_pause_map_count; i++) {
      const Mapping& m = g_pause_maps[i];
      if (is_stasis_memory(m, arena) || covered(own, own_count, m.start, m.end)) continue;
      why << "the mapping at ";
      why.hex(m.start);
      why << " is not in the image writer: marked MADV_DONTFORK since the previous checkpoint "
             "without a madvise() call Stasis saw; the next checkpoint reads the marks again";
      return false;
    }
  }
  uint32_t cap = 64, n = 0, next_lent = 0;
  auto* out = static_cast<StasisMemoryMark*>(arena.alloc(sizeof(StasisMemoryMark) * cap));
  bool ok = each_smaps_entry(arena, why, [&](uint64_t start, uint64_t end, uint32_t marks) {
    if (in_writer && (marks & STASIS_MARK_WIPEONFORK)) {
      why << "the mapping at ";
      why.hex(start);
      why << " is marked MADV_WIPEONFORK since the previous checkpoint without a madvise() call "
             "Stasis saw: the image writer has it zeroed; the next checkpoint reads the marks again";
      return false;
    }
    if (!out || !add_with_lent(start, end, marks, lent, lent_count, next_lent, out, n, cap, arena)) {
      why << "no scratch memory for the list of memory with madvise marks";
      return false;
    }
    return true;
  });
  if (!ok) return false;
  g_marks = out;
  g_marks_count = n;
  g_marks_partial = false;
  return true;
}

bool read_memory_marks(Arena& arena, LogLine& why) {
  g_marks_partial = false;
  g_marks_count = 0;
  g_lent_upto = 0;
  uint32_t cap = 64;
  g_marks = static_cast<StasisMemoryMark*>(arena.alloc(sizeof(StasisMemoryMark) * cap));
  return each_smaps_entry(arena, why, [&](uint64_t start, uint64_t end, uint32_t marks) {
    if (marks == 0) return true;
    if (!g_marks || (g_marks_count == cap && !arena.grow(g_marks, cap))) {
      why << "no scratch memory for the list of memory with madvise marks";
      return false;
    }
    g_marks[g_marks_count++] = {start, end, marks, 0};
    return true;
  });
}

const StasisMemoryMark* memory_marks(uint32_t* count) {
  *count = g_marks_count;
  return g_marks;
}

bool lend_fork_excluded_memory(LogLine& why) {
  g_lent_upto = 0;
  char release[65] = {};
  int pinned_pages_safe = -1;  // asked of the kernel at the first MADV_DONTFORK mapping only
  for (uint32_t i = 0; i < g_marks_count; i++) {
    const StasisMemoryMark& mark = g_marks[i];
    if (!(mark.marks & kForkMarks)) continue;
    if ((mark.marks & STASIS_MARK_DONTFORK) && pinned_pages_safe < 0)
      pinned_pages_safe = fork_copies_pinned_pages(release);
    if ((mark.marks & STASIS_MARK_DONTFORK) && !pinned_pages_safe) {
      why << "the mapping at ";
      why.hex(mark.start);
      why << " is marked MADV_DONTFORK (as memory pinned for DMA is) and kernel " << release
          << " shares pinned pages with a forked child";
      take_back_fork_excluded_memory();
      return false;
    }
    long r = set_fork_marks(mark, false);
    if (r != 0) {
      set_fork_marks(mark, true);  // whichever half was lifted
      why << "the mapping at ";
      why.hex(mark.start);
      why << " is marked MADV_DONTFORK/MADV_WIPEONFORK and the mark cannot be lifted for the "
             "forked writer (" << r << ")";
      take_back_fork_excluded_memory();
      return false;
    }
    g_lent_upto = i + 1;
  }
  g_lent_upto = g_marks_count;
  return true;
}

void take_back_fork_excluded_memory() {
  for (uint32_t i = 0; i < g_lent_upto; i++) {
    if (!(g_marks[i].marks & kForkMarks)) continue;
    long r = set_fork_marks(g_marks[i], true);
    if (r != 0) {
      LogLine line;
      line << "warning: could not mark ";
      line.hex(g_marks[i].start);
      (line << " MADV_DONTFORK/MADV_WIPEONFORK again after the checkpoint's fork (" << r
            << "); the program's own forks now copy it")
          .emit();
    }
  }
  g_lent_upto = 0;
}

}  // namespace stasis::rt
