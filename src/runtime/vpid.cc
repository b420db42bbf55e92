// Virtual pids. A process keeps the pids it saw before a restart (its own, its parent's, its
// children's, its threads' tids), although the kernel hands out new ones. Before the first
// restart every virtual pid is the real one and nothing is translated. `stasis restart` creates
// the computation's pid table (StasisPidTable, a memfd at STASIS_PID_TABLE_FD inherited by every
// process the computation starts): real -> virtual and virtual -> real, 0 meaning "the same".
// Each entry is written by the one process it names, with plain 32-bit atomic stores.
#include <sys/mman.h>

#include "runtime/rt.h"

namespace stasis::rt {
namespace {
StasisPidTable* g_table = nullptr;
}  // namespace

bool attach_pid_table(bool after_restart) {
  // A forked child shares its parent's mapping; after a restart the pointer is from before.
  if (after_restart) g_table = nullptr;
  if (g_table) return true;
  long addr = STASIS_SYS6(SYS_mmap, 0, sizeof(StasisPidTable), PROT_READ | PROT_WRITE, MAP_SHARED,
                          kPidTableFd, 0);
  if (addr < 0 && addr > -4096) return false;
  auto* table = reinterpret_cast<StasisPidTable*>(addr);
  if (table->magic != STASIS_PID_TABLE_MAGIC) {
    STASIS_SYS2(SYS_munmap, addr, sizeof(StasisPidTable));
    return false;
  }
  g_table = table;
  return true;
}

bool pid_table_region(uint64_t* start, uint64_t* end) {
  if (!g_table) return false;
  *start = reinterpret_cast<uint64_t>(g_table);
  *end = *start + ((sizeof(StasisPidTable) + 4095) & ~4095ul);
  return true;
}

bool pid_table_external_inode(uint64_t ino) {
  if (!g_table) return false;
  for (uint32_t i = 0; i < g_table->external_count && i < STASIS_PID_TABLE_MAX_EXTERNAL; i++)
    if (g_table->external_inodes[i] == ino) return true;
  return false;
}

bool have_pid_table() { return g_table != nullptr; }

bool pid_table_coordinator(char* host, size_t host_cap, uint16_t* port, char* secret_hex,
                           size_t secret_cap) {
  if (!g_table || g_table->coord_port == 0) return false;
  str_copy(host, g_table->coord_host, host_cap < sizeof g_table->coord_host ? host_cap : sizeof g_table->coord_host);
  *port = g_table->coord_port;
  str_copy(secret_hex, g_table->secret_hex, secret_cap < sizeof g_table->secret_hex ? secret_cap : sizeof g_table->secret_hex);
  return true;
}

long virtual_pid_of(long real) {
  uint32_t v = g_table ? stasis_pid_table_lookup(g_table->virtual_of_real, real) : 0;
  return v ? v : real;
}

long real_pid_of(long virt) {
  uint32_t r = g_table ? stasis_pid_table_lookup(g_table->real_of_virtual, virt) : 0;
  return r ? r : virt;
}

void map_pid(long virt, long real) {
  if (g_table) stasis_pid_table_map(g_table, virt, real);
}

}  // namespace stasis::rt
