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
constexpr uint32_t kMaxPid = STASIS_PID_TABLE_MAX_PID;

uint32_t load(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
void store(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
}  // namespace

bool attach_pid_table() {
  g_table = nullptr;  // after a restart the old mapping's address is stale
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
  if (!g_table || real <= 0 || real >= kMaxPid) return real;
  uint32_t v = load(&g_table->virtual_of_real[real]);
  return v ? v : real;
}

long real_pid_of(long virt) {
  if (!g_table || virt <= 0 || virt >= kMaxPid) return virt;
  uint32_t r = load(&g_table->real_of_virtual[virt]);
  return r ? r : virt;
}

void map_pid(long virt, long real) {
  if (!g_table || virt <= 0 || virt >= kMaxPid || real <= 0 || real >= kMaxPid) return;
  store(&g_table->virtual_of_real[real], static_cast<uint32_t>(virt));
  store(&g_table->real_of_virtual[virt], static_cast<uint32_t>(real));
}

bool virtual_pid_taken(long real) {
  if (!g_table || real <= 0 || real >= kMaxPid) return false;
  uint32_t r = load(&g_table->real_of_virtual[real]);
  return r != 0 && r != static_cast<uint32_t>(real);
}

}  // namespace stasis::rt
