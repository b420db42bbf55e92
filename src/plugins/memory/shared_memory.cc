#include "plugins/memory/shared_memory.h"

#include "plugins/files/capture.h"
#include "plugins/saved_files/saved_files.h"

#include <fcntl.h>
#include <sys/mman.h>

namespace stasis::rt {
namespace {

constexpr uint64_t kPage = 4096;

struct CopiedRun {
  uint64_t addr, len, copy_offset;
};

SharedRegionPlan* g_plans = nullptr;
uint32_t g_plan_count = 0;
CopiedRun* g_runs = nullptr;
uint32_t g_run_count = 0;
char* g_copy = nullptr;
uint64_t g_copy_len = 0;

unsigned char* g_residency = nullptr;  // mincore's answer for one window, from the plan's arena
constexpr uint64_t kWindow = 16384;

// Calls visit(start, len) for each run of [start, end) whose pages the object holds (mincore: a
// page never touched reads as zero and need not be saved).
template <typename Visit>
bool resident_runs(uint64_t start, uint64_t end, Visit visit) {
  unsigned char* vec = g_residency;
  if (!vec) return false;
  uint64_t run_start = 0, run_len = 0;
  for (uint64_t window = start; window < end; window += kWindow * kPage) {
    uint64_t pages = (end - window) / kPage < kWindow ? (end - window) / kPage : kWindow;
    if (STASIS_SYS3(SYS_mincore, window, pages * kPage, vec) != 0) return false;
    for (uint64_t i = 0; i < pages; i++) {
      if (!(vec[i] & 1)) continue;
      uint64_t addr = window + i * kPage;
      if (run_len && run_start + run_len == addr) {
        run_len += kPage;
        continue;
      }
      if (run_len && !visit(run_start, run_len)) return false;
      run_start = addr, run_len = kPage;
    }
  }
  return !run_len || visit(run_start, run_len);
}

// The parent of `pid` (0 when it cannot be read).
long parent_of(long pid) {
  if (pid == 0) return STASIS_SYS0(SYS_getppid);
  char stat[512];
  const char* after_comm = read_proc_stat(pid, stat, sizeof stat);
  return after_comm ? static_cast<long>(proc_stat_field(after_comm, 4)) : 0;
}

bool runs_stasis(const Mapping* maps, uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    if (str_ends(maps[i].path, "/libstasis_runtime.so")) return true;
  return false;
}

// Whether the shared mappings in `theirs` of the object that `mine` maps hold all of its bytes.
bool covers(const Mapping* theirs, uint32_t count, const Mapping& mine) {
  uint64_t covered = mine.offset, wanted = mine.offset + (mine.end - mine.start);
  for (bool progressed = true; progressed && covered < wanted;) {
    progressed = false;
    for (uint32_t i = 0; i < count; i++) {
      const Mapping& t = theirs[i];
      uint64_t t_end = t.offset + (t.end - t.start);
      if (t.shared && t.dev == mine.dev && t.inode == mine.inode && t.offset <= covered && covered < t_end) {
        covered = t_end;
        progressed = true;
      }
    }
  }
  return covered >= wanted;
}

bool copy_bytes(char* to, uint64_t addr, uint64_t len, bool readable, int& proc_mem) {
  if (readable) {
    __builtin_memcpy(to, reinterpret_cast<const char*>(addr), len);
    return true;
  }
  if (proc_mem < 0) proc_mem = static_cast<int>(STASIS_SYS3(SYS_open, "/proc/self/mem", O_RDONLY | O_CLOEXEC, 0));
  return proc_mem >= 0 && STASIS_SYS4(SYS_pread64, proc_mem, to, len, addr) == static_cast<long>(len);
}

// Copies the resident pages of the mappings this process saves into one shared anonymous mapping
// (the kernel never merges it with the program's memory), which the forked writer inherits.
bool copy_saved_bytes(Arena& arena, const Mapping* maps, uint32_t count, LogLine& error) {
  uint64_t total = 0;
  uint32_t runs = 0;
  for (uint32_t p = 0; p < g_plan_count; p++) {
    if (g_plans[p].saved_elsewhere) continue;
    if (!resident_runs(g_plans[p].start, g_plans[p].end, [&](uint64_t, uint64_t len) {
          total += len;
          runs++;
          return true;
        }))
      return false;
  }
  g_runs = static_cast<CopiedRun*>(arena.alloc(sizeof(CopiedRun) * (runs + 1)));
  if (!g_runs) return false;
  if (total) {
    long addr = STASIS_SYS6(SYS_mmap, 0, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (addr < 0 && addr > -4096) {
      error << "cannot copy " << total << " bytes of shared memory for the image writer";
      return false;
    }
    g_copy = reinterpret_cast<char*>(addr);
    g_copy_len = total;
  }
  int proc_mem = -1;
  uint64_t used = 0;
  bool ok = true;
  for (uint32_t p = 0; p < g_plan_count && ok; p++) {
    SharedRegionPlan& plan = g_plans[p];
    if (plan.saved_elsewhere) continue;
    bool readable = false;
    for (uint32_t i = 0; i < count; i++)
      if (maps[i].start == plan.start) readable = maps[i].prot & PROT_READ;
    plan.copied = true;
    plan.first_run = g_run_count;
    ok = resident_runs(plan.start, plan.end, [&](uint64_t start, uint64_t len) {
      if (g_run_count == runs || used + len > total) return false;  // changed under us: cannot be
      if (!copy_bytes(g_copy + used, start, len, readable, proc_mem)) return false;
      g_runs[g_run_count++] = {start, len, used};
      used += len;
      return true;
    });
    plan.run_count = g_run_count - plan.first_run;
  }
  if (proc_mem >= 0) STASIS_SYS1(SYS_close, proc_mem);
  if (!ok) error << "copying shared memory for the image writer failed";
  return ok;
}

}  // namespace

bool is_unnamed_shared_memory(const Mapping& m, const Arena& arena) {
  if (!m.shared || is_shared_memory_copy(m.start, m.end) || is_stasis_memory(m, arena)) return false;
  if (m.path[0] != 0 && (!unnamed_file(m) || mapping_saved_by_a_kind(m))) return false;
  return descriptor_holding_file(m.dev, m.inode) < 0;
}

bool plan_shared_memory(Arena& arena, const Mapping* maps, uint32_t count, bool copy_for_forked_writer,
                        LogLine& error) {
  g_plans = nullptr;
  g_plan_count = 0;
  g_runs = nullptr;
  g_run_count = 0;
  g_copy = nullptr;
  g_copy_len = 0;
  g_residency = static_cast<unsigned char*>(arena.alloc(kWindow));
  uint32_t wanted = 0;
  for (uint32_t i = 0; i < count; i++) wanted += is_unnamed_shared_memory(maps[i], arena);
  if (wanted == 0) return true;
  g_plans = static_cast<SharedRegionPlan*>(arena.alloc(sizeof(SharedRegionPlan) * wanted));
  if (!g_plans) {
    error << "no scratch memory to plan shared memory";
    return false;
  }
  uint32_t undecided = 0;
  for (uint32_t i = 0; i < count; i++)
    if (is_unnamed_shared_memory(maps[i], arena)) {
      g_plans[g_plan_count++] = {maps[i].start, maps[i].end, false, false, 0, 0};
      undecided++;
    }
  // Ancestors in the computation, nearest first; above the first that does not run Stasis none
  // can be (the computation began with an exec, which maps nothing inherited).
  constexpr size_t kAncestorMapsCap = 2u << 20;
  for (long pid = parent_of(0); pid > 1 && undecided; pid = parent_of(pid)) {
    char path[40] = "/proc/";
    format_uint(path + 6, static_cast<unsigned long>(pid));
    str_copy(path + str_len(path), "/maps", 8);
    Mapping* theirs = nullptr;
    LogLine ignored;  // an ancestor that has ended or cannot be read holds nothing for us
    uint32_t their_count = read_mappings(arena, &theirs, ignored, path, kAncestorMapsCap);
    if (their_count == 0 || !runs_stasis(theirs, their_count)) break;
    for (uint32_t p = 0, i = 0; p < g_plan_count; p++) {
      if (g_plans[p].saved_elsewhere) continue;
      while (maps[i].start != g_plans[p].start) i++;
      if (covers(theirs, their_count, maps[i])) {
        g_plans[p].saved_elsewhere = true;
        undecided--;
      }
    }
  }
  return !copy_for_forked_writer || copy_saved_bytes(arena, maps, count, error);
}

const SharedRegionPlan* shared_region_plan(uint64_t start, uint64_t end) {
  for (uint32_t p = 0; p < g_plan_count; p++)
    if (g_plans[p].start == start && g_plans[p].end == end) return &g_plans[p];
  return nullptr;
}

void drop_shared_memory_copy() {
  if (g_copy) STASIS_SYS2(SYS_munmap, g_copy, g_copy_len);
}

bool is_shared_memory_copy(uint64_t start, uint64_t end) {
  uint64_t copy = reinterpret_cast<uint64_t>(g_copy);
  return g_copy && start >= copy && end <= copy + ((g_copy_len + kPage - 1) & ~(kPage - 1));
}

bool write_shared_region(ImageWriter& writer, StasisRegionRecord& r, const SharedRegionPlan& plan,
                         LogLine& error) {
  if (plan.saved_elsewhere) {
    r.kind = STASIS_REGION_SHARED_ELSEWHERE;
    r.saved_bytes = 0;
    return writer.add_record(STASIS_REC_REGION, r.start, &r, sizeof r);
  }
  r.kind = STASIS_REGION_SHARED_ANON;
  r.saved_bytes = 0;
  if (plan.copied) {
    for (uint32_t k = 0; k < plan.run_count; k++) r.saved_bytes += g_runs[plan.first_run + k].len;
    bool ok = writer.add_record(STASIS_REC_REGION, r.start, &r, sizeof r);
    for (uint32_t k = 0; ok && k < plan.run_count; k++) {
      const CopiedRun& run = g_runs[plan.first_run + k];
      ok = writer.add_pages(run.addr, run.len, false, /*skip_zero_pages=*/true, g_copy + run.copy_offset);
    }
    return ok;
  }
  // Written in place: the computation is stopped while this process writes.
  bool unreadable = !(r.prot & PROT_READ);
  bool ok = resident_runs(r.start, r.end, [&](uint64_t, uint64_t len) {
    r.saved_bytes += len;
    return true;
  });
  ok = ok && writer.add_record(STASIS_REC_REGION, r.start, &r, sizeof r);
  ok = ok && resident_runs(r.start, r.end, [&](uint64_t start, uint64_t len) {
    return writer.add_pages(start, len, unreadable, /*skip_zero_pages=*/true);
  });
  if (!ok && error.size() == 0) error << "saving shared memory failed";
  return ok;
}

}  // namespace stasis::rt
