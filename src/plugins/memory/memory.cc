// Memory: every mapping of the process, saved as a REGION record followed by PAGES records for
// the pages that hold data only memory has (populated anonymous pages, pages of private file
// mappings modified in memory, shared anonymous pages). Clean file pages are re-mapped from their
// file at restart. The kernel provides vdso/vvar anew: their layout is recorded, and the vdso's
// bytes saved for a restart under another kernel (src/restart/vdso_proxy.cc).
#include "plugins/memory/memory.h"

#include "plugins/files/capture.h"
#include "plugins/ipc/ipc.h"
#include "plugins/saved_files/saved_files.h"
#include "plugins/memory/dirty_tracking.h"
#include "plugins/memory/fork_exclusions.h"
#include "plugins/memory/mappings.h"
#include "plugins/memory/left_out_memory.h"
#include "plugins/memory/shared_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace stasis::rt {

bool unnamed_file(const Mapping& m) {
  return str_ends(m.path, " (deleted)") || str_starts(m.path, "/memfd:");
}

// Stasis's own memory, never part of the image: the checkpoint scratch arena (a shared mapping,
// which the kernel never merges with a neighbour: a private arena once swallowed a glibc heap
// that way) and the pid table, which belongs to the computation rather than the process.
bool is_stasis_memory(const Mapping& m, const Arena& arena) {
  if (m.start == arena.start() && m.end == arena.end()) return true;
  uint64_t table_start, table_end;
  return pid_table_region(&table_start, &table_end) && m.start >= table_start && m.end <= table_end;
}

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFileOrShared = 1ull << 61;

// maps shows a device as hex major:minor; st_dev encodes it as glibc's makedev() does.
uint64_t parse_device(const char*& p) {
  uint64_t major = parse_hex(p);
  p++;
  uint64_t minor = parse_hex(p);
  return ((major & 0xfff) << 8) | ((major & ~0xfffull) << 32) | (minor & 0xff) | ((minor & ~0xffull) << 12);
}

}  // namespace

uint32_t read_mappings(Arena& arena, Mapping** out, LogLine& error, const char* path, size_t cap) {
  char* text = static_cast<char*>(arena.alloc(cap));
  if (!text) return 0;
  long len = read_small_file(path, text, cap);
  if (len <= 0) {
    error << "cannot read " << path;
    return 0;
  }
  if (static_cast<size_t>(len) >= cap - 1) {  // cut off: keep whole lines only
    while (len > 0 && text[len - 1] != '\n') len--;
    text[len] = 0;
  }
  uint32_t lines = 0;
  for (long i = 0; i < len; i++) lines += text[i] == '\n';
  auto* maps = static_cast<Mapping*>(arena.alloc(sizeof(Mapping) * (lines + 1)));
  uint32_t n = 0;
  for (char* p = text; *p;) {
    char* eol = p;
    while (*eol && *eol != '\n') eol++;
    bool more = *eol != 0;
    *eol = 0;
    const char* q = p;
    Mapping m = {};
    m.start = parse_hex(q);
    q++;
    m.end = parse_hex(q);
    q++;
    m.prot = (q[0] == 'r' ? PROT_READ : 0) | (q[1] == 'w' ? PROT_WRITE : 0) |
             (q[2] == 'x' ? PROT_EXEC : 0);
    m.shared = q[3] == 's';
    q += 5;
    m.offset = parse_hex(q);
    q++;
    m.dev = parse_device(q);
    q++;
    m.inode = 0;
    while (*q >= '0' && *q <= '9') m.inode = m.inode * 10 + static_cast<uint64_t>(*q++ - '0');
    while (*q == ' ') q++;
    m.path = q;
    maps[n++] = m;
    p = more ? eol + 1 : eol;
  }
  *out = maps;
  // This process's memory as the image sees it: without what a plugin left out of it.
  // In a forked image writer, with the System V attachments kept out of its fork (plugins/ipc).
  if (str_eq(path, "/proc/self/maps")) {
    n = cut_left_out_memory(arena, out, n);
    n = add_withheld_sysv_attachments(arena, out, n);
  }
  return n;
}

namespace {

class PageScanner {
 public:
  bool open(Arena& arena) {
    buf_ = static_cast<uint64_t*>(arena.alloc(kWindow * 8));
    vec_ = static_cast<unsigned char*>(arena.alloc(kWindow));
    long fd = STASIS_SYS3(SYS_open, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
    fd_ = static_cast<int>(fd);
    return fd >= 0 && buf_ && vec_;
  }
  void close() { STASIS_SYS1(SYS_close, fd_); }
  // Calls visit(run_start, run_len) for each run of pages worth saving in [start, end).
  template <typename Visit>
  bool runs(uint64_t start, uint64_t end, uint32_t kind, Visit visit) {
    uint64_t run_start = 0, run_len = 0;
    for (uint64_t window = start; window < end; window += kWindow * kPage) {
      uint64_t pages = (end - window) / kPage;
      if (pages > kWindow) pages = kWindow;
      if (kind == STASIS_REGION_SHARED_ANON) {
        if (STASIS_SYS3(SYS_mincore, window, pages * kPage, vec_) != 0) return false;
      } else {
        long got = STASIS_SYS4(SYS_pread64, fd_, buf_, pages * 8, (window / kPage) * 8);
        if (got != static_cast<long>(pages * 8)) return false;
      }
      for (uint64_t i = 0; i < pages; i++) {
        bool keep;
        if (kind == STASIS_REGION_SHARED_ANON) {
          keep = vec_[i] & 1;
        } else {
          uint64_t e = buf_[i];
          keep = (e & kSwapped) || ((e & kPresent) && (kind != STASIS_REGION_FILE_PRIVATE ||
                                                       !(e & kFileOrShared)));
        }
        uint64_t addr = window + i * kPage;
        if (keep && run_len && run_start + run_len == addr) {
          run_len += kPage;
        } else if (keep) {
          if (run_len && !visit(run_start, run_len)) return false;
          run_start = addr;
          run_len = kPage;
        }
      }
    }
    if (run_len && !visit(run_start, run_len)) return false;
    return true;
  }

 private:
  static constexpr uint64_t kWindow = 65536;
  int fd_ = -1;
  uint64_t* buf_ = nullptr;
  unsigned char* vec_ = nullptr;
};

void fill_file_identity(StasisRegionRecord& r) {
  struct stat st;
  if (STASIS_SYS4(SYS_newfstatat, AT_FDCWD, r.path, &st, 0) == 0) {
    r.file_dev = st.st_dev;
    r.file_ino = st.st_ino;
    r.file_size = static_cast<uint64_t>(st.st_size);
    r.file_mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  }
}



// The runtime's zero-initialised data (g_threads, the checkpoint state...), written by the
// checkpoint thread after the dirty-page scan; linker-defined bounds of this library's .bss.
extern "C" char __bss_start[] __attribute__((visibility("hidden")));
extern "C" char _end[] __attribute__((visibility("hidden")));

// Mappings whose pages dirty tracking follows: private anonymous memory the program can write,
// except what the checkpoint thread itself writes between the scan and the snapshot (its stack,
// the runtime's data), which is saved whole every time.
bool trackable(const Mapping& m, uint64_t own_stack) {
  if (m.shared || !(m.prot & PROT_WRITE)) return false;
  if (m.path[0] != 0 && !str_eq(m.path, "[heap]") && !str_eq(m.path, "[stack]") &&
      !str_starts(m.path, "[anon"))
    return false;
  uint64_t bss_start = reinterpret_cast<uint64_t>(__bss_start), bss_end = reinterpret_cast<uint64_t>(_end);
  return !(own_stack >= m.start && own_stack < m.end) && !(m.start < bss_end && bss_start < m.end);
}

// Whether the sorted runs hold exactly [start, end).
bool has_run(const StasisPageRun* runs, uint32_t count, uint64_t start, uint64_t end) {
  uint32_t low = 0, high = count;
  while (low < high) {
    uint32_t mid = low + (high - low) / 2;
    if (runs[mid].start < start) low = mid + 1;
    else high = mid;
  }
  return low < count && runs[low].start == start && runs[low].start + runs[low].len == end;
}

// A REGION and the PAGES of every page worth saving in it.
bool write_whole_region(ImageWriter& writer, PageScanner& scanner, const Mapping& m,
                        StasisRegionRecord& r, bool every_page, bool pages_elsewhere) {
  bool ok = true;
  if (every_page) {
    r.saved_bytes = m.end - m.start;
  } else if (r.kind != STASIS_REGION_FILE_SHARED && !pages_elsewhere) {
    uint64_t saved = 0;
    ok = scanner.runs(m.start, m.end, r.kind, [&](uint64_t, uint64_t len) {
      saved += len;
      return true;
    });
    r.saved_bytes = saved;
  }
  ok = ok && writer.add_record(STASIS_REC_REGION, r.start, &r, sizeof r);
  if (ok && r.saved_bytes) {
    bool unreadable = !(m.prot & PROT_READ);
    bool zero_filled_at_restart = r.kind != STASIS_REGION_FILE_PRIVATE;
    if (every_page)
      ok = writer.add_pages(m.start, m.end - m.start, unreadable, zero_filled_at_restart);
    else
      ok = scanner.runs(m.start, m.end, r.kind, [&](uint64_t start, uint64_t len) {
        return writer.add_pages(start, len, unreadable, zero_filled_at_restart);
      });
  }
  return ok;
}

// An inherited region of an increment: INHERIT records listing the pages the program has no page
// at (zero now, whatever the parent held), then PAGES for the pages written since the parent
// that it still has. All-zero pages are kept: they may hide non-zero pages of the parent.
bool write_inherited_region(ImageWriter& writer, Arena& arena, PageScanner& scanner,
                            StasisRegionRecord& r, const IncrementPlan& plan) {
  constexpr uint32_t kHolesPerRecord = 4096;
  auto* holes = static_cast<StasisPageRun*>(arena.alloc(sizeof(StasisPageRun) * kHolesPerRecord));
  if (!holes) return false;
  // First pass: bytes to save, for the REGION record ahead of them.
  auto each_saved_run = [&](auto visit) {
    uint32_t d = 0;
    return scanner.runs(r.start, r.end, r.kind, [&](uint64_t start, uint64_t len) {
      uint64_t end = start + len;
      while (d < plan.dirty_count && plan.dirty[d].start + plan.dirty[d].len <= start) d++;
      for (uint32_t k = d; k < plan.dirty_count && plan.dirty[k].start < end; k++) {
        uint64_t from = plan.dirty[k].start > start ? plan.dirty[k].start : start;
        uint64_t to = plan.dirty[k].start + plan.dirty[k].len < end ? plan.dirty[k].start + plan.dirty[k].len : end;
        if (!visit(from, to - from)) return false;
      }
      return true;
    });
  };
  uint64_t saved = 0;
  if (!each_saved_run([&](uint64_t, uint64_t len) { return (saved += len), true; })) return false;
  r.saved_bytes = saved;
  if (!writer.add_record(STASIS_REC_REGION, r.start, &r, sizeof r)) return false;
  uint32_t held = 0;
  bool first = true;
  auto flush = [&]() {
    bool ok = writer.add_record(STASIS_REC_INHERIT, r.start, holes, sizeof(StasisPageRun) * held);
    held = 0;
    first = false;
    return ok;
  };
  uint64_t covered = r.start;
  auto hole = [&](uint64_t start, uint64_t end) {
    if (end > start) {
      if (held == kHolesPerRecord && !flush()) return false;
      holes[held++] = {start, end - start};
    }
    return true;
  };
  bool ok = scanner.runs(r.start, r.end, r.kind, [&](uint64_t start, uint64_t len) {
    bool fine = hole(covered, start);
    covered = start + len;
    return fine;
  });
  ok = ok && hole(covered, r.end) && ((held == 0 && !first) || flush());
  bool unreadable = !(r.prot & PROT_READ);
  return ok && each_saved_run([&](uint64_t start, uint64_t len) {
    return writer.add_pages(start, len, unreadable, /*skip_zero_pages=*/false);
  });
}

}  // namespace

bool plan_increment(Arena& arena, uint64_t offered_parent, IncrementPlan* plan, LogLine& error) {
  *plan = {};
  DirtyTracker& tracker = g_dirty_tracker;
  if (!tracker.ready()) return true;
  Mapping* maps = nullptr;
  uint32_t count = read_mappings(arena, &maps, error);
  long pagemap = STASIS_SYS3(SYS_open, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
  if (count == 0 || pagemap < 0) {
    if (pagemap >= 0) STASIS_SYS1(SYS_close, pagemap);
    if (error.size() == 0) error << "cannot read /proc/self/pagemap for dirty tracking";
    return false;
  }
  bool increment = tracker.can_build_on(offered_parent);
  if (increment) tracker.describe_parent(&plan->parent);
  tracker.armed_for(g_generation.load());  // from here on no earlier image can be a parent
  uint32_t inherited_cap = 64, dirty_cap = 1024;
  plan->inherited = static_cast<StasisPageRun*>(arena.alloc(sizeof(StasisPageRun) * inherited_cap));
  plan->dirty = static_cast<StasisPageRun*>(arena.alloc(sizeof(StasisPageRun) * dirty_cap));
  if (!plan->inherited || !plan->dirty) increment = false;
  uint64_t own_stack = reinterpret_cast<uint64_t>(&maps);
  for (uint32_t i = 0; i < count; i++) {
    const Mapping& m = maps[i];
    if (is_stasis_memory(m, arena) || !trackable(m, own_stack)) continue;
    int armed = tracker.rearm(static_cast<int>(pagemap), m.start, m.end, &arena,
                              increment ? &plan->dirty : nullptr, &plan->dirty_count, &dirty_cap);
    if (armed == 1 && increment) {
      if (plan->inherited_count == inherited_cap && !arena.grow(plan->inherited, inherited_cap)) {
        increment = false;  // every mapping is armed again below all the same: a full image
        continue;
      }
      plan->inherited[plan->inherited_count++] = {m.start, m.end - m.start};
    } else if (armed < 0 && increment) {
      increment = false;
    } else if (armed == 0) {
      tracker.track(static_cast<int>(pagemap), m.start, m.end);  // refused: saved whole every time
    }
  }
  STASIS_SYS1(SYS_close, pagemap);
  plan->increment = increment;
  return true;
}

namespace {
// The madvise marks (read_memory_marks) that fall in the saved mappings, clipped to them: the
// MEMORY_MARKS record. Both lists ascend, so one pass over each.
class KeptMarks {
 public:
  bool init(Arena& arena, uint32_t mapping_count) {
    all_ = memory_marks(&all_count_);
    if (all_count_ == 0) return true;
    kept_ = static_cast<StasisMemoryMark*>(arena.alloc(sizeof(StasisMemoryMark) * (all_count_ + mapping_count)));
    return kept_ != nullptr;
  }
  void keep_within(uint64_t start, uint64_t end) {
    while (next_ < all_count_ && all_[next_].end <= start) next_++;
    for (uint32_t j = next_; j < all_count_ && all_[j].start < end; j++) {
      StasisMemoryMark piece = {all_[j].start > start ? all_[j].start : start,
                                all_[j].end < end ? all_[j].end : end, all_[j].marks, 0};
      StasisMemoryMark* last = kept_count_ ? &kept_[kept_count_ - 1] : nullptr;
      if (last && last->end == piece.start && last->marks == piece.marks) last->end = piece.end;
      else kept_[kept_count_++] = piece;
    }
  }
  bool write(ImageWriter& writer) const {
    return kept_count_ == 0 ||
           writer.add_record(STASIS_REC_MEMORY_MARKS, 0, kept_, sizeof(StasisMemoryMark) * kept_count_);
  }

 private:
  const StasisMemoryMark* all_ = nullptr;
  uint32_t all_count_ = 0, next_ = 0;
  StasisMemoryMark* kept_ = nullptr;
  uint32_t kept_count_ = 0;
};
}  // namespace

bool write_memory(ImageWriter& writer, Arena& arena, const IncrementPlan& plan,
                  StasisVdsoLayout* vdso, LogLine& error) {
  Mapping* maps = nullptr;
  uint32_t count = read_mappings(arena, &maps, error);
  if (count == 0) {
    if (error.size() == 0) error << "no memory mappings found";
    return false;
  }
  PageScanner scanner;
  if (!scanner.open(arena)) {
    error << "cannot read /proc/self/pagemap";
    return false;
  }
  if (!complete_memory_marks(arena, error)) return false;
  KeptMarks marks;
  if (!marks.init(arena, count)) {
    error << "no scratch memory for the memory's madvise marks";
    return false;
  }
  *vdso = {};
  bool ok = true;
  for (uint32_t i = 0; i < count && ok; i++) {
    const Mapping& m = maps[i];
    if (is_stasis_memory(m, arena) || is_shared_memory_copy(m.start, m.end)) continue;
    const SharedRegionPlan* shared_plan = nullptr;
    if (m.start < arena.end() && m.end > arena.start()) {
      error << "the checkpoint scratch memory shares a mapping with the program; not checkpointing";
      ok = false;
      break;
    }
    StasisRegionRecord r = {};
    bool every_page = false;
    bool pages_elsewhere = false;  // a kind saves its contents (its FILE_SHARED: the descriptor's)
    r.start = m.start;
    r.end = m.end;
    r.prot = m.prot;
    r.file_offset = m.offset;
    str_copy(r.path, m.path, sizeof r.path);
    if (m.path[0] == '[') {
      if (str_eq(m.path, "[vdso]")) {
        vdso->vdso_start = m.start, vdso->vdso_end = m.end;
        vdso->vdso_checksum = XXH3_64bits(reinterpret_cast<void*>(m.start), m.end - m.start);
        // Its bytes too: a restart under another kernel needs the functions the program may hold
        // pointers to (a few pages; the kernel maps the vdso readable).
        if (m.end - m.start <= STASIS_MAX_VDSO_TEXT)
          ok = writer.add_record(STASIS_REC_VDSO, m.start, reinterpret_cast<const void*>(m.start),
                                 m.end - m.start);
        if (!ok) error << "saving the vdso failed: " << (writer.failure() ? writer.failure() : "write");
        continue;
      }
      if (str_eq(m.path, "[vvar]")) { vdso->vvar_start = m.start, vdso->vvar_end = m.end; continue; }
      if (str_eq(m.path, "[vvar_vclock]")) {
        vdso->vvar_vclock_start = m.start, vdso->vvar_vclock_end = m.end;
        continue;
      }
      if (str_eq(m.path, "[heap]")) r.kind = STASIS_REGION_HEAP;
      else if (str_eq(m.path, "[stack]")) r.kind = STASIS_REGION_STACK;
      else if (str_starts(m.path, "[anon")) r.kind = STASIS_REGION_ANON;
      else continue;  // [vsyscall], [uprobes]: the kernel's
    } else if ((shared_plan = shared_region_plan(m.start, m.end))) {
      // Shared memory no path leads to: the plan says who saves it (plugins/memory/shared_memory).
      r.kind = STASIS_REGION_SHARED_ANON;
      r.file_dev = m.dev;
      r.file_ino = m.inode;
    } else if (m.path[0] == 0) {
      r.kind = m.shared ? STASIS_REGION_SHARED_ANON : STASIS_REGION_ANON;
    } else if (mapping_saved_by_a_kind(m, &r)) {
      // Its contents are saved with a kind's own state (capture table: claim_mapping), once
      // however many times it is mapped; restart brings it back through that kind.
      pages_elsewhere = true;
    } else if (m.shared && unnamed_file(m) && descriptor_holding_file(m.dev, m.inode) >= 0) {
      // The file's contents are saved with that descriptor, and restart maps the file it
      // recreates there: writes through the mapping stay visible through the descriptor.
      r.kind = STASIS_REGION_FILE_SHARED;
      r.file_dev = m.dev;
      r.file_ino = m.inode;
    } else if (unnamed_file(m) || str_ends(m.path, ".stasis")) {
      // Its file is gone, never had a name, or is an image a restart mapped memory from (which
      // may be deleted before the next restart): the data must come from this image. Privately
      // mapped pages never touched are not "present" yet hold the file's data: save them all.
      r.kind = m.shared ? STASIS_REGION_SHARED_ANON : STASIS_REGION_ANON;
      every_page = !m.shared;
    } else {
      r.kind = m.shared ? STASIS_REGION_FILE_SHARED : STASIS_REGION_FILE_PRIVATE;
      fill_file_identity(r);
    }
    if (shared_plan) {
      ok = write_shared_region(writer, r, *shared_plan, error);
    } else if (plan.increment && !every_page &&
        has_run(plan.inherited, plan.inherited_count, m.start, m.end)) {
      ok = write_inherited_region(writer, arena, scanner, r, plan);
    } else {
      ok = write_whole_region(writer, scanner, m, r, every_page, pages_elsewhere);
    }
    if (!ok && error.size() == 0) {
      error << "saving the region " ;
      error.hex(m.start) << "-";
      error.hex(m.end) << " failed: " << (writer.failure() ? writer.failure() : "pagemap read");
    }
    if (ok) marks.keep_within(m.start, m.end);
  }
  scanner.close();
  if (ok && !marks.write(writer)) {
    error << "saving the memory's madvise marks failed: " << (writer.failure() ? writer.failure() : "write");
    ok = false;
  }
  return ok;
}

}  // namespace stasis::rt
