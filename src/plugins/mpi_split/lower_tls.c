/* The FS base switch between the halves (lower_tls.h). */
#include "lower_tls.h"

#include <asm/prctl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t stasis_mpi_lower_tls;
uint64_t stasis_mpi_upper_tls_inside;
_Atomic int stasis_mpi_calls_in_lower;
_Atomic int stasis_mpi_checkpoint_pending;
const char *_Atomic stasis_mpi_last_lower_call;
__thread int stasis_mpi_is_checkpoint_thread;

void stasis_mpi_wait_out_checkpoint(void) {
  while (atomic_load(&stasis_mpi_checkpoint_pending)) {
    struct timespec limit = {0, 100 * 1000 * 1000};
    syscall(SYS_futex, &stasis_mpi_checkpoint_pending, FUTEX_WAIT_PRIVATE, 1, &limit, NULL, 0);
  }
}
int stasis_mpi_fsgsbase;

int stasis_mpi_threads_multiple;
_Atomic int stasis_mpi_region_lock;
__thread int stasis_mpi_region_depth __attribute__((tls_model("initial-exec")));

/* The region lock's slow paths (a three-state futex lock: 2 says a thread may sleep on it). */
void stasis_mpi_region_lock_wait(void) {
  while (atomic_exchange(&stasis_mpi_region_lock, 2) != 0)
    syscall(SYS_futex, &stasis_mpi_region_lock, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void stasis_mpi_region_lock_wake(void) {
  syscall(SYS_futex, &stasis_mpi_region_lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* arch_prctl as a raw system call: libc's wrapper would set errno, in whichever TLS is current. */
static long raw_arch_prctl(long code, uint64_t value) {
  long result;
  __asm__ volatile("syscall" : "=a"(result) : "a"(SYS_arch_prctl), "D"(code), "S"(value) : "rcx", "r11", "memory");
  return result;
}

void stasis_mpi_set_fs_base(uint64_t base) {
  if (stasis_mpi_fsgsbase) __asm__ volatile("wrfsbase %0" : : "r"(base) : "memory");
  else raw_arch_prctl(ARCH_SET_FS, base);
}

uint64_t stasis_mpi_get_fs_base(void) {
  uint64_t base = 0;
  if (stasis_mpi_fsgsbase) __asm__ volatile("rdfsbase %0" : "=r"(base));
  else raw_arch_prctl(ARCH_GET_FS, (uint64_t)&base);
  return base;
}
