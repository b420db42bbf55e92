// System V attachments kept out of the forked image writer. The kernel counts every mapping of a
// segment in shm_nattch, and a forked child inherits the parent's: a writer that lives on after
// the program resumes (it waits for "resume" before it writes, and writes until "commit") would
// show the program, and every other process of the segment, its attachment count raised for as
// long as it writes. The writer does not need them: a segment's bytes are copied into a memfd in
// the pause (sysv.cc), and an attachment's REGION record carries no pages. So they are marked
// MADV_DONTFORK for the writer's fork alone (the kernel then neither copies them nor counts them),
// and the writer's own list of mappings (read_mappings) gets them back from the pause's list, so
// its image still holds their REGION records and the memory kind's check that the writer has
// every mapping of the pause still holds. Checkpoint path: raw system calls, static tables.
#include <sys/mman.h>

#include "plugins/ipc/ipc.h"
#include "plugins/memory/fork_exclusions.h"

namespace stasis::rt {
namespace {

constexpr uint32_t kMaxWithheld = 2 * STASIS_MAX_SHM_ATTACHMENTS;  // an attachment may be split
constexpr size_t kPathCap = 64;  // "/SYSV0123abcd (deleted)"

struct Withheld {
  Mapping mapping;
  char path[kPathCap];
};
// Filled in the pause just before the fork and emptied in the program right after it, so only the
// writer (whose copy of this table is its own) ever sees it filled.
Withheld g_withheld[kMaxWithheld];
uint32_t g_withheld_count = 0;

bool overlaps(const Mapping& a, const Mapping& b) { return a.start < b.end && b.start < a.end; }

// The program marked it MADV_DONTFORK itself (lend_fork_excluded_memory lifted the mark for the
// writer's fork). Left to the writer: the memory kind keeps that mark in the image from the
// writer's own smaps where the pause did not read it, and the writer's smaps must show it.
bool program_marked_dontfork(const Mapping& m) {
  uint32_t count = 0;
  const StasisMemoryMark* marks = memory_marks(&count);
  for (uint32_t i = 0; i < count; i++)
    if ((marks[i].marks & STASIS_MARK_DONTFORK) && marks[i].start < m.end && m.start < marks[i].end) return true;
  return false;
}

}  // namespace

void withhold_sysv_attachments_from_writer(const Mapping* maps, uint32_t count) {
  g_withheld_count = 0;
  for (uint32_t i = 0; i < count && g_withheld_count < kMaxWithheld; i++) {
    const Mapping& m = maps[i];
    // One that does not fit stays inherited: its count shows while the writer lives, its image
    // is still right (the writer lists it as its own mapping).
    if (!claim_sysv_mapping(m, nullptr) || str_len(m.path) >= kPathCap) continue;
    if (program_marked_dontfork(m)) continue;
    if (STASIS_SYS3(SYS_madvise, m.start, m.end - m.start, MADV_DONTFORK) != 0) continue;
    Withheld& w = g_withheld[g_withheld_count++];
    w.mapping = m;
    str_copy(w.path, m.path, kPathCap);
    w.mapping.path = w.path;
  }
}

void return_sysv_attachments_after_fork() {
  // None of these had a mark of the program's own (program_marked_dontfork).
  for (uint32_t i = 0; i < g_withheld_count; i++) {
    const Mapping& m = g_withheld[i].mapping;
    long r = STASIS_SYS3(SYS_madvise, m.start, m.end - m.start, MADV_DOFORK);
    if (r != 0) {
      LogLine line;
      line << "cannot clear MADV_DONTFORK on the System V attachment at ";
      line.hex(m.start) << " after the image writer's fork (errno " << -r
                        << "): the program's own forks will not inherit it";
      line.emit();
    }
  }
  g_withheld_count = 0;
}

uint32_t add_withheld_sysv_attachments(Arena& arena, Mapping** maps, uint32_t count) {
  if (g_withheld_count == 0) return count;
  auto* out = static_cast<Mapping*>(arena.alloc(sizeof(Mapping) * (count + g_withheld_count)));
  if (!out) return count;  // the caller's next allocation reports the exhausted arena
  const Mapping* in = *maps;
  uint32_t n = 0, i = 0, w = 0;
  while (i < count || w < g_withheld_count) {
    if (w == g_withheld_count || (i < count && in[i].start < g_withheld[w].mapping.start)) {
      out[n++] = in[i++];
      continue;
    }
    const Mapping& m = g_withheld[w++].mapping;
    // Still mapped here (its mark did not take): listed once, as the kernel lists it.
    if ((n > 0 && overlaps(out[n - 1], m)) || (i < count && overlaps(in[i], m))) continue;
    out[n++] = m;
  }
  *maps = out;
  return n;
}

}  // namespace stasis::rt
