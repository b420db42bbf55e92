/* The lower-half program started inside the program (lower_program_start.h): the upper half maps
 * stasis-mpi-lower-IMPL and its ld.so with the ELF loader (program_loader.c), runs that ld.so on
 * the calling thread with a stack of its own, and the lower half's main, finding
 * STASIS_MPI_HAND_BACK, hands its interface and thread pointer back through
 * stasis_mpi_hand_back, which returns here as if the start had been a call. What the lower
 * half's start-up changed in the thread (its FS base, the kernel's tid address and robust list)
 * is put back before anything of the upper half runs. */
#define _GNU_SOURCE
#include "lower_program_start.h"

#include <asm/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/raw_syscall.h"
#include "lower_tls.h"
#include "ompi_abi/lower_environment.h"
#include "program_loader.h"

extern char **environ;

void *stasis_mpi_loader_mmap(void *address, size_t length, int prot, int flags, int fd, long offset) {
  return mmap(address, length, prot, flags, fd, (off_t)offset);
}

/* The upper thread's registers across the lower half's start-up (offsets used by the assembly). */
typedef struct SwitchContext {
  uint64_t stack_pointer, rbx, rbp, r12, r13, r14, r15; /* 0 .. 48 */
  uint64_t upper_fs;                                     /* 56 */
  uint64_t table, lower_fs;                              /* 64, 72 */
} SwitchContext;
__attribute__((visibility("hidden"))) SwitchContext stasis_mpi_switch;

/* int stasis_mpi_run_lower_start(uintptr_t stack_pointer, uintptr_t entry): saves the callee-saved
 * registers, starts the interpreter as from execve (rdx 0), and "returns" 1 when the lower half
 * calls stasis_mpi_hand_back(table, lower_fs), which also puts the upper half's FS base back
 * (arch_prctl: the lower half's FS is current until then, so no TLS of either half is used). */
int stasis_mpi_run_lower_start(uintptr_t stack_pointer, uintptr_t entry) __attribute__((visibility("hidden")));
void stasis_mpi_hand_back(uint64_t table, uint64_t lower_fs) __attribute__((visibility("hidden")));
__asm__(".text\n"
        ".globl stasis_mpi_run_lower_start\n"
        ".type stasis_mpi_run_lower_start,@function\n"
        "stasis_mpi_run_lower_start:\n"
        "  lea stasis_mpi_switch(%rip), %rax\n"
        "  mov %rsp, 0(%rax)\n"
        "  mov %rbx, 8(%rax)\n"
        "  mov %rbp, 16(%rax)\n"
        "  mov %r12, 24(%rax)\n"
        "  mov %r13, 32(%rax)\n"
        "  mov %r14, 40(%rax)\n"
        "  mov %r15, 48(%rax)\n"
        "  mov %rdi, %rsp\n"
        "  xor %edx, %edx\n"
        "  jmp *%rsi\n"
        ".size stasis_mpi_run_lower_start, .-stasis_mpi_run_lower_start\n"
        ".globl stasis_mpi_hand_back\n"
        ".type stasis_mpi_hand_back,@function\n"
        "stasis_mpi_hand_back:\n"
        "  lea stasis_mpi_switch(%rip), %r8\n"
        "  mov %rdi, 64(%r8)\n"
        "  mov %rsi, 72(%r8)\n"
        "  mov $0x1002, %edi\n" /* ARCH_SET_FS */
        "  mov 56(%r8), %rsi\n"
        "  mov $158, %eax\n" /* SYS_arch_prctl */
        "  syscall\n"
        "  mov 8(%r8), %rbx\n"
        "  mov 16(%r8), %rbp\n"
        "  mov 24(%r8), %r12\n"
        "  mov 32(%r8), %r13\n"
        "  mov 40(%r8), %r14\n"
        "  mov 48(%r8), %r15\n"
        "  mov 0(%r8), %rsp\n"
        "  mov $1, %eax\n"
        "  ret\n"
        ".size stasis_mpi_hand_back, .-stasis_mpi_hand_back\n");

/* After a restart (STASIS_MPI_LAUNCHER_VARIABLES names the new launcher's variables): a variable
 * of an MPI launcher that the new one did not set is the old one's, which the fresh library must
 * not see (Open MPI's, when the restart runs under MPICH). */
static int stale_launcher_variable(const char *entry, const char *names) {
  static const char *const prefixes[] = {"OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPIR_", "OPAL_"};
  if (!names) return 0;
  int launcher = 0;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    launcher |= strncmp(entry, prefixes[i], strlen(prefixes[i])) == 0;
  if (!launcher) return 0;
  size_t length = strcspn(entry, "=");
  for (const char *name = names; *name; name += strcspn(name, ",") + (name[strcspn(name, ",")] == ',')) {
    if (strcspn(name, ",") == length && strncmp(name, entry, length) == 0) return 0;
  }
  return 1;
}

/* STASIS_MPI_INHERITED_SOCKETS=5,6,7: the sockets the launcher left open, counted before main
 * (the program's own come later) and handed to the lower half, whose they are. */
static char inherited_sockets[1024] = "STASIS_MPI_INHERITED_SOCKETS=";

__attribute__((constructor)) static void count_inherited_sockets(void) {
  int fds[64];
  int count = stasis_mpi_inherited_sockets(fds, 64);
  size_t used = strlen(inherited_sockets);
  for (int i = 0; i < count && used + 16 < sizeof inherited_sockets; i++)
    used += (size_t)snprintf(inherited_sockets + used, sizeof inherited_sockets - used, "%s%d", i ? "," : "", fds[i]);
}

const StasisMpiLower *stasis_mpi_start_lower_program(const char *path, char *error, size_t error_size) {
  /* After a restart the launcher is a new one: `stasis restart --mpi-rank` named its sockets. */
  const char *named = getenv("STASIS_MPI_INHERITED_SOCKETS");
  if (named) snprintf(inherited_sockets, sizeof inherited_sockets, "STASIS_MPI_INHERITED_SOCKETS=%s", named);
  /* The lower half's environment: this one without the preloads (the runtime belongs to the
   * upper half alone) and without another process's hand-over, plus where to hand back to. */
  int count = 0;
  while (environ[count]) count++;
  /* mmap, not malloc: at a restart this runs while the program's threads are stopped. */
  size_t envp_bytes = ((size_t)count + 3) * sizeof(char *);
  char **envp = mmap(NULL, envp_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (envp == MAP_FAILED) {
    snprintf(error, error_size, "%s: no memory for its environment", path);
    return NULL;
  }
  int kept = 0;
  const char *launcher_variables = getenv("STASIS_MPI_LAUNCHER_VARIABLES");
  for (int i = 0; i < count; i++)
    if (!stale_launcher_variable(environ[i], launcher_variables) && strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
        strncmp(environ[i], "STASIS_MPI_LOWER_", 17) != 0 &&
        strncmp(environ[i], "STASIS_MPI_HAND_BACK=", 21) != 0 &&
        strncmp(environ[i], "STASIS_MPI_INHERITED_SOCKETS=", 29) != 0) {
      const char *variable = stasis_mpi_lower_environment_variable(environ[i]); /* ompi_abi/README.md */
      if (variable) envp[kept++] = (char *)variable;
    }
  envp[kept++] = inherited_sockets;
  /* The process's real pid (the lower half's getpid): after a restart the program's getpid says
   * the pid it had at the checkpoint. The stack is made by the loader below; its range is known only then, and the variable's
   * place on it is fixed first: it is written again once the range is known. */
  char hand_back[160];
  snprintf(hand_back, sizeof hand_back, "STASIS_MPI_HAND_BACK=%d:%p:%0*x:%0*x", (int)STASIS_SYS0(SYS_getpid),
           (void *)stasis_mpi_hand_back, 16, 0, 16, 0);
  envp[kept++] = hand_back;
  char *argv[] = {(char *)path, NULL};
  StasisMpiLoadedProgram loaded;
  int rc = stasis_mpi_load_program(argv, envp, &loaded, error, error_size);
  munmap(envp, envp_bytes);
  if (rc != 0) return NULL;
  /* Fill in the stack's range in the copy on the new stack (same length: fixed-width digits). */
  char wanted[160];
  snprintf(wanted, sizeof wanted, "STASIS_MPI_HAND_BACK=%d:%p:%016lx:%016lx", (int)STASIS_SYS0(SYS_getpid),
           (void *)stasis_mpi_hand_back, (unsigned long)loaded.stack_start, (unsigned long)loaded.stack_end);
  char **new_envp = (char **)loaded.stack_pointer + 1 + 1 + 1; /* argc, argv[0], NULL */
  for (; *new_envp; new_envp++)
    if (strncmp(*new_envp, "STASIS_MPI_HAND_BACK=", 21) == 0 && strlen(*new_envp) == strlen(wanted))
      memcpy(*new_envp, wanted, strlen(wanted));

  /* What the lower half's start-up sets for this thread, put back after. */
  uint64_t tid_address = 0, robust_length = 0;
  void *robust_head = NULL;
  int have_tid_address = prctl(PR_GET_TID_ADDRESS, &tid_address) == 0;
  syscall(SYS_get_robust_list, 0, &robust_head, &robust_length);
  stasis_mpi_switch.upper_fs = stasis_mpi_get_fs_base();
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* no handler of the upper half may run on its FS */
  stasis_mpi_run_lower_start(loaded.stack_pointer, loaded.entry);
  if (have_tid_address) syscall(SYS_set_tid_address, (void *)tid_address);
  if (robust_head) syscall(SYS_set_robust_list, robust_head, (size_t)robust_length);
  pthread_sigmask(SIG_SETMASK, &old, NULL);

  const StasisMpiLower *lower = (const StasisMpiLower *)(uintptr_t)stasis_mpi_switch.table;
  if (!lower || lower->interface_version != STASIS_MPI_LOWER_INTERFACE_VERSION) {
    snprintf(error, error_size, "%s handed back interface version %u, this upper half speaks %u", path,
             lower ? lower->interface_version : 0, STASIS_MPI_LOWER_INTERFACE_VERSION);
    return NULL;
  }
#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif
  stasis_mpi_fsgsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
  stasis_mpi_lower_tls = stasis_mpi_switch.lower_fs;
  return lower;
}
