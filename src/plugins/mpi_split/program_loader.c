/* An ELF loader for one program and its interpreter (program_loader.h): what the kernel does at
 * execve, but into a process that keeps running (the other half, its libc, maybe its MPI
 * library). Built into the lower-half program and into libstasis_mpi.so. */
#define _GNU_SOURCE
#include "program_loader.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

enum { PAGE = 4096, MAX_HEADERS = 64, STACK_BYTES = 8 << 20, MAX_STRINGS = 4096 };
#define PAGE_DOWN(x) ((uintptr_t)(x) & ~(uintptr_t)(PAGE - 1))
#define PAGE_UP(x) PAGE_DOWN((uintptr_t)(x) + PAGE - 1)

typedef struct MappedElf {
  Elf64_Ehdr header;
  Elf64_Phdr segments[MAX_HEADERS];
  uintptr_t bias; /* added to every address of the file */
  char interpreter[256];
} MappedElf;

static int fail(char *error, size_t size, const char *path, const char *fault) {
  snprintf(error, size, "%s: %s", path, fault);
  return -1;
}

static int read_headers(int fd, const char *path, MappedElf *elf, char *error, size_t size) {
  Elf64_Ehdr *h = &elf->header;
  if (pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0)
    return fail(error, size, path, "not an ELF file");
  if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_machine != EM_X86_64 || (h->e_type != ET_DYN && h->e_type != ET_EXEC))
    return fail(error, size, path, "not an x86-64 executable or shared object");
  if (h->e_phentsize != sizeof(Elf64_Phdr) || h->e_phnum == 0 || h->e_phnum > MAX_HEADERS)
    return fail(error, size, path, "unexpected program headers");
  size_t bytes = (size_t)h->e_phnum * sizeof(Elf64_Phdr);
  if (pread(fd, elf->segments, bytes, (off_t)h->e_phoff) != (ssize_t)bytes) return fail(error, size, path, "truncated");
  elf->interpreter[0] = '\0';
  for (int i = 0; i < h->e_phnum; i++) {
    const Elf64_Phdr *p = &elf->segments[i];
    if (p->p_type != PT_INTERP) continue;
    if (p->p_filesz == 0 || p->p_filesz >= sizeof elf->interpreter ||
        pread(fd, elf->interpreter, p->p_filesz, (off_t)p->p_offset) != (ssize_t)p->p_filesz)
      return fail(error, size, path, "unreadable PT_INTERP");
    elf->interpreter[p->p_filesz] = '\0';
  }
  return 0;
}

/* Maps every PT_LOAD segment: a shared object (or PIE) where the kernel finds room, a fixed
 * executable at its own addresses (refused if anything is there). */
static int map_segments(int fd, const char *path, MappedElf *elf, char *error, size_t size) {
  uintptr_t low = UINTPTR_MAX, high = 0;
  for (int i = 0; i < elf->header.e_phnum; i++) {
    const Elf64_Phdr *p = &elf->segments[i];
    if (p->p_type != PT_LOAD) continue;
    if (PAGE_DOWN(p->p_vaddr) < low) low = PAGE_DOWN(p->p_vaddr);
    if (PAGE_UP(p->p_vaddr + p->p_memsz) > high) high = PAGE_UP(p->p_vaddr + p->p_memsz);
  }
  if (high <= low) return fail(error, size, path, "no PT_LOAD segment");
  int fixed = elf->header.e_type == ET_EXEC;
  void *reserved = stasis_mpi_loader_mmap(fixed ? (void *)low : NULL, high - low, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | (fixed ? MAP_FIXED_NOREPLACE : 0), -1, 0);
  if (reserved == MAP_FAILED) return fail(error, size, path, "no room for its segments");
  elf->bias = (uintptr_t)reserved - low;
  for (int i = 0; i < elf->header.e_phnum; i++) {
    const Elf64_Phdr *p = &elf->segments[i];
    if (p->p_type != PT_LOAD) continue;
    int prot = (p->p_flags & PF_R ? PROT_READ : 0) | (p->p_flags & PF_W ? PROT_WRITE : 0) |
               (p->p_flags & PF_X ? PROT_EXEC : 0);
    uintptr_t start = PAGE_DOWN(elf->bias + p->p_vaddr);
    uintptr_t file_end = elf->bias + p->p_vaddr + p->p_filesz;
    uintptr_t memory_end = PAGE_UP(elf->bias + p->p_vaddr + p->p_memsz);
    if (p->p_filesz) {
      if (stasis_mpi_loader_mmap((void *)start, PAGE_UP(file_end) - start, prot | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
               (off_t)PAGE_DOWN(p->p_offset)) == MAP_FAILED)
        return fail(error, size, path, "cannot map a segment");
      /* The rest of the last file page belongs to .bss: zero, not the file's next bytes. */
      if (p->p_memsz > p->p_filesz) memset((void *)file_end, 0, PAGE_UP(file_end) - file_end);
      if (mprotect((void *)start, PAGE_UP(file_end) - start, prot) != 0)
        return fail(error, size, path, "cannot protect a segment");
    }
    uintptr_t anonymous = p->p_filesz ? PAGE_UP(file_end) : start;
    if (memory_end > anonymous &&
        stasis_mpi_loader_mmap((void *)anonymous, memory_end - anonymous, prot, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0) ==
            MAP_FAILED)
      return fail(error, size, path, "cannot map its .bss");
  }
  return 0;
}

static int load(const char *path, MappedElf *elf, char *error, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(error, size, path, "cannot open");
  int rc = read_headers(fd, path, elf, error, size);
  if (rc == 0) rc = map_segments(fd, path, elf, error, size);
  close(fd);
  return rc;
}

/* Copies a string to the top of the new stack. */
static char *push_string(char **top, const char *text) {
  size_t length = strlen(text) + 1;
  *top -= length;
  memcpy(*top, text, length);
  return *top;
}

int stasis_mpi_load_program(char **argv, char **envp, StasisMpiLoadedProgram *loaded, char *error, size_t error_size) {
  static MappedElf program, interpreter;
  if (load(argv[0], &program, error, error_size) != 0) return -1;
  if (!program.interpreter[0])
    return fail(error, error_size, argv[0], "has no ELF interpreter (a static program cannot be an upper half yet)");
  if (load(program.interpreter, &interpreter, error, error_size) != 0) return -1;
  uintptr_t headers = 0;
  for (int i = 0; i < program.header.e_phnum; i++)
    if (program.segments[i].p_type == PT_PHDR) headers = program.bias + program.segments[i].p_vaddr;
  if (!headers) return fail(error, error_size, argv[0], "has no PT_PHDR");

  char *stack = stasis_mpi_loader_mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return fail(error, error_size, argv[0], "no memory for its stack");
  char *top = stack + STACK_BYTES;
  static char *strings[MAX_STRINGS];
  int argc = 0, envc = 0;
  while (argv[argc]) argc++;
  while (envp[envc]) envc++;
  if (argc + envc + 2 > MAX_STRINGS) return fail(error, error_size, argv[0], "too many arguments and variables");
  for (int i = 0; i < argc; i++) strings[i] = push_string(&top, argv[i]);
  for (int i = 0; i < envc; i++) strings[argc + i] = push_string(&top, envp[i]);
  char *platform = push_string(&top, "x86_64");
  char *execfn = push_string(&top, argv[0]);
  top -= 16;
  unsigned char *random_bytes = (unsigned char *)top;
  if (getrandom(random_bytes, 16, 0) != 16) return fail(error, error_size, argv[0], "no random bytes for AT_RANDOM");
  uintptr_t auxv[][2] = {
      {AT_PHDR, headers},
      {AT_PHENT, sizeof(Elf64_Phdr)},
      {AT_PHNUM, program.header.e_phnum},
      {AT_PAGESZ, PAGE},
      {AT_BASE, interpreter.bias},
      {AT_FLAGS, 0},
      {AT_ENTRY, program.bias + program.header.e_entry},
      {AT_UID, getuid()},
      {AT_EUID, geteuid()},
      {AT_GID, getgid()},
      {AT_EGID, getegid()},
      {AT_SECURE, 0},
      {AT_RANDOM, (uintptr_t)random_bytes},
      {AT_HWCAP, getauxval(AT_HWCAP)},
      {AT_HWCAP2, getauxval(AT_HWCAP2)},
      {AT_CLKTCK, getauxval(AT_CLKTCK)},
      {AT_PLATFORM, (uintptr_t)platform},
      {AT_EXECFN, (uintptr_t)execfn},
      {AT_SYSINFO_EHDR, getauxval(AT_SYSINFO_EHDR)},
      {AT_MINSIGSTKSZ, getauxval(AT_MINSIGSTKSZ)},
      {AT_NULL, 0},
  };
  size_t words = 1 + (size_t)argc + 1 + (size_t)envc + 1 + 2 * (sizeof auxv / sizeof auxv[0]);
  uintptr_t *sp = (uintptr_t *)PAGE_DOWN((uintptr_t)top - 64) - words;
  sp = (uintptr_t *)((uintptr_t)sp & ~(uintptr_t)15); /* the ABI: 16-byte aligned at argc */
  uintptr_t *word = sp;
  *word++ = (uintptr_t)argc;
  for (int i = 0; i < argc; i++) *word++ = (uintptr_t)strings[i];
  *word++ = 0;
  for (int i = 0; i < envc; i++) *word++ = (uintptr_t)strings[argc + i];
  *word++ = 0;
  for (size_t i = 0; i < sizeof auxv / sizeof auxv[0]; i++) {
    *word++ = auxv[i][0];
    *word++ = auxv[i][1];
  }
  loaded->entry = interpreter.bias + interpreter.header.e_entry;
  loaded->stack_pointer = (uintptr_t)sp;
  loaded->stack_start = (uintptr_t)stack;
  loaded->stack_end = (uintptr_t)stack + STACK_BYTES;
  return 0;
}

int stasis_mpi_start_upper_half(char **argv, char **envp, char *error, size_t error_size) {
  StasisMpiLoadedProgram loaded;
  if (stasis_mpi_load_program(argv, envp, &loaded, error, error_size) != 0) return -1;
  /* As from execve: the stack pointer at argc, rdx 0 (no finaliser for the program to register). */
  /* Fixed registers: rdx is zeroed on the way, so neither input may be given it. */
  __asm__ volatile("mov %%rdi, %%rsp\n\txor %%edx, %%edx\n\tjmp *%%rsi\n"
                   :
                   : "D"(loaded.stack_pointer), "S"(loaded.entry)
                   : "memory");
  __builtin_unreachable();
}

int stasis_mpi_inherited_sockets(int *fds, int capacity) {
  DIR *open_fds = opendir("/proc/self/fd");
  if (!open_fds) return 0;
  int count = 0, own = dirfd(open_fds);
  for (struct dirent *entry; (entry = readdir(open_fds)) && count < capacity;) {
    char path[64], target[64];
    int fd = atoi(entry->d_name);
    if (entry->d_name[0] == '.' || fd <= 2 || fd == own) continue;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(path, target, sizeof target - 1);
    if (length > 7 && strncmp(target, "socket:", 7) == 0) fds[count++] = fd;
  }
  closedir(open_fds);
  for (int i = 1; i < count; i++) /* in order */
    for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
      int swap = fds[j];
      fds[j] = fds[j - 1];
      fds[j - 1] = swap;
    }
  return count;
}
