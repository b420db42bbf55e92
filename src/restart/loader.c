// The restart loader: a static program without libc, linked at STASIS_LOADER_BASE, that `stasis
// restart` execs (so the restarted process keeps restart's pid, descriptors, cwd and limits).
//
//   switch to our own stack (in .bss)
//   read the plan from the feed pipe
//   park the kernel's vvar/vdso in a scratch area, unmap everything else
//   map every saved region and read its bytes straight from the feed into place
//   (regions a kind brings back its own way: loader_special_regions.h)
//   move vvar/vdso to their saved addresses, restore the mm layout (heap break...)
//   tell the runtime where its coordinator is (StasisRestartInfo)
//   clone one thread per saved thread; each resumes its saved context inside the runtime;
//   this thread becomes the saved leader thread.
// Anything that goes wrong prints one line and exits 1 (the program cannot be resumed then).
#include <asm/prctl.h>
#include <linux/mman.h>
#include <asm-generic/mman-common.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <sys/syscall.h>

#include "common/raw_syscall.h"
#include "restart/loader_protocol.h"
#include "restart/loader_special_regions.h"

#define MAP_FAILED_MAX (-4096L)

void loader_context_resume(const StasisCpuContext* ctx) __attribute__((noreturn));
long loader_clone_resume(unsigned long flags, void* stack, void* ptid, void* ctid,
                         unsigned long tls, const StasisCpuContext* ctx);
void loader_main(long* initial_sp) __attribute__((noreturn, used));

char g_stack[256 * 1024] __attribute__((aligned(64), used));
static StasisLoaderPlan g_plan;
static StasisLoaderThread g_threads[STASIS_MAX_THREADS];
static char g_maps[256 * 1024];
static int g_feed = -1;
static unsigned long g_objects_to_close[1024 / 64];  // shared memory descriptors, closed when mapped

__asm__(
    ".text\n"
    ".globl _start\n"
    "_start:\n"
    "  movq %rsp, %rdi\n"
    "  leaq g_stack+262144(%rip), %rsp\n"
    "  andq $-16, %rsp\n"
    "  call loader_main\n"
    "  hlt\n");

void* memset(void* dst, int c, unsigned long n) {
  unsigned char* d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

void* memcpy(void* dst, const void* src, unsigned long n) {
  unsigned char* d = dst;
  const unsigned char* s = src;
  while (n--) *d++ = *s++;
  return dst;
}

static unsigned long str_len(const char* s) {
  unsigned long n = 0;
  while (s[n]) n++;
  return n;
}

static int str_eq(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

// Where a failure is reported: `stasis restart`'s own stderr (argv[2]), not the program's.
static int g_error_fd = 2;
static void write_str(const char* s) { STASIS_SYS3(SYS_write, g_error_fd, s, str_len(s)); }

static void write_num(long v) {
  char buf[24];
  int n = 0;
  if (v < 0) {
    write_str("-");
    v = -v;
  }
  do {
    buf[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  char out[24];
  for (int i = 0; i < n; i++) out[i] = buf[n - 1 - i];
  out[n] = 0;
  write_str(out);
}

static void __attribute__((noreturn)) die(const char* what, long err) {
  write_str("stasis restart: ");
  write_str(what);
  if (err) {
    write_str(" (error ");
    write_num(err);
    write_str(")");
  }
  write_str("\n");
  STASIS_SYS1(SYS_exit_group, 1);
  __builtin_unreachable();
}

static void read_exact(void* buf, unsigned long len) {
  char* p = buf;
  while (len) {
    long n = STASIS_SYS3(SYS_read, g_feed, p, len);
    if (n == -4 /* EINTR */) continue;
    if (n <= 0) die("the image feed ended early (the feeder failed or the image is damaged)", n);
    p += n;
    len -= (unsigned long)n;
  }
}

static int is_error(long r) { return r < 0 && r > MAP_FAILED_MAX; }

// One range's madvise marks (StasisMemoryMarkBits; the feeder checked it lies in restored memory).
static void set_memory_marks(const StasisMemoryMark* mark) {
  static const struct {
    uint32_t bit;
    int advice;
    int must_hold;  // it changes what a forked child of the program sees
    const char* name;
  } kAdvice[] = {
      {STASIS_MARK_DONTFORK, MADV_DONTFORK, 1, "cannot mark restored memory MADV_DONTFORK again"},
      {STASIS_MARK_WIPEONFORK, MADV_WIPEONFORK, 1,
       "cannot mark restored memory MADV_WIPEONFORK again (Linux 4.14 or later has it)"},
      {STASIS_MARK_DONTDUMP, MADV_DONTDUMP, 0, 0},
      {STASIS_MARK_HUGEPAGE, MADV_HUGEPAGE, 0, 0},
      {STASIS_MARK_NOHUGEPAGE, MADV_NOHUGEPAGE, 0, 0},
      {STASIS_MARK_MERGEABLE, MADV_MERGEABLE, 0, 0},
  };
  for (unsigned i = 0; i < sizeof kAdvice / sizeof kAdvice[0]; i++) {
    if (!(mark->marks & kAdvice[i].bit)) continue;
    long r = STASIS_SYS3(SYS_madvise, mark->start, mark->end - mark->start, kAdvice[i].advice);
    if (r != 0 && kAdvice[i].must_hold) die(kAdvice[i].name, r);
  }
}

static unsigned long parse_hex(const char** p) {
  unsigned long v = 0;
  for (;; (*p)++) {
    char c = **p;
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else break;
    v = (v << 4) | (unsigned long)d;
  }
  return v;
}

struct Mapping {
  unsigned long start, end;
  const char* name;
};

// Parses /proc/self/maps into `out` (names point into g_maps); returns the count.
static int read_maps(struct Mapping* out, int cap) {
  long fd = STASIS_SYS3(SYS_open, "/proc/self/maps", 0, 0);
  if (fd < 0) die("cannot read /proc/self/maps", fd);
  unsigned long len = 0;
  for (;;) {
    long n = STASIS_SYS3(SYS_read, fd, g_maps + len, sizeof g_maps - 1 - len);
    if (n <= 0) break;
    len += (unsigned long)n;
  }
  STASIS_SYS1(SYS_close, fd);
  g_maps[len] = 0;
  int count = 0;
  for (char* p = g_maps; *p && count < cap;) {
    const char* q = p;
    struct Mapping m;
    m.start = parse_hex(&q);
    q++;
    m.end = parse_hex(&q);
    char* eol = p;
    while (*eol && *eol != '\n') eol++;
    int more = *eol != 0;
    *eol = 0;
    char* name = eol;
    while (name > p && name[-1] != ' ') name--;
    m.name = name;
    out[count++] = m;
    p = more ? eol + 1 : eol;
  }
  return count;
}

static struct Mapping g_mappings[4096];

struct KernelSpecial {
  const char* name;
  unsigned long* saved_start;
  unsigned long* saved_end;
  unsigned long current_start, current_end;
};

static void move_mapping(unsigned long from, unsigned long len, unsigned long to) {
  if (from == to) return;
  long r = stasis_syscall6(SYS_mremap, (long)from, (long)len, (long)len,
                           MREMAP_MAYMOVE | MREMAP_FIXED, (long)to, 0);
  if (is_error(r)) die("cannot move the vdso/vvar pages", r);
}

// The saved vdso's bytes at their address, each exported function's entry replaced by a jump to
// the running kernel's one (or by the system call it stands for); its vvar pages become zero
// pages, which its code reads as "no usable clock" (see StasisVdsoProxy).
static void redirect_saved_vdso(const StasisVdsoLayout* saved, const StasisVdsoProxy* proxy,
                                unsigned long new_vdso) {
  unsigned long start = saved->vdso_start, len = saved->vdso_end - saved->vdso_start;
  if (len != proxy->text_len || len > sizeof proxy->text) die("the restart plan's vdso has the wrong size", 0);
  long r = STASIS_SYS6(SYS_mmap, start, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (is_error(r)) die("cannot map the saved vdso again", r);
  memcpy((void*)start, proxy->text, len);
  for (uint32_t i = 0; i < proxy->patch_count && i < STASIS_MAX_VDSO_PATCHES; i++) {
    const StasisVdsoPatch* p = &proxy->patches[i];
    unsigned char* at = (unsigned char*)(start + p->old_offset);
    unsigned long need = p->kind == STASIS_VDSO_JUMP ? 12 : 8;
    if (p->old_offset + need > len) die("the restart plan patches outside the vdso", p->old_offset);
    if (p->kind == STASIS_VDSO_JUMP) {
      unsigned long target = new_vdso + p->target;
      at[0] = 0x48, at[1] = 0xb8;  // movabs $target, %rax
      memcpy(at + 2, &target, 8);
      at[10] = 0xff, at[11] = 0xe0;  // jmp *%rax
    } else if (p->kind == STASIS_VDSO_SYSCALL) {
      uint32_t nr = (uint32_t)p->target;
      at[0] = 0xb8;  // mov $nr, %eax
      memcpy(at + 1, &nr, 4);
      at[5] = 0x0f, at[6] = 0x05, at[7] = 0xc3;  // syscall; ret
    } else if (p->kind == STASIS_VDSO_FAIL) {
      int32_t value = -(int32_t)p->target;
      at[0] = 0x48, at[1] = 0xc7, at[2] = 0xc0;  // mov $value, %rax (sign-extended)
      memcpy(at + 3, &value, 4);
      at[7] = 0xc3;  // ret
    } else {
      die("the restart plan has an unknown vdso patch", p->kind);
    }
  }
  r = STASIS_SYS3(SYS_mprotect, start, len, PROT_READ | PROT_EXEC);
  if (r != 0) die("cannot make the saved vdso executable", r);
  unsigned long vvars[2][2] = {{saved->vvar_start, saved->vvar_end},
                               {saved->vvar_vclock_start, saved->vvar_vclock_end}};
  for (int v = 0; v < 2; v++) {
    if (!vvars[v][0]) continue;
    r = STASIS_SYS6(SYS_mmap, vvars[v][0], vvars[v][1] - vvars[v][0], PROT_READ,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (is_error(r)) die("cannot map the saved vvar range", r);
  }
}

void loader_main(long* initial_sp) {
  char** argv = (char**)(initial_sp + 1);
  if (initial_sp[0] < 2) die("usage: stasis-loader FEED_FD (run by `stasis restart`)", 0);
  g_feed = 0;
  for (const char* p = argv[1]; *p; p++) g_feed = g_feed * 10 + (*p - '0');
  if (initial_sp[0] >= 3) {
    int error_fd = 0;
    for (const char* p = argv[2]; *p >= '0' && *p <= '9'; p++) error_fd = error_fd * 10 + (*p - '0');
    if (error_fd > 0) g_error_fd = error_fd;
  }

  unsigned long all = ~0ul;
  STASIS_SYS4(SYS_rt_sigprocmask, 2 /* SIG_SETMASK */, &all, 0, 8);

  read_exact(&g_plan, sizeof g_plan);
  if (g_plan.magic != STASIS_LOADER_PLAN_MAGIC) die("the image feed is not a restart plan", 0);
  if (g_plan.thread_count == 0 || g_plan.thread_count > STASIS_MAX_THREADS)
    die("the restart plan has an impossible thread count", g_plan.thread_count);
  read_exact(g_threads, sizeof(StasisLoaderThread) * g_plan.thread_count);

  // 1. Park the kernel's special mappings in the scratch area, keeping their relative layout.
  struct KernelSpecial specials[3] = {
      {"[vvar]", (unsigned long*)&g_plan.vdso.vvar_start, (unsigned long*)&g_plan.vdso.vvar_end, 0, 0},
      {"[vvar_vclock]", (unsigned long*)&g_plan.vdso.vvar_vclock_start,
       (unsigned long*)&g_plan.vdso.vvar_vclock_end, 0, 0},
      {"[vdso]", (unsigned long*)&g_plan.vdso.vdso_start, (unsigned long*)&g_plan.vdso.vdso_end, 0, 0},
  };
  int count = read_maps(g_mappings, 4096);
  unsigned long current_base = ~0ul;
  for (int i = 0; i < count; i++)
    for (int s = 0; s < 3; s++)
      if (str_eq(g_mappings[i].name, specials[s].name)) {
        specials[s].current_start = g_mappings[i].start;
        specials[s].current_end = g_mappings[i].end;
        if (g_mappings[i].start < current_base) current_base = g_mappings[i].start;
      }
  for (int s = 0; s < 3; s++)
    if (specials[s].current_start)
      move_mapping(specials[s].current_start, specials[s].current_end - specials[s].current_start,
                   STASIS_LOADER_SCRATCH + (specials[s].current_start - current_base));

  // 2. Unmap everything that is not the loader or the parked pages.
  count = read_maps(g_mappings, 4096);
  for (int i = 0; i < count; i++) {
    struct Mapping* m = &g_mappings[i];
    if (m->start >= STASIS_LOADER_BASE && m->end <= STASIS_LOADER_LIMIT) continue;
    if (str_eq(m->name, "[vsyscall]")) continue;
    long r = STASIS_SYS2(SYS_munmap, m->start, m->end - m->start);
    if (r != 0) die("cannot clear the address space", r);
  }

  // 3. Map every saved region and fill it from the feed.
  for (uint32_t i = 0; i < g_plan.region_count; i++) {
    StasisLoaderRegion region;
    read_exact(&region, sizeof region);
    unsigned long len = region.end - region.start;
    long addr;
    const char* failure = 0;
    if (stasis_map_special_region(&g_plan.restart_info, &region, &addr, &failure)) {
      if (failure) die(failure, 0);
    } else if (region.kind == STASIS_REGION_FILE_PRIVATE || region.kind == STASIS_REGION_FILE_SHARED) {
      int shared = region.kind == STASIS_REGION_FILE_SHARED;
      int flags = (shared && (region.prot & PROT_WRITE)) ? 2 /* O_RDWR */ : 0;
      long fd = region.object_fd > 0 ? region.object_fd
                                     : STASIS_SYS3(SYS_open, region.path, flags | 02000000 /* O_CLOEXEC */, 0);
      if (fd < 0) {
        write_str("stasis restart: cannot open ");
        write_str(region.path);
        die(" to map it again", fd);
      }
      unsigned long prot = shared ? region.prot : (PROT_READ | PROT_WRITE);
      addr = STASIS_SYS6(SYS_mmap, region.start, len, prot,
                         (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED, fd, region.file_offset);
      if (region.object_fd > 0 && region.object_fd < 1024)
        g_objects_to_close[region.object_fd / 64] |= 1ul << (region.object_fd % 64);
      else
        STASIS_SYS1(SYS_close, fd);
    } else {
      int sharing = region.kind == STASIS_REGION_SHARED_ANON ? MAP_SHARED : MAP_PRIVATE;
      addr = STASIS_SYS6(SYS_mmap, region.start, len, PROT_READ | PROT_WRITE,
                         sharing | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    }
    if (is_error(addr) || (unsigned long)addr != region.start) die("cannot map a saved region", addr);
    for (uint32_t c = 0; c < region.chunk_count; c++) {
      StasisLoaderChunk chunk;
      read_exact(&chunk, sizeof chunk);
      if (chunk.addr < region.start || chunk.addr + chunk.len > region.end)
        die("the restart plan has a chunk outside its region", 0);
      if (chunk.mapped) {
        int image = chunk.image_fd > 0 ? chunk.image_fd : g_plan.image_fd;
        long got = STASIS_SYS6(SYS_mmap, chunk.addr, chunk.len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_FIXED, image, chunk.file_offset);
        if (is_error(got)) die("cannot map memory from the image", got);
      } else {
        read_exact((void*)chunk.addr, chunk.len);
      }
    }
    if (region.kind != STASIS_REGION_FILE_SHARED) {
      long r = STASIS_SYS3(SYS_mprotect, region.start, len, region.prot);
      if (r != 0) die("cannot restore a region's protection", r);
    }
  }
  // 4. The madvise marks the memory had. Those that change what a forked child sees must hold;
  //    the others are hints a kernel may not know (no THP, no KSM).
  for (uint32_t i = 0; i < g_plan.mark_count; i++) {
    StasisMemoryMark mark;
    read_exact(&mark, sizeof mark);
    set_memory_marks(&mark);
  }
  uint64_t end_magic = 0;
  read_exact(&end_magic, sizeof end_magic);
  if (end_magic != STASIS_LOADER_END_MAGIC) die("the image feed is out of step", 0);
  STASIS_SYS1(SYS_close, g_feed);
  if (g_plan.image_fd >= 0) STASIS_SYS1(SYS_close, g_plan.image_fd);
  for (int i = 0; i < STASIS_MAX_ANCESTOR_FDS; i++)
    if (g_plan.ancestor_image_fds[i] > 0) STASIS_SYS1(SYS_close, g_plan.ancestor_image_fds[i]);
  for (int fd = 0; fd < 1024; fd++)
    if (g_objects_to_close[fd / 64] & (1ul << (fd % 64))) STASIS_SYS1(SYS_close, fd);

  // 5. vvar/vdso back to the addresses the program's code remembers; under another kernel, the
  //    kernel's to a free place and the saved vdso, redirected to it, back where it was.
  for (int s = 0; s < 3; s++) {
    if (!specials[s].current_start) continue;
    unsigned long parked = STASIS_LOADER_SCRATCH + (specials[s].current_start - current_base);
    unsigned long len = specials[s].current_end - specials[s].current_start;
    if (g_plan.vdso_proxy.active)
      move_mapping(parked, len, g_plan.vdso_proxy.new_base + (specials[s].current_start - current_base));
    else if (*specials[s].saved_start) move_mapping(parked, len, *specials[s].saved_start);
    else STASIS_SYS2(SYS_munmap, parked, len);
  }
  if (g_plan.vdso_proxy.active) {
    unsigned long new_vdso = 0;
    for (int s = 0; s < 3; s++)
      if (str_eq(specials[s].name, "[vdso]") && specials[s].current_start)
        new_vdso = g_plan.vdso_proxy.new_base + (specials[s].current_start - current_base);
    if (!new_vdso) die("this kernel gave the restart no vdso to redirect the saved one to", 0);
    redirect_saved_vdso(&g_plan.vdso, &g_plan.vdso_proxy, new_vdso);
  }

  // 6. Heap break, argument/environment bounds, auxv (unprivileged since Linux 3.18).
  if (g_plan.restore_mm) {
    struct prctl_mm_map map = {
        .start_code = g_plan.mm.start_code, .end_code = g_plan.mm.end_code,
        .start_data = g_plan.mm.start_data, .end_data = g_plan.mm.end_data,
        .start_brk = g_plan.mm.start_brk, .brk = g_plan.mm.brk,
        .start_stack = g_plan.mm.start_stack, .arg_start = g_plan.mm.arg_start,
        .arg_end = g_plan.mm.arg_end, .env_start = g_plan.mm.env_start,
        .env_end = g_plan.mm.env_end, .auxv = (__u64*)g_plan.mm.auxv,
        .auxv_size = g_plan.mm.auxv_words * 8, .exe_fd = (uint32_t)-1};
    long r = STASIS_SYS5(SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, &map, sizeof map, 0);
    g_plan.restart_info.mm_restore_status = (int32_t)r;  // not fatal: malloc falls back to mmap
  }

  // 7. Tell the restarted runtime how to reach its coordinator.
  g_plan.restart_info.magic = STASIS_RESTART_INFO_MAGIC;
  g_plan.restart_info.loader_start = STASIS_LOADER_BASE;
  g_plan.restart_info.loader_end = STASIS_LOADER_LIMIT;
  *(StasisRestartInfo*)g_plan.restart_info_addr = g_plan.restart_info;

  // 8. Threads.
  StasisLoaderThread* leader = 0;
  for (uint32_t i = 0; i < g_plan.thread_count; i++) {
    StasisLoaderThread* t = &g_threads[i];
    if (t->is_leader) {
      leader = t;
      continue;
    }
    unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                          CLONE_SYSVSEM | CLONE_SETTLS;
    if (t->tcb_tid_addr) flags |= CLONE_PARENT_SETTID;
    if (t->clear_child_tid) flags |= CLONE_CHILD_CLEARTID;
    long tid = loader_clone_resume(flags, (void*)(t->context.rsp - 1024), (void*)t->tcb_tid_addr,
                                   (void*)t->clear_child_tid, t->fs_base, &t->context);
    if (tid < 0) die("cannot re-create a thread", tid);
  }
  if (!leader) die("the image has no main thread", 0);
  STASIS_SYS2(SYS_arch_prctl, ARCH_SET_FS, leader->fs_base);
  if (leader->clear_child_tid) STASIS_SYS1(SYS_set_tid_address, leader->clear_child_tid);
  if (leader->tcb_tid_addr) *(int32_t*)leader->tcb_tid_addr = (int32_t)STASIS_SYS0(SYS_gettid);
  loader_context_resume(&leader->context);
}
