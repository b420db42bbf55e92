// The Stasis image format (one file per process per checkpoint).
//
//   StasisImageHeader
//   StasisRecordHeader + payload      (repeated; order: PROCESS, THREAD*, FD*, (REGION, PAGES*)*,
//                                      INDEX, END)
//
// Every record header carries a checksum of itself and of its stored payload (XXH3-64), so a
// reader detects a flipped bit anywhere; the END record carries the number of records and a
// chained checksum of all record headers, so a truncated file is never taken for a complete one.
// PAGES payloads are compressed independently (zstd, lz4 or none) so they can be decoded in parallel.
// The structs are plain C: the runtime writes them without allocating, and `stasis inspect`
// decodes them (the format is documented by the code that reads it: src/image/reader.cc).
#pragma once
#include <stdint.h>

// Plain C too (the restart loader is C): enums with a fixed base only in C++.
#ifdef __cplusplus
#define STASIS_ENUM_BASE : uint32_t
#else
#define STASIS_ENUM_BASE
#endif

typedef struct StasisImageHeader StasisImageHeader;
typedef struct StasisRecordHeader StasisRecordHeader;
typedef struct StasisKernelSigaction StasisKernelSigaction;
typedef struct StasisItimer StasisItimer;
typedef struct StasisRlimit StasisRlimit;
typedef struct StasisQueuedSignal StasisQueuedSignal;
typedef struct StasisVdsoLayout StasisVdsoLayout;
typedef struct StasisMmLayout StasisMmLayout;
typedef struct StasisProcessRecord StasisProcessRecord;
typedef struct StasisPosixTimer StasisPosixTimer;
typedef struct StasisSavedClocks StasisSavedClocks;
typedef struct StasisCpuContext StasisCpuContext;
typedef struct StasisThreadRecord StasisThreadRecord;
typedef struct StasisRegionRecord StasisRegionRecord;
typedef struct StasisMemoryMark StasisMemoryMark;
typedef struct StasisCpuStateRecord StasisCpuStateRecord;
typedef struct StasisFdRecord StasisFdRecord;
typedef struct StasisEndRecord StasisEndRecord;
typedef struct StasisZombie StasisZombie;
typedef struct StasisFdDataHeader StasisFdDataHeader;

#define STASIS_IMAGE_MAGIC "STASISIM"
// Version 3 added the INDEX record and END's index_offset; version 2 images (no index, a shorter
// END) are still read, by scanning every record header. Version 4 added the compression
// STASIS_COMPRESS_ZSTD_LANES; a version 3 image is a version 4 image without it. Version 5 added
// the MEMORY_MARKS record; a version 4 image is one whose memory had no marks to keep. Version 6
// saves a shared temporary file without its holes (SHM_FILE_BYTES: each record at its extent's
// offset, zeros between); a version 5 image holds every byte. Version 7 added the CPU_STATE record;
// a version 6 image needs every XSAVE feature its header's xcr0 names.
#define STASIS_IMAGE_VERSION 7
#define STASIS_IMAGE_VERSION_WITHOUT_CPU_STATE 6
#define STASIS_IMAGE_VERSION_WITHOUT_HOLES 5
#define STASIS_IMAGE_VERSION_WITHOUT_MARKS 4
#define STASIS_IMAGE_VERSION_WITHOUT_LANES 3
#define STASIS_IMAGE_VERSION_WITHOUT_INDEX 2
#define STASIS_IMAGE_PATH_MAX 1024
#define STASIS_MAX_THREADS 4096
#define STASIS_MIN_MAPPED_CHUNK (64 * 1024)

enum StasisCompression STASIS_ENUM_BASE {
  STASIS_COMPRESS_NONE = 0,
  STASIS_COMPRESS_ZSTD = 1,
  STASIS_COMPRESS_LZ4 = 2,
  // zstd of the bytes regrouped into 8 lanes (byte k of every 8-byte word, k = 0..7, one lane
  // after another; raw_size is a multiple of 8). Only in PAGES records, chosen per chunk where it
  // is smaller: arrays of doubles and 64-bit integers, whose high bytes barely change.
  STASIS_COMPRESS_ZSTD_LANES = 3,
};

enum StasisRecordType STASIS_ENUM_BASE {
  STASIS_REC_PROCESS = 1,
  STASIS_REC_THREAD = 2,
  STASIS_REC_FD = 3,
  STASIS_REC_REGION = 4,
  STASIS_REC_PAGES = 5,  // arg = start address; raw_size = bytes of memory
  STASIS_REC_END = 6,
  // Zero bytes that make the next PAGES payload start on a page boundary in the file, so that an
  // uncompressed payload can be mapped straight into the restarted process (payloads of at least
  // STASIS_MIN_MAPPED_CHUNK bytes: smaller ones would cost more in mappings than they save).
  STASIS_REC_PAD = 7,
  // Variable-length state of one descriptor (pipe contents, an epoll interest list, a deleted
  // file's bytes...): payload = StasisFdDataHeader + bytes. Long data is split into several
  // records with increasing offsets; the reader joins them.
  STASIS_REC_FD_DATA = 8,
  // An incremental image (see src/plugins/memory/README.md, Incremental checkpoints): its first record,
  // payload StasisParentRecord naming the image it builds on.
  STASIS_REC_PARENT = 9,
  // Follows a REGION of an incremental image whose pages were tracked since the parent: pages of
  // the region in no PAGES record of this image come from the parent's image (by address),
  // except these runs, which the program had no page at (zero-filled). arg = the region's start;
  // payload = StasisPageRun[] (several records when long). A region without one is whole here.
  STASIS_REC_INHERIT = 10,
  // The last record before END (version 3): payload = StasisIndexEntry[], the header and file
  // offset of every record before it, so a reader that needs no payload (restart --lazy) reads
  // the file's tail instead of one header per megabyte. END's index_offset says where it is.
  STASIS_REC_INDEX = 11,
  // The bytes of the process's vdso (arg = its address; uncompressed; at most
  // STASIS_MAX_VDSO_TEXT): a restart under a kernel with another vdso puts them back and points
  // their functions at the new one (src/restart/vdso_proxy.cc). Absent in older images: those
  // restart only under a kernel with the same vdso.
  STASIS_REC_VDSO = 12,
  // The madvise marks of the process's memory (version 5): payload = StasisMemoryMark[], in
  // ascending address order, each range inside the image's regions. At most one such record; an
  // image without one had no marked memory. Restart sets the marks again (a forked child of the
  // restarted program must see what it saw before: zeros where MADV_WIPEONFORK, nothing where
  // MADV_DONTFORK).
  STASIS_REC_MEMORY_MARKS = 13,
  // Which XSAVE state the saved threads' signal frames hold in use, and where that CPU put each
  // component (version 7; payload = StasisCpuStateRecord; at most one). A restart needs these
  // components at these places, not every feature of the header's xcr0; an image without the
  // record needs every one (src/plugins/threads/xsave_frame.h).
  STASIS_REC_CPU_STATE = 14,
};
#define STASIS_MAX_VDSO_TEXT (32 * 1024)

struct StasisImageHeader {
  char magic[8];            // STASIS_IMAGE_MAGIC, no NUL
  uint32_t format_version;  // STASIS_IMAGE_VERSION
  uint32_t header_size;     // sizeof(StasisImageHeader)
  char producer[64];        // "stasis 0.1.0"
  char arch[16];            // "x86_64"
  uint64_t created_unix_ns;
  uint64_t xcr0;            // XSAVE features enabled on the CPU that wrote the image
  uint32_t xsave_size;      // XSAVE area size (CPUID 0xD.0 EBX) on that CPU
  uint32_t compression;     // default StasisCompression of PAGES records
  uint64_t header_checksum; // XXH3-64 of this struct with this field zero
};

struct StasisRecordHeader {
  uint32_t type;            // StasisRecordType
  uint32_t compression;     // StasisCompression of the payload
  uint64_t stored_size;     // bytes of payload in the file
  uint64_t raw_size;        // bytes after decompression
  uint64_t arg;             // record specific (PAGES: start address)
  uint64_t payload_checksum;  // XXH3-64 of the stored payload
  uint64_t header_checksum;   // XXH3-64 of the fields above
};

// Kernel `struct sigaction` as rt_sigaction(2) sees it on x86-64.
struct StasisKernelSigaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};

struct StasisItimer {
  int64_t interval_sec, interval_usec, value_sec, value_usec;
};

// A queued signal with its kernel siginfo (128 bytes), so queued real-time signals keep their
// count, order and values.
struct StasisQueuedSignal {
  uint8_t siginfo[128];
};
#define STASIS_MAX_QUEUED_SHARED 64
#define STASIS_MAX_QUEUED_THREAD 8

struct StasisRlimit {
  uint64_t cur, max;
};

// Where the kernel's vvar/vdso pages sat (0 = absent). Restart moves the new ones here.
struct StasisVdsoLayout {
  uint64_t vvar_start, vvar_end;
  uint64_t vvar_vclock_start, vvar_vclock_end;
  uint64_t vdso_start, vdso_end;
  uint64_t vdso_checksum;  // XXH3-64 of the vdso text: the restart kernel's must match
};

// The mm fields prctl(PR_SET_MM_MAP) restores (heap break, /proc/PID/cmdline bounds...).
struct StasisMmLayout {
  uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack;
  uint64_t arg_start, arg_end, env_start, env_end;
  uint64_t auxv[64];
  uint32_t auxv_words;
  uint32_t reserved;
};

// A child that had exited but was not yet waited for: restart recreates it as a zombie.
struct StasisZombie {
  uint32_t vpid;
  int32_t wait_status;  // as wait(2) reports it
};
#define STASIS_MAX_ZOMBIES 64

// A POSIX timer (timer_create), recreated with the same id: glibc's timer_t is that id.
struct StasisPosixTimer {
  int32_t id;
  int32_t clock;             // clockid_t
  int32_t notify;            // SIGEV_SIGNAL, SIGEV_NONE, or SIGEV_SIGNAL | SIGEV_THREAD_ID
  int32_t signo;
  uint64_t value;            // sigev_value
  uint32_t target_tid;       // SIGEV_THREAD_ID: the thread's tid when written
  int32_t overrun;           // timer_getoverrun: overruns of the last delivered expiry
  int64_t value_ns;          // time to the next expiry (0: disarmed)
  int64_t interval_ns;
};
#define STASIS_MAX_POSIX_TIMERS 64

// The clocks that must not go backwards for the program, as it saw them at the checkpoint
// (kernel value + the offset the runtime applied, if an earlier restart needed one).
struct StasisSavedClocks {
  int64_t monotonic_ns;      // CLOCK_MONOTONIC
  int64_t monotonic_raw_ns;  // CLOCK_MONOTONIC_RAW
  int64_t boottime_ns;       // CLOCK_BOOTTIME
};

struct StasisProcessRecord {
  uint32_t pid;             // real pid when written
  uint32_t original_pid;    // virtual pid: the pid the program sees (its first real pid)
  uint32_t ppid;            // virtual pid of the parent (a pid outside the computation as is)
  uint32_t pgid, sid;       // virtual process group and session
  uint32_t zombie_count;
  StasisZombie zombies[STASIS_MAX_ZOMBIES];
  uint32_t uid, gid;
  uint32_t umask;
  uint32_t thread_count;
  uint32_t checkpoint_signal;    // the signal the runtime suspends threads with
  uint64_t generation;
  uint64_t restart_info_addr;    // where the loader writes StasisRestartInfo
  uint64_t shared_pending;       // process-wide pending signals (bit n-1 = signal n)
  char comm[16];
  char hostname[64];
  char cwd[STASIS_IMAGE_PATH_MAX];
  char exe[STASIS_IMAGE_PATH_MAX];
  StasisKernelSigaction sigactions[64];  // index n-1 = signal n
  StasisItimer itimers[3];               // ITIMER_REAL, VIRTUAL, PROF
  StasisRlimit rlimits[16];
  StasisVdsoLayout vdso;
  StasisMmLayout mm;
  uint32_t queued_count;  // process-directed signals pending at the checkpoint
  // The controlling terminal as /proc/PID/stat field 7 encodes it (tty_nr), 0 = none. Restart
  // gives it back when it is a pseudo-terminal of the computation (src/plugins/ptys/ptys.cc).
  uint32_t tty_nr;
  StasisQueuedSignal queued[STASIS_MAX_QUEUED_SHARED];
  uint32_t posix_timer_count;
  uint32_t foreground_pgid;  // virtual id of the controlling terminal's foreground group, 0 = none
  StasisPosixTimer posix_timers[STASIS_MAX_POSIX_TIMERS];
  StasisSavedClocks clocks;
};

// Callee-saved register context captured inside the runtime (setjmp-like, no pointer mangling).
struct StasisCpuContext {
  uint64_t rsp, rip, rbx, rbp, r12, r13, r14, r15;
  uint32_t mxcsr;
  uint16_t fpu_cw;
  uint16_t reserved;
};

struct StasisThreadRecord {
  uint32_t tid;             // tid when written
  uint32_t vtid;            // virtual tid: the tid the program sees
  uint32_t is_leader;       // the thread-group leader (tid == pid)
  uint32_t is_checkpoint_thread;
  int32_t blocked_syscall;  // syscall the thread was blocked in when suspended, or -1
  StasisCpuContext context; // where the loader resumes the thread (inside the runtime)
  uint64_t fs_base, gs_base;
  uint64_t clear_child_tid;  // set_tid_address / CLONE_CHILD_CLEARTID
  uint64_t tcb_tid_addr;     // glibc's cached tid (struct pthread::tid), 0 if unknown
  uint64_t robust_list, robust_list_len;
  uint64_t altstack_sp, altstack_size;
  int32_t altstack_flags;
  uint32_t rseq_len;
  uint64_t rseq_addr;        // 0 if the thread had no rseq area
  uint32_t rseq_sig;
  uint32_t reserved;
  uint64_t sigmask;          // mask in effect when it was interrupted
  uint64_t pending;          // thread-directed pending signals
  char name[16];
  int32_t nice;              // scheduling priority (per thread on Linux)
  uint32_t queued_count;     // thread-directed signals pending at the checkpoint
  StasisQueuedSignal queued[STASIS_MAX_QUEUED_THREAD];
};

enum StasisRegionKind STASIS_ENUM_BASE {
  STASIS_REGION_ANON = 1,          // private anonymous (incl. thread stacks)
  STASIS_REGION_HEAP = 2,          // [heap]
  STASIS_REGION_STACK = 3,         // [stack] of the main thread
  STASIS_REGION_FILE_PRIVATE = 4,  // private file mapping; PAGES hold pages modified in memory
  STASIS_REGION_FILE_SHARED = 5,   // shared file mapping; the file holds the data
  // Shared memory no path leads to: MAP_SHARED|MAP_ANONYMOUS, or a memfd or deleted file mapped
  // shared and held by no descriptor of the process. PAGES hold the data. file_dev/file_ino name
  // the memory object (as /proc/PID/maps shows it), so that restart can make the regions of all
  // processes that map it share one object again.
  STASIS_REGION_SHARED_ANON = 6,
  // A region of such an object whose bytes an ancestor process saved (it maps all of them): no
  // PAGES; file_dev/file_ino/file_offset locate it in the object.
  STASIS_REGION_SHARED_ELSEWHERE = 7,
  // A mapping a kind saves with its own state, no PAGES (capture table's claim_mapping):
  // src/plugins/ipc/records.h.
  STASIS_REGION_SYSV_SHM = 16,
  // A vCPU's kvm_run area (a shared mapping of the vCPU descriptor): no PAGES; its bytes are in
  // the vCPU's state and the restarted runtime maps the new vCPU there (src/plugins/kvm/records.h).
  STASIS_REGION_KVM_RUN = 17,
};

// The marks as /proc/PID/smaps' VmFlags show them ("dc", "wf", "dd", "hg", "nh", "mg").
enum StasisMemoryMarkBits STASIS_ENUM_BASE {
  STASIS_MARK_DONTFORK = 1,     // MADV_DONTFORK
  STASIS_MARK_WIPEONFORK = 2,   // MADV_WIPEONFORK
  STASIS_MARK_DONTDUMP = 4,     // MADV_DONTDUMP
  STASIS_MARK_HUGEPAGE = 8,     // MADV_HUGEPAGE
  STASIS_MARK_NOHUGEPAGE = 16,  // MADV_NOHUGEPAGE
  STASIS_MARK_MERGEABLE = 32,   // MADV_MERGEABLE (KSM)
};
#define STASIS_MARKS_KNOWN 63u
struct StasisMemoryMark {
  uint64_t start, end;  // page-aligned
  uint32_t marks;       // StasisMemoryMarkBits
  uint32_t reserved;    // 0
};

#define STASIS_XSAVE_COMPONENTS 32
struct StasisCpuStateRecord {
  // The components some saved thread's frame holds in use: marked in its XSTATE_BV and not in
  // their initial state (all zeros); PKRU left out where it holds Linux's default (no protection
  // key in use). x87 and SSE always.
  uint64_t xfeatures_in_use;
  // Standard-format offset and size of XSAVE component i (CPUID 0xD.i EBX and EAX) on the CPU
  // that wrote the image; 0 where XCR0 did not enable it. Entries 0 and 1 (x87, SSE) are 0.
  uint32_t component_offset[STASIS_XSAVE_COMPONENTS];
  uint32_t component_size[STASIS_XSAVE_COMPONENTS];
};

struct StasisRegionRecord {
  uint64_t start, end;
  uint32_t prot;       // PROT_* bits
  uint32_t kind;       // StasisRegionKind
  uint64_t file_offset;
  uint64_t file_dev, file_ino, file_size;
  int64_t file_mtime_ns;
  uint64_t saved_bytes;  // bytes of memory in this region's PAGES records
  char path[STASIS_IMAGE_PATH_MAX];
};

enum StasisFdKind STASIS_ENUM_BASE {
  STASIS_FD_REGULAR = 1,     // kind_data: RegularFileData (src/plugins/files/records.h)
  STASIS_FD_CHARDEV = 2,     // /dev/null, /dev/zero, /dev/urandom...: reopened by path
  STASIS_FD_DIRECTORY = 3,
  // A terminal, pipe or socket the program inherited from outside the computation when it was
  // launched (its standard streams, typically), at this number or copied to it (3>&1).
  // kind_data: StasisExternalData. Restart connects what `stasis restart` has at the number the
  // launch had it at (or /dev/null if restart has none there). Also a regular file whose open
  // description a process outside the computation holds (`./job.sh > log`): kind_data then an
  // OutsideFileData (src/plugins/files/records.h); restart connects its own when it is the same
  // file, else appends to the file at `path`.
  STASIS_FD_EXTERNAL = 4,
  STASIS_FD_PIPE = 5,        // kind_data: src/plugins/pipes/records.h
  STASIS_FD_FIFO = 6,        // a named pipe: reopened by path; as a pipe
  STASIS_FD_EVENTFD = 7,     // kind_data: src/plugins/eventfd/records.h
  STASIS_FD_EPOLL = 8,       // kind_data of these four: src/plugins/events/records.h
  STASIS_FD_SIGNALFD = 9,
  STASIS_FD_TIMERFD = 10,
  STASIS_FD_INOTIFY = 11,
  STASIS_FD_SAVED_FILE = 12,  // contents saved in the image (deleted while open, memfd, --save-files)
  // A pseudo-terminal the computation opened: kind_data per StasisPtyData. The master's description
  // owner saves the bytes the slave side wrote and the master's reader had not read (FD_DATA
  // PTY_OUTPUT).
  STASIS_FD_PTY_MASTER = 13,
  STASIS_FD_PTY_SLAVE = 14,
  // The sockets (kind_data of each: src/plugins/sockets/records.h). One end of a connected Unix
  // socket (a socketpair, or a connection through a listener); the description owner saves what
  // is queued for reading at this end (FD_DATA SOCKET_BYTES or SOCKET_MESSAGES).
  STASIS_FD_UNIX_SOCKET = 15,
  STASIS_FD_UNIX_LISTENER = 16,  // path = its name ("@name" for an abstract one)
  // TCP over IPv4 or IPv6 (kind_data: a StasisTcpData). A listener is bound and listening again
  // at restart; a connection both of whose ends the computation holds is made again between the
  // same addresses (found by their endpoints), refilled with the bytes queued at each end (FD_DATA
  // SOCKET_BYTES); a connection to the outside reports a reset (see src/plugins/sockets/README.md).
  STASIS_FD_TCP_LISTENER = 17,
  STASIS_FD_TCP_CONNECTION = 18,
  // A UDP socket over IPv4 or IPv6 (kind_data: a StasisTcpData; peer_port 0: not connected). It is
  // bound to its address again, refilled with its queued datagrams (FD_DATA SOCKET_DATAGRAMS, each
  // sent again from its sender's address), then connected as it was.
  STASIS_FD_UDP_SOCKET = 19,
  // A Unix datagram socket that is not one end of a pair: one with a name others send to, or one
  // connected to a named socket. path = its name ("@name" abstract, "" none); kind_data as
  // STASIS_FD_UNIX_SOCKET's. The owner saves its queued messages with their senders' names (FD_DATA
  // SOCKET_DATAGRAMS) and the name of the socket it is connected to (FD_DATA SOCKET_PEER_NAME).
  STASIS_FD_UNIX_DATAGRAM = 20,
  // A netlink socket listening to the kernel's device events (NETLINK_KOBJECT_UEVENT, as libudev's
  // monitor and SDL open): kind_data StasisNetlinkData (src/plugins/sockets/records.h); its socket
  // filter, when one is attached, is FD_DATA SOCKET_FILTER. Made again and subscribed to the same
  // groups; events queued at the checkpoint are not kept.
  STASIS_FD_NETLINK_UEVENT = 21,
  STASIS_FD_MQUEUE = 32,  // a POSIX message queue; kind_data: src/plugins/ipc/records.h
  STASIS_FD_KVM_VM = 33,    // a KVM virtual machine; kind_data and FD_DATA: src/plugins/kvm/records.h
  STASIS_FD_KVM_VCPU = 34,  // one of its vCPUs
};

// kind_data of a STASIS_FD_EXTERNAL record (the image reader writes one too: image/reader.h).
typedef struct StasisExternalData {
  uint64_t launch_fd_plus_one;  // [0] 1 + the number the launch had it at (0: this one)
} StasisExternalData;

// kind_data of a STASIS_FD_SAVED_FILE record: StasisSavedFileData (src/plugins/saved_files/records.h).
enum StasisSavedFileVariant STASIS_ENUM_BASE {
  STASIS_SAVED_FILE_DELETED = 1,  // a regular file deleted while open
  STASIS_SAVED_FILE_MEMFD = 2,    // memfd_create; path "/memfd:NAME (deleted)"
  STASIS_SAVED_FILE_NAMED = 3,    // launch --save-files: recreated at its path when missing or changed
  STASIS_SAVED_FILE_TEMPORARY = 4,  // in a temporary directory: recreated at its path only when missing
};

// kind_data of STASIS_FD_TCP_* and STASIS_FD_UDP_SOCKET records. Addresses are IPv6 (IPv4 as
// ::ffff:a.b.c.d when family is AF_INET), ports in host order.
typedef struct StasisTcpData {
  uint8_t local_address[16], peer_address[16];
  uint16_t local_port, peer_port;
  uint16_t family;   // AF_INET or AF_INET6
  uint16_t options;  // StasisTcpOption bits
  uint32_t send_buffer, receive_buffer;  // SO_SNDBUF, SO_RCVBUF as getsockopt reports them
  uint32_t backlog;                      // a listener's
  uint32_t reserved;
} StasisTcpData;
enum StasisTcpOption STASIS_ENUM_BASE {
  STASIS_TCP_NODELAY = 1,
  STASIS_TCP_KEEPALIVE = 2,
  STASIS_TCP_REUSEADDR = 4,
  STASIS_TCP_REUSEPORT = 8,
  STASIS_TCP_V6ONLY = 16,
  STASIS_TCP_BROADCAST = 32,  // UDP: SO_BROADCAST
};

// kind_data of STASIS_FD_PTY_MASTER and STASIS_FD_PTY_SLAVE records: StasisPtyData
// (src/plugins/ptys/records.h).
enum StasisPtyFlag STASIS_ENUM_BASE {
  STASIS_PTY_LOCKED = 1,       // master: the slave was locked (TIOCGPTLCK)
  STASIS_PTY_PACKET = 2,       // master: packet mode (TIOCPKT)
  STASIS_PTY_EOF_PENDING = 4,  // slave: an end-of-file (VEOF in canonical mode) not read yet
  STASIS_PTY_SLAVE_CLOSED = 8, // master: every slave descriptor had been closed (reads gave EIO)
};
// The kernel's struct termios (TCGETS/TCSETS on x86-64).
typedef struct StasisTermios {
  uint32_t iflag, oflag, cflag, lflag;
  uint8_t line;
  uint8_t cc[19];
} StasisTermios;

// Tags of FD_DATA records.
enum StasisFdDataTag STASIS_ENUM_BASE {
  STASIS_FD_DATA_PIPE_BYTES = 1,    // bytes in flight in a pipe or FIFO
  STASIS_FD_DATA_EPOLL = 2,         // epoll interest list
  STASIS_FD_DATA_INOTIFY = 3,       // inotify watches
  STASIS_FD_DATA_FILE_BYTES = 4,    // a saved file's contents
  STASIS_FD_DATA_PTY_OUTPUT = 5,    // a pty master: what the slave side wrote, not yet read
  STASIS_FD_DATA_SOCKET_BYTES = 6,  // a stream socket end: bytes queued for reading at it
  // A datagram or seqpacket socket end: the messages queued for reading at it, in order, each a
  // uint32_t length and its bytes.
  STASIS_FD_DATA_SOCKET_MESSAGES = 7,
  // Datagrams queued at a UDP or named Unix datagram socket, in order, each a uint32_t length, a
  // uint32_t length of its sender's address, that address (a struct sockaddr; 0 bytes: unnamed
  // sender) and the datagram's bytes.
  STASIS_FD_DATA_SOCKET_DATAGRAMS = 8,
  STASIS_FD_DATA_SOCKET_PEER_NAME = 9,  // a Unix socket's peer's name, as StasisFdRecord::path
  // A TCP or UDP socket the program has seen other addresses of since a restart moved it (a
  // StasisTcpData): a later restart shows it these again. kind_data keeps the real ones.
  STASIS_FD_DATA_SOCKET_SEEN_NAMES = 10,
  STASIS_FD_DATA_SOCKET_FILTER = 11,  // a socket's classic BPF filter: struct sock_filter[]
  STASIS_FD_DATA_MQUEUE_MESSAGES = 0x100,  // StasisMqueueMessage + bytes, in receive order
  // Process-wide state of the ipc kind, not descriptors: src/plugins/ipc/records.h.
  STASIS_FD_DATA_SYSV_OBJECTS = 0x101,
  STASIS_FD_DATA_SYSV_ATTACHMENTS = 0x102,
  STASIS_FD_DATA_SYSV_CONTENTS = 0x103,
  // A file directly in /dev/shm (a POSIX shared memory object) that processes of the computation
  // mapped shared, saved by one of them per host (src/plugins/memory/named_shm.h); `fd` is the
  // file's index in this image.
  STASIS_FD_DATA_SHM_FILE = 0x104,        // StasisShmFile
  STASIS_FD_DATA_SHM_FILE_BYTES = 0x105,  // the file's data extents, at their offsets (holes are zeros)
  STASIS_FD_DATA_KVM_VM_STATE = 0x106,    // StasisKvmVmState (src/plugins/kvm/records.h)
  STASIS_FD_DATA_KVM_VCPU_STATE = 0x107,  // StasisKvmVcpuState
};

typedef struct StasisShmFile {
  uint64_t size;
  uint32_t mode;  // permission bits
  uint32_t reserved;
  char path[STASIS_IMAGE_PATH_MAX];
} StasisShmFile;

struct StasisFdDataHeader {
  int32_t fd;
  uint32_t tag;      // StasisFdDataTag
  uint64_t offset;   // of these bytes within the descriptor's data
};

struct StasisFdRecord {
  int32_t fd;
  uint32_t kind;       // StasisFdKind
  uint32_t flags;      // F_GETFL
  uint32_t cloexec;
  // A lower descriptor sharing this one's open file description (dup, fcntl F_DUPFD), so the
  // two keep one offset after restart; -1 if none.
  int32_t same_description_as;
  // The open file description may be shared with other processes of the computation (inherited
  // across fork): every holder names the same owner, the lowest (virtual pid, descriptor) that
  // holds it, so restart creates it once and hands it to each.
  int32_t owner_pid, owner_fd;
  uint32_t reserved;
  int64_t offset;
  uint64_t size;       // file size when written (regular files)
  uint64_t dev, ino;
  int64_t mtime_ns;
  uint64_t kind_data[8];  // kind-specific state (see StasisFdKind)
  char path[STASIS_IMAGE_PATH_MAX];
};

// One entry of an epoll interest list (FD_DATA EPOLL).
typedef struct StasisEpollInterest {
  int32_t fd;       // the target's descriptor number
  uint32_t events;  // EPOLL* mask as the kernel holds it (a fired EPOLLONESHOT has no event bits)
  uint64_t data;
} StasisEpollInterest;

// One inotify watch (FD_DATA INOTIFY).
typedef struct StasisInotifyWatch {
  int32_t wd;
  uint32_t mask;       // IN_* events and IN_ONESHOT/IN_EXCL_UNLINK, as the kernel holds them
  uint32_t add_flags;  // IN_DONT_FOLLOW/IN_ONLYDIR the program passed when adding it
  uint32_t reserved;
  char path[STASIS_IMAGE_PATH_MAX];  // absolute
} StasisInotifyWatch;

typedef struct StasisMqueueMessage {
  uint32_t priority;
  uint32_t size;
} StasisMqueueMessage;

// The parent of an incremental image: the previous checkpoint's image of the same process.
typedef struct StasisParentRecord {
  uint64_t parent_generation;
  uint64_t parent_header_checksum;  // the parent's StasisImageHeader.header_checksum
  uint64_t chain_id;                // header checksum of the full image the chain starts at
  uint32_t depth;                   // increments since that full image (1 = its child)
  uint32_t reserved;
  char parent_image[STASIS_IMAGE_PATH_MAX];  // relative to this image's directory
} StasisParentRecord;

typedef struct StasisPageRun {
  uint64_t start, len;
} StasisPageRun;

typedef struct StasisIndexEntry {
  uint64_t offset;              // of the record's header in the file
  StasisRecordHeader header;    // a copy of it
} StasisIndexEntry;

struct StasisEndRecord {
  uint64_t record_count;        // records before END
  uint64_t headers_checksum;    // XXH3-64 chain over every preceding record header
  uint64_t memory_bytes;        // total raw bytes of PAGES
  uint64_t index_offset;        // of the INDEX record (0: none; version 2 images end before it)
};
// END's payload in a version 2 image.
#define STASIS_END_RECORD_SIZE_V2 24
