/* The descriptors the lower-half program owns (lower_inventory.h): those its libraries open
 * through the functions below, defined in the executable as mmap is (the PMIx and libevent
 * sockets, pipes, event and epoll descriptors, shared-memory files of Open MPI and UCX). Each is
 * remembered with the identity of what it refers to (device and inode), and listed only while
 * the number still refers to that: a descriptor this half's libc closes by itself (fclose) and
 * the upper half then gets at the same number is the upper half's. Descriptors its libc opens
 * inside (fopen, opendir) are not seen: counted as the upper half's, they would be saved for
 * nothing, never lost. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/raw_syscall.h"
#include "lower_inventory.h"
#include "program_loader.h"

enum { FD_CAPACITY = 65536 };
typedef struct Identity {
  uint64_t device, inode; /* 0, 0: not this half's */
} Identity;
static Identity owned[FD_CAPACITY];
static _Atomic int out_of_range; /* a descriptor past FD_CAPACITY: the list cannot be trusted */

static void note_opened(long fd) {
  if (fd < 0) return;
  if (fd >= FD_CAPACITY) {
    out_of_range = 1;
    return;
  }
  struct stat status;
  if (STASIS_SYS2(SYS_fstat, fd, &status) != 0) return;
  owned[fd] = (Identity){status.st_dev, status.st_ino};
}

static void note_closed(long fd) {
  if (fd >= 0 && fd < FD_CAPACITY) owned[fd] = (Identity){0, 0};
}

void stasis_mpi_note_descriptor_call(long number, long rc, long a1, long a4) {
  switch (number) {
    case SYS_open: case SYS_openat: case SYS_creat: case SYS_socket: case SYS_accept: case SYS_accept4:
    case SYS_eventfd: case SYS_eventfd2: case SYS_epoll_create: case SYS_epoll_create1: case SYS_timerfd_create:
    case SYS_signalfd: case SYS_signalfd4: case SYS_inotify_init: case SYS_inotify_init1: case SYS_memfd_create:
    case SYS_dup: case SYS_dup2: case SYS_dup3:
      note_opened(rc);
      break;
    case SYS_fcntl:
      break; /* F_DUPFD: fcntl() below notes it (the command decides) */
    case SYS_pipe: case SYS_pipe2:
      note_opened(((int *)a1)[0]);
      note_opened(((int *)a1)[1]);
      break;
    case SYS_socketpair:
      note_opened(((int *)a4)[0]);
      note_opened(((int *)a4)[1]);
      break;
    case SYS_close: note_closed(a1); break;
    default: break;
  }
}

#define CALL(number, a1, a2, a3, a4) \
  stasis_mpi_with_errno(stasis_mpi_lower_system_call((number), (long)(a1), (long)(a2), (long)(a3), (long)(a4), 0, 0))

int open(const char *path, int flags, ...) {
  va_list arguments;
  va_start(arguments, flags);
  long mode = (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(arguments, int) : 0;
  va_end(arguments);
  return (int)CALL(SYS_openat, AT_FDCWD, path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int directory, const char *path, int flags, ...) {
  va_list arguments;
  va_start(arguments, flags);
  long mode = (flags & (O_CREAT | __O_TMPFILE)) ? va_arg(arguments, int) : 0;
  va_end(arguments);
  return (int)CALL(SYS_openat, directory, path, flags, mode);
}
int openat64(int directory, const char *path, int flags, ...) __attribute__((alias("openat")));

int creat(const char *path, mode_t mode) { return (int)CALL(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode); }
int socket(int domain, int type, int protocol) { return (int)CALL(SYS_socket, domain, type, protocol, 0); }
int socketpair(int domain, int type, int protocol, int pair[2]) {
  return (int)CALL(SYS_socketpair, domain, type, protocol, pair);
}
int accept(int fd, struct sockaddr *address, socklen_t *length) { return (int)CALL(SYS_accept4, fd, address, length, 0); }
int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
  return (int)CALL(SYS_accept4, fd, address, length, flags);
}
int pipe(int pair[2]) { return (int)CALL(SYS_pipe2, pair, 0, 0, 0); }
int pipe2(int pair[2], int flags) { return (int)CALL(SYS_pipe2, pair, flags, 0, 0); }
int eventfd(unsigned int value, int flags) { return (int)CALL(SYS_eventfd2, value, flags, 0, 0); }
int epoll_create(int size) { return (int)CALL(SYS_epoll_create, size, 0, 0, 0); }
int epoll_create1(int flags) { return (int)CALL(SYS_epoll_create1, flags, 0, 0, 0); }
int timerfd_create(int clock, int flags) { return (int)CALL(SYS_timerfd_create, clock, flags, 0, 0); }
int signalfd(int fd, const sigset_t *mask, int flags) { return (int)CALL(SYS_signalfd4, fd, mask, _NSIG / 8, flags); }
int inotify_init1(int flags) { return (int)CALL(SYS_inotify_init1, flags, 0, 0, 0); }
int memfd_create(const char *name, unsigned int flags) { return (int)CALL(SYS_memfd_create, name, flags, 0, 0); }
int dup(int fd) { return (int)CALL(SYS_dup, fd, 0, 0, 0); }
int dup2(int fd, int to) { return (int)CALL(SYS_dup2, fd, to, 0, 0); }
int dup3(int fd, int to, int flags) { return (int)CALL(SYS_dup3, fd, to, flags, 0); }
/* glibc's opens the file inside itself; Open MPI's shared-memory segment comes this way. */
int shm_open(const char *name, int flags, mode_t mode) {
  char path[4096];
  while (*name == '/') name++;
  if (!*name || strchr(name, '/') || snprintf(path, sizeof path, "/dev/shm/%s", name) >= (int)sizeof path) {
    errno = EINVAL;
    return -1;
  }
  return (int)CALL(SYS_openat, AT_FDCWD, path, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

int close(int fd) { return (int)CALL(SYS_close, fd, 0, 0, 0); }

int fcntl(int fd, int command, ...) {
  va_list arguments;
  va_start(arguments, command);
  long argument = va_arg(arguments, long);
  va_end(arguments);
  long rc = CALL(SYS_fcntl, fd, command, argument, 0);
  if (rc >= 0 && (command == F_DUPFD || command == F_DUPFD_CLOEXEC)) note_opened(rc);
  return (int)rc;
}
int fcntl64(int fd, int command, ...) __attribute__((alias("fcntl")));

void stasis_mpi_note_inherited_descriptors(const char *list) {
  if (list) {
    for (char *end; *list; list = *end ? end + 1 : end) {
      long fd = strtol(list, &end, 10);
      if (end == list) break;
      note_opened(fd);
    }
    return;
  }
  int sockets[1024];
  int count = stasis_mpi_inherited_sockets(sockets, 1024);
  for (int i = 0; i < count; i++) note_opened(sockets[i]);
}

int stasis_mpi_lower_descriptors(int *fds, int capacity, int *count) {
  *count = 0;
  if (out_of_range) return -1;
  for (int fd = 0; fd < FD_CAPACITY; fd++) {
    if (!owned[fd].device && !owned[fd].inode) continue;
    struct stat status;
    if (STASIS_SYS2(SYS_fstat, fd, &status) != 0 || status.st_dev != owned[fd].device ||
        status.st_ino != owned[fd].inode)
      continue; /* closed, or another file now: not this half's */
    if (*count == capacity) return -1;
    fds[(*count)++] = fd;
  }
  return 0;
}
