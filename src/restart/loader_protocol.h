// What `stasis restart` hands to the restart loader, and what the loader hands to the restarted
// runtime. The loader uses no libc, so both are fixed-size C structs.
//
// Feed stream (a pipe from the feeder process to the loader; the loader reads it sequentially
// and writes every byte of memory straight to its final address):
//   StasisLoaderPlan
//   StasisLoaderThread[plan.thread_count]
//   per region: StasisLoaderRegion, then region.chunk_count times { StasisLoaderChunk, bytes }
//   StasisMemoryMark[plan.mark_count]: madvise marks set once every region is mapped
//   uint64_t STASIS_LOADER_END_MAGIC
#pragma once
#include <stdint.h>

#include "image/format.h"
#include "plugins/ipc/restart_info.h"
#include "plugins/sockets/restart_info.h"

typedef struct StasisRestartInfo StasisRestartInfo;
typedef struct StasisLoaderPlan StasisLoaderPlan;
typedef struct StasisLoaderThread StasisLoaderThread;
typedef struct StasisLoaderRegion StasisLoaderRegion;
typedef struct StasisLoaderChunk StasisLoaderChunk;

#define STASIS_LOADER_PLAN_MAGIC 0x4e414c5053495453ull /* "STISPLAN" */
#define STASIS_LOADER_END_MAGIC 0x444e4553495453ull
#define STASIS_RESTART_INFO_MAGIC 0x4f464e4952545453ull

// The runtime's coordinator connection lives at this descriptor number, in the launched process
// and again after a restart: `stasis restart` keeps it free for it.
#define STASIS_COORDINATOR_FD 1021
// After a restart, the computation's table of virtual pids (a memfd shared by all its processes
// and inherited by every process they start).
#define STASIS_PID_TABLE_FD 1020

// Fixed addresses of the loader (linked there; see src/restart/CMakeLists.txt). `stasis restart`
// refuses an image with a mapping inside [STASIS_LOADER_BASE, STASIS_LOADER_LIMIT).
#define STASIS_LOADER_BASE 0x3a5100000000ull
#define STASIS_LOADER_SCRATCH 0x3a5180000000ull  // where vdso/vvar wait while memory is mapped
#define STASIS_LOADER_LIMIT 0x3a5200000000ull

#define STASIS_MAX_SETENV_BYTES 4096

// Written by the loader into the restarted runtime's memory (at the address the image records).
struct StasisRestartInfo {
  uint64_t magic;  // STASIS_RESTART_INFO_MAGIC once the loader has filled it in
  uint64_t generation;
  uint32_t restart_process_count;
  uint16_t coord_port;
  uint16_t reserved;
  char coord_host[64];
  char secret_hex[72];
  uint64_t loader_start, loader_end;  // the runtime unmaps these once every thread left them
  int32_t mm_restore_status;  // prctl(PR_SET_MM_MAP) result (0 or -errno)
  // `stasis restart`'s own stderr, kept at this descriptor number (one the program does not use)
  // until the restart is over: the loader and the restarted runtime report a failed restart
  // there, not on the program's stderr; the runtime closes it before the program runs. 0: none.
  int32_t restart_stderr_fd;
  // Test hook (STASIS_TEST_CLOCK_SHIFT_NS of `stasis restart`): the runtime treats the clocks saved
  // at the checkpoint as this much ahead, as after a restart on another boot.
  int64_t test_clock_shift_ns;
  // `stasis restart --clock=continue`: the program's monotonic clocks (and boot time) resume from
  // the values they had at the checkpoint, as if no time had passed in between (1), instead of
  // showing the time that did, never going back (0).
  uint32_t clock_continue;
  uint32_t clock_reserved;
  // Descriptors (< 1024) that had FD_CLOEXEC: restart opens them without it, or exec'ing the
  // loader would close them; the runtime sets the flag again.
  uint64_t cloexec_fds[16];
  // Descriptors (< 1024) connected to the world outside the computation (the saved EXTERNAL
  // ones): the only ones the restarted runtime treats as inherited from outside.
  uint64_t external_fds[16];
  // The ipc kind's objects `stasis restart` re-created (src/plugins/ipc/restart_info.h).
  StasisSysvRestart sysv;
  // Sockets that moved (src/plugins/sockets/restart_info.h).
  uint32_t socket_name_count;
  uint32_t reserved3;
  StasisSocketNames socket_names[STASIS_MAX_SOCKET_NAMES];
  uint32_t address_move_count;
  uint32_t reserved4;
  StasisAddressMove address_moves[STASIS_MAX_ADDRESS_MOVES];
  // `stasis restart --setenv NAME=VALUE`: "NAME=VALUE\0" entries, then an empty one. The restored
  // environment is the checkpoint's; the runtime puts these into it before the plugins' RESTART.
  char setenv_entries[STASIS_MAX_SETENV_BYTES];
};

// The pid table (a memfd at STASIS_PID_TABLE_FD; see src/plugins/pids/vpid.cc). Sparse: only the
// pages of pids in use are ever touched.
#define STASIS_PID_TABLE_MAGIC 0x4449505349545353ull
#define STASIS_PID_TABLE_MAX_PID (1u << 22)  // PID_MAX_LIMIT on 64-bit Linux
#define STASIS_PID_TABLE_MAX_EXTERNAL 64
// Names a file among those inherited from outside the computation: inode numbers alone repeat
// across file systems (/dev/null and /dev/pts/0 are both inode 3 on Debian). Never 0.
static inline uint64_t stasis_external_file_key(uint64_t dev, uint64_t ino) {
  uint64_t key = ino ^ (dev << 40 | dev >> 24);
  return key ? key : 1;
}
typedef struct StasisPidTable {
  uint64_t magic;
  uint32_t external_count;
  uint32_t reserved;
  // What `stasis restart` connected the computation's outside-world descriptors to (terminal,
  // pipes), as stasis_external_file_key: a process started after the restart treats descriptors
  // on them as inherited from outside.
  uint64_t external_inodes[STASIS_PID_TABLE_MAX_EXTERNAL];
  int32_t external_fds[STASIS_PID_TABLE_MAX_EXTERNAL];  // the number `stasis restart` has each at
  // The coordinator of the restarted computation: processes it starts later join this one, not
  // the one their (restored) environment names.
  char coord_host[64];
  uint16_t coord_port;
  uint16_t reserved2[3];
  char secret_hex[72];
  // The pid space the virtual pids of this table belong to (MANIFEST.json's "pid_space" of the
  // processes restarted with it); "" for a checkpoint older than pid spaces.
  char pid_space[64];
  uint32_t virtual_of_real[STASIS_PID_TABLE_MAX_PID];  // 0 = not translated
  uint32_t real_of_virtual[STASIS_PID_TABLE_MAX_PID];
} StasisPidTable;

// Reads and writes of the table, shared by `stasis restart` and the runtime. 0 = no entry.
static inline uint32_t stasis_pid_table_lookup(const uint32_t* column, long pid) {
  if (pid <= 0 || pid >= (long)STASIS_PID_TABLE_MAX_PID) return 0;
  return __atomic_load_n(&column[pid], __ATOMIC_ACQUIRE);
}
static inline void stasis_pid_table_map(StasisPidTable* table, long virt, long real) {
  if (virt <= 0 || virt >= (long)STASIS_PID_TABLE_MAX_PID || real <= 0 ||
      real >= (long)STASIS_PID_TABLE_MAX_PID)
    return;
  __atomic_store_n(&table->virtual_of_real[real], (uint32_t)virt, __ATOMIC_RELEASE);
  __atomic_store_n(&table->real_of_virtual[virt], (uint32_t)real, __ATOMIC_RELEASE);
}

// Restart under a kernel whose vdso differs from the checkpoint's (src/restart/vdso_proxy.cc):
// the kernel's vvar/vdso go to `new_base` (a range no saved mapping uses, keeping their relative
// layout), the saved vdso's bytes go back where they were, and each function they export is
// patched to jump to the same function of the new vdso (or, where the new kernel lacks it, to
// make the system call it stands for). The program's cached pointers into the old vdso keep
// working. The saved vvar ranges become read-only zero pages: an old vdso function interrupted
// mid-way by the checkpoint reads "no usable clock" there and falls back to the system call.
#define STASIS_MAX_VDSO_PATCHES 32
enum StasisVdsoPatchKind STASIS_ENUM_BASE {
  STASIS_VDSO_JUMP = 1,     // movabs $new_vdso+target, %rax; jmp *%rax
  STASIS_VDSO_SYSCALL = 2,  // mov $target, %eax; syscall; ret
  STASIS_VDSO_FAIL = 3,     // mov $-target, %rax; ret (a service this kernel does not offer)
};
typedef struct StasisVdsoPatch {
  uint32_t kind;          // StasisVdsoPatchKind
  uint32_t old_offset;    // the function's entry, from the saved vdso's start
  uint64_t target;        // JUMP: offset in the new vdso; SYSCALL: the system call number
} StasisVdsoPatch;
typedef struct StasisVdsoProxy {
  uint32_t active;        // 0: the kernel's vdso is the saved one: move it back, nothing else
  uint32_t patch_count;
  uint64_t new_base;      // where the lowest of the kernel's vvar/vdso mappings goes
  uint64_t text_len;      // saved vdso_end - vdso_start
  StasisVdsoPatch patches[STASIS_MAX_VDSO_PATCHES];
  unsigned char text[STASIS_MAX_VDSO_TEXT];
} StasisVdsoProxy;

#define STASIS_MAX_ANCESTOR_FDS 16
struct StasisLoaderPlan {
  uint64_t magic;
  uint32_t region_count;
  uint32_t thread_count;
  uint32_t mark_count;
  uint32_t restore_mm;  // 1: try prctl(PR_SET_MM_MAP)
  int32_t image_fd;     // the image, open read-only, for mapped chunks (-1: none)
  StasisVdsoLayout vdso;
  StasisMmLayout mm;
  uint64_t restart_info_addr;
  StasisRestartInfo restart_info;
  // The images an incremental image builds on, open for mapped chunks (0: none); the loader
  // closes them once every region is mapped.
  int32_t ancestor_image_fds[STASIS_MAX_ANCESTOR_FDS];
  StasisVdsoProxy vdso_proxy;
};

struct StasisLoaderThread {
  uint32_t tid;
  uint32_t is_leader;
  StasisCpuContext context;
  uint64_t fs_base;
  uint64_t clear_child_tid;
  uint64_t tcb_tid_addr;
};

struct StasisLoaderRegion {
  uint64_t start, end;
  uint32_t prot;
  uint32_t kind;  // StasisRegionKind
  uint64_t file_offset;
  uint32_t chunk_count;
  // > 0: map this descriptor, not `path`: a shared memory object `stasis restart` made and filled
  // (no chunks follow). The loader closes it once every region is mapped.
  int32_t object_fd;
  char path[STASIS_IMAGE_PATH_MAX];
};

struct StasisLoaderChunk {
  uint64_t addr, len;
  // mapped = 1: no bytes follow; map [file_offset, file_offset + len) of the image privately at
  // addr (an uncompressed, page-aligned payload: pages load on demand, nothing is copied).
  uint64_t file_offset;
  uint32_t mapped;
  // > 0: map from this descriptor (one of the plan's ancestor_image_fds) rather than image_fd
  int32_t image_fd;
};
