/* stasis-mpi-lower-IMPL: the lower half as a program of its own (README.md, Where the lower half
 * lives), built per MPI library with its compiler wrapper together with lower_half.c.
 * usage (by an MPI launcher, in the program's place): stasis-mpi-lower-openmpi PROGRAM [ARGS...]
 * PROGRAM (built against abi/mpi.h, linked with libstasis_mpi.so) starts as the upper half with
 * its own ld.so and libc; its libstasis_mpi.so finds this lower half's interface in
 * STASIS_MPI_LOWER_TABLE and this half's thread pointer in STASIS_MPI_LOWER_TLS (each "PID:ADDRESS",
 * so that a child of the program, which inherits them, ignores them). The program's
 * MPI_Init is the first MPI call. This half allocates with its own mmap-only malloc
 * (lower_allocator.c), so the process's brk heap is the upper half's alone.
 * Or started by the program itself (lower_program_start.c, STASIS_MPI_LOWER_MODE=program): then
 * main only hands this half's interface back (STASIS_MPI_HAND_BACK) and never returns. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lower_half_api.h"
#include "lower_inventory.h"
#include "lower_tls.h"
#include "program_loader.h"

extern char **environ;
const StasisMpiLower *stasis_mpi_lower_interface(void);

/* Started by the upper half (lower_program_start.c): STASIS_MPI_HAND_BACK=PID:FUNCTION:STACK_START:
 * STACK_END names the function that takes this half's interface and thread pointer back to the
 * program, and the stack the program made for this half, which is this half's. 0 when the
 * variable is not there or names another process (a child that inherited it). */
typedef void (*HandBack)(uint64_t table, uint64_t lower_fs);
static HandBack hand_back_function(uint64_t *stack_start, uint64_t *stack_end) {
  const char *value = getenv("STASIS_MPI_HAND_BACK");
  long pid = 0;
  unsigned long long function = 0, start = 0, end = 0;
  if (!value || sscanf(value, "%ld:%llx:%llx:%llx", &pid, &function, &start, &end) != 4 || pid != (long)getpid())
    return NULL;
  *stack_start = start;
  *stack_end = end;
  return (HandBack)(uintptr_t)function;
}

int main(int argc, char **argv) {
  char error[600];
  uint64_t stack_start = 0, stack_end = 0;
  HandBack hand_back = hand_back_function(&stack_start, &stack_end);
  stasis_mpi_note_inherited_descriptors(hand_back ? getenv("STASIS_MPI_INHERITED_SOCKETS") : NULL);
  if (hand_back) {
    /* Everything here before main is the program's but this half's link map (read at each
     * inventory) and its stack: what this half maps from now on is counted as it goes. */
    stasis_mpi_fsgsbase = 0;
    stasis_mpi_inventory_add(stack_start, stack_end);
    hand_back((uint64_t)(uintptr_t)stasis_mpi_lower_interface(), stasis_mpi_get_fs_base());
    fprintf(stderr, "stasis-mpi-lower: the program did not take the interface back\n");
    return 127;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: %s PROGRAM [ARGS...]: start PROGRAM as the upper half of a split MPI process\n", argv[0]);
    return 2;
  }
  if (stasis_mpi_inventory_start(error, sizeof error) != 0) {
    fprintf(stderr, "stasis-mpi-lower: %s\n", error);
    return 127;
  }
  stasis_mpi_fsgsbase = 0; /* here only read, once: a system call is fine */
  /* PID:ADDRESS: a process that inherits the variables (a child of the program) is not this one
   * and must not take the address for an interface. */
  char table[96], tls[96];
  snprintf(table, sizeof table, "STASIS_MPI_LOWER_TABLE=%d:%p", (int)getpid(), (const void *)stasis_mpi_lower_interface());
  snprintf(tls, sizeof tls, "STASIS_MPI_LOWER_TLS=%d:0x%llx", (int)getpid(), (unsigned long long)stasis_mpi_get_fs_base());
  int count = 0;
  while (environ[count]) count++;
  char **envp = calloc((size_t)count + 3, sizeof *envp);
  if (!envp) return 127;
  int kept = 0;
  for (int i = 0; i < count; i++)
    if (strncmp(environ[i], "STASIS_MPI_LOWER_", 17) != 0) envp[kept++] = environ[i];
  envp[kept++] = table;
  envp[kept++] = tls;
  stasis_mpi_start_upper_half(argv + 1, envp, error, sizeof error);
  fprintf(stderr, "stasis-mpi-lower: %s\n", error);
  return 127;
}
