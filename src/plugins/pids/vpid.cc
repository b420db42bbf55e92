// Virtual pids. A process keeps the pids it saw before a restart (its own, its parent's, its
// children's, its threads' tids), although the kernel hands out new ones. Before the first
// restart every virtual pid is the real one and nothing is translated. `stasis restart` creates
// the computation's pid table (StasisPidTable, a memfd at STASIS_PID_TABLE_FD inherited by every
// process the computation starts): real -> virtual and virtual -> real, 0 meaning "the same".
// Entries are 32-bit atomics, written by the process they name (or, for a process started after
// the restart, also by its parent: see claim_virtual_pid).
#include <fcntl.h>
#include <sys/mman.h>

#include "plugins/pids/pids.h"
#include "runtime/rt.h"

namespace stasis::rt {

StasisPidTable* g_pid_table = nullptr;

bool attach_pid_table(bool after_restart) {
  // A forked child shares its parent's mapping; after a restart the pointer is from before.
  if (after_restart) g_pid_table = nullptr;
  if (g_pid_table) return true;
  // Until the computation's first restart there is no table: this one failed mmap (EBADF) is all
  // a new program pays. A program exec'd by a process that has the table finds it here, as the
  // exec wrappers put it back if the program had closed it (keep_pid_table_for_exec).
  long addr = STASIS_SYS6(SYS_mmap, 0, sizeof(StasisPidTable), PROT_READ | PROT_WRITE, MAP_SHARED,
                          kPidTableFd, 0);
  if (addr < 0 && addr > -4096) return false;
  auto* table = reinterpret_cast<StasisPidTable*>(addr);
  if (table->magic != STASIS_PID_TABLE_MAGIC) {
    STASIS_SYS2(SYS_munmap, addr, sizeof(StasisPidTable));
    return false;
  }
  g_pid_table = table;
  return true;
}

void keep_pid_table_for_exec() {
  if (!g_pid_table || STASIS_SYS2(SYS_fcntl, kPidTableFd, F_GETFD) != -EBADF) return;
  // The program closed the descriptor behind the runtime's back (a raw close, or posix_spawn's
  // closefrom inside libc): the mapping stays, but the program exec starts would have no table.
  // The parent, which forked this process, still has it. (The kernel gives no descriptor for
  // one's own mapping without CAP_CHECKPOINT_RESTORE.)
  char path[48] = "/proc/";
  format_uint(path + 6, static_cast<unsigned long>(STASIS_SYS0(SYS_getppid)));
  str_copy(path + str_len(path), "/fd/1020", 12);
  static_assert(kPidTableFd == 1020, "the path above names the table's descriptor");
  long fd = STASIS_SYS3(SYS_open, path, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return;
  // Read, not mapped: a vfork child shares its parent's address space.
  uint64_t magic = 0;
  if (STASIS_SYS4(SYS_pread64, fd, &magic, sizeof magic, 0) == sizeof magic && magic == STASIS_PID_TABLE_MAGIC)
    STASIS_SYS3(SYS_dup3, fd, kPidTableFd, 0);  // inherited by the new program
  STASIS_SYS1(SYS_close, fd);
}

bool pid_table_region(uint64_t* start, uint64_t* end) {
  if (!g_pid_table) return false;
  *start = reinterpret_cast<uint64_t>(g_pid_table);
  *end = *start + ((sizeof(StasisPidTable) + 4095) & ~4095ul);
  return true;
}

int pid_table_outside_descriptor(uint64_t key) {
  if (!g_pid_table) return -1;
  for (uint32_t i = 0; i < g_pid_table->external_count && i < STASIS_PID_TABLE_MAX_EXTERNAL; i++)
    if (g_pid_table->external_inodes[i] == key) return g_pid_table->external_fds[i];
  return -1;
}

bool pid_table_coordinator(char* host, size_t host_cap, uint16_t* port, char* secret_hex,
                           size_t secret_cap) {
  if (!g_pid_table || g_pid_table->coord_port == 0) return false;
  str_copy(host, g_pid_table->coord_host, host_cap < sizeof g_pid_table->coord_host ? host_cap : sizeof g_pid_table->coord_host);
  *port = g_pid_table->coord_port;
  str_copy(secret_hex, g_pid_table->secret_hex, secret_cap < sizeof g_pid_table->secret_hex ? secret_cap : sizeof g_pid_table->secret_hex);
  return true;
}

const char* pid_table_space() {
  return g_pid_table && g_pid_table->pid_space[0] ? g_pid_table->pid_space : nullptr;
}

long virtual_pid_of(long real) {
  uint32_t v = g_pid_table ? stasis_pid_table_lookup(g_pid_table->virtual_of_real, real) : 0;
  return v ? v : real;
}

long real_pid_of(long virt) {
  uint32_t r = g_pid_table ? stasis_pid_table_lookup(g_pid_table->real_of_virtual, virt) : 0;
  return r ? r : virt;
}

void map_pid(long virt, long real) {
  if (g_pid_table) stasis_pid_table_map(g_pid_table, virt, real);
}

}  // namespace stasis::rt

namespace stasis::rt {
namespace {
// Whether virtual pid `virt` is (now) this real process's; takes it when nobody has it.
bool take_virtual_pid(long virt, long real) {
  uint32_t* slot = &g_pid_table->real_of_virtual[virt];
  uint32_t holder = 0;
  if (__atomic_compare_exchange_n(slot, &holder, static_cast<uint32_t>(real), false,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return true;
  return holder == static_cast<uint32_t>(real);
}
}  // namespace

long claim_virtual_pid(long real) {
  if (!g_pid_table || real <= 0 || real >= static_cast<long>(STASIS_PID_TABLE_MAX_PID)) return real;
  // Already claimed (by this process's parent or by itself before an exec): the pair agrees. A
  // pair left by an earlier process with this real pid agrees too, and it is gone (the kernel
  // reuses a pid only once it is reaped), so taking its virtual pid over is a pid reuse.
  uint32_t known = stasis_pid_table_lookup(g_pid_table->virtual_of_real, real);
  if (known && stasis_pid_table_lookup(g_pid_table->real_of_virtual, known) == static_cast<uint32_t>(real))
    return known;
  long virt = real;
  if (!take_virtual_pid(real, real)) {
    // A process restarted from the checkpoint sees this number: take a fresh one. Numbers from
    // the top of the table down are above the kernel's pid_max unless it was raised to the limit,
    // so they never name a process outside the computation. Entries only ever go from 0 to a
    // pid, so the parent and the child, scanning in the same order, stop at the same slot.
    virt = static_cast<long>(STASIS_PID_TABLE_MAX_PID) - 1;
    while (virt > 1 && !take_virtual_pid(virt, real)) virt--;
  }
  __atomic_store_n(&g_pid_table->virtual_of_real[real], static_cast<uint32_t>(virt), __ATOMIC_RELEASE);
  return virt;
}

long real_pid_argument(long pid) {
  if (pid > 0) return real_pid_of(pid);
  if (pid < -1) return -real_pid_of(-pid);
  return pid;
}

}  // namespace stasis::rt
