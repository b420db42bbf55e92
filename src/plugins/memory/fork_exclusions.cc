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
constexpr unsigned kDontFork = 1, kWipeOnFork = 2;
struct LentRange {
  uint64_t start, end;
  unsigned marks;  // what to set again: kDontFork, kWipeOnFork or both
};
LentRange* g_lent = nullptr;  // in the arena, which outlives the fork
uint32_t g_lent_count = 0;

long set_advice(uint64_t start, uint64_t end, int advice) {
  return STASIS_SYS3(SYS_madvise, start, end - start, advice);
}

// "dc" (VM_DONTCOPY) and "wf" (VM_WIPEONFORK) among the VmFlags of one smaps entry.
unsigned fork_marks(const char* flags) {
  unsigned marks = 0;
  for (const char* p = flags; *p && *p != '\n'; p++)
    if (p[0] == ' ' && p[1] && p[2] && (p[3] == ' ' || p[3] == '\n' || p[3] == 0)) {
      if (p[1] == 'd' && p[2] == 'c') marks |= kDontFork;
      if (p[1] == 'w' && p[2] == 'f') marks |= kWipeOnFork;
    }
  return marks;
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

long set_marks(const LentRange& r, bool on) {
  long a = 0, b = 0;
  if (r.marks & kDontFork) a = set_advice(r.start, r.end, on ? MADV_DONTFORK : MADV_DOFORK);
  if (r.marks & kWipeOnFork) b = set_advice(r.start, r.end, on ? MADV_WIPEONFORK : MADV_KEEPONFORK);
  return a != 0 ? a : b;
}
}  // namespace

bool lend_fork_excluded_memory(Arena& arena, LogLine& why) {
  g_lent_count = 0;
  constexpr size_t kCap = 16u << 20;
  char* text = static_cast<char*>(arena.alloc(kCap));
  if (!text || read_small_file("/proc/self/smaps", text, kCap) <= 0) {
    why << "cannot read /proc/self/smaps";
    return false;
  }
  uint32_t cap = 64;
  g_lent = static_cast<LentRange*>(arena.alloc(sizeof(LentRange) * cap));
  uint64_t start = 0, end = 0;
  char release[65] = {};
  int pinned_pages_safe = -1;  // asked of the kernel at the first MADV_DONTFORK mapping only
  for (const char* line = text; *line;) {
    bool header = (*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f');
    if (header) {
      const char* p = line;
      start = parse_hex(p);
      p++;  // '-'
      end = parse_hex(p);
    } else if (str_starts(line, "VmFlags:")) {
      unsigned marks = fork_marks(line + 8);
      if ((marks & kDontFork) && pinned_pages_safe < 0) pinned_pages_safe = fork_copies_pinned_pages(release);
      if ((marks & kDontFork) && !pinned_pages_safe) {
        why << "the mapping at 0x";
        why.hex(start);
        why << " is marked MADV_DONTFORK (as memory pinned for DMA is) and kernel " << release
            << " shares pinned pages with a forked child";
        take_back_fork_excluded_memory();
        return false;
      }
      if (marks != 0) {
        if (!g_lent || (g_lent_count == cap && !arena.grow(g_lent, cap))) {
          why << "no scratch memory for the mappings marked MADV_DONTFORK/MADV_WIPEONFORK";
          take_back_fork_excluded_memory();
          return false;
        }
        g_lent[g_lent_count] = {start, end, marks};
        long r = set_marks(g_lent[g_lent_count], false);
        if (r != 0) {
          set_marks(g_lent[g_lent_count], true);  // whichever half was lifted
          why << "the mapping at 0x";
          why.hex(start);
          why << " is marked MADV_DONTFORK/MADV_WIPEONFORK and the mark cannot be lifted for the "
                 "forked writer (" << r << ")";
          take_back_fork_excluded_memory();
          return false;
        }
        g_lent_count++;
      }
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return true;
}

void take_back_fork_excluded_memory() {
  for (uint32_t i = 0; i < g_lent_count; i++) {
    long r = set_marks(g_lent[i], true);
    if (r != 0) {
      LogLine line;
      line << "warning: could not mark 0x";
      line.hex(g_lent[i].start);
      (line << " MADV_DONTFORK/MADV_WIPEONFORK again after the checkpoint's fork (" << r
            << "); the program's own forks now copy it")
          .emit();
    }
  }
  g_lent_count = 0;
}

}  // namespace stasis::rt
