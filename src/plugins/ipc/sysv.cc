// System V IPC, checkpoint side: shared memory segments, semaphore sets and message queues.
//
// Which objects: those the program obtained through shmget/semget/msgget (the wrappers below
// remember their ids) and the segments it has attached (/proc/self/smaps). Each is saved with
// its contents (segment bytes, semaphore values, queued messages read with MSG_COPY, which
// leaves them queued), and restart re-creates it. The kernel then gives it a new id, so after a
// restart the wrappers translate the ids the program holds; before a restart they only forward
// (one load of an empty table's size).
//
// A segment may be shared by several processes of the computation (MPI ranks attach each other's
// by id): it is saved once per host, by the process that wins its marker (claim_for_host) at
// "drain", while the whole computation is stopped and before any forked writer inherits an
// attachment. Each process adds one byte per mapping of the segment it has to the marker, so at
// "checkpoint" the winner compares the marker's size with the kernel's attachment count: any
// attachment more belongs to a process outside the computation, and the segment is refused.
#include <dlfcn.h>
#include <new>
#include <errno.h>
#include <linux/memfd.h>
#include <stdarg.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

#include "common/fixed_text.h"
#include "plugins/files/checkpoint_sources.h"
#include "plugins/ipc/ipc.h"
#include "plugins/ipc/records.h"
#include "plugins/memory/mappings.h"
#include "plugins/memory/named_shm.h"

namespace stasis::rt {
namespace {

constexpr uint64_t kPage = 4096;

struct IdPair {
  uint32_t kind;      // StasisSysvKind
  int32_t id;         // the program's
  int32_t kernel_id;  // the kernel's (same as id in tables that only list the program's ids)
};

// Append-only, read without locks: a reader sees every entry below size(). Appends (rare: a new
// id) take a spin lock; the checkpoint path only reads, so a user thread stopped inside an
// append cannot block it.
template <uint32_t kCap>
class IdTable {
 public:
  uint32_t size() const { return count_.load(std::memory_order_acquire); }
  const IdPair& operator[](uint32_t i) const { return entries_[i]; }
  const IdPair* find_id(uint32_t kind, int32_t id) const {
    for (uint32_t i = 0, n = size(); i < n; i++)
      if (entries_[i].kind == kind && entries_[i].id == id) return &entries_[i];
    return nullptr;
  }
  const IdPair* find_kernel_id(uint32_t kind, int32_t kernel_id) const {
    for (uint32_t i = 0, n = size(); i < n; i++)
      if (entries_[i].kind == kind && entries_[i].kernel_id == kernel_id) return &entries_[i];
    return nullptr;
  }
  // Caller holds g_append_lock. False when full.
  bool append(const IdPair& pair) {
    uint32_t n = count_.load(std::memory_order_relaxed);
    if (n == kCap) return false;
    entries_[n] = pair;
    count_.store(n + 1, std::memory_order_release);
    return true;
  }
  // After a restart, before user threads run again.
  void replace(const StasisSysvIdPair* pairs, uint32_t count) {
    count = count < kCap ? count : kCap;
    for (uint32_t i = 0; i < count; i++) entries_[i] = {pairs[i].kind, pairs[i].id, pairs[i].kernel_id};
    count_.store(count, std::memory_order_release);
  }

 private:
  IdPair entries_[kCap] = {};
  std::atomic<uint32_t> count_{0};
};

std::atomic<uint32_t> g_append_lock{0};
void lock_appends() {
  while (g_append_lock.exchange(1, std::memory_order_acquire)) STASIS_SYS0(SYS_sched_yield);
}
void unlock_appends() { g_append_lock.store(0, std::memory_order_release); }

// The program's id -> the kernel's, for objects restart re-created (and aliases, below).
constinit IdTable<STASIS_MAX_SYSV_OBJECTS + 256> g_translation;
// Ids the program obtained from shmget/semget/msgget: the objects a checkpoint saves.
constinit IdTable<STASIS_MAX_SYSV_OBJECTS> g_obtained;
std::atomic<bool> g_obtained_overflow{false};
// Semaphore sets the program changed with SEM_UNDO: their adjustments are the kernel's alone.
constinit IdTable<64> g_undo_sets;
std::atomic<bool> g_undo_overflow{false};
std::atomic<bool> g_shm_attached{false};  // shmat was called: look for attachments
// Attachments made (counted once shmat has returned), and that count when a list of the mappings
// last showed no segment attached: while it stays the same, none is (only shmat attaches; a fork
// child inherits both). Saves "drain" a read of /proc/self/maps a checkpoint, in the pause: a
// program that attached once, as Open MPI's start-up probe does, has none at each checkpoint.
std::atomic<uint64_t> g_attachments_made{0};
constexpr uint64_t kNotSeen = ~uint64_t{0};
uint64_t g_none_attached_at = kNotSeen;  // the checkpoint thread's alone

int kernel_id_of(uint32_t kind, int id) {
  const IdPair* p = g_translation.find_id(kind, id);
  return p ? p->kernel_id : id;
}

// The id to hand the program for a kernel id. A new object may get a kernel id that the program
// already holds for a re-created one: it gets an alias instead (counting down from INT_MAX).
int program_id_of(uint32_t kind, int kernel_id) {
  if (kernel_id < 0 || g_translation.size() == 0) return kernel_id;
  if (const IdPair* p = g_translation.find_kernel_id(kind, kernel_id)) return p->id;
  if (!g_translation.find_id(kind, kernel_id)) return kernel_id;
  lock_appends();
  int id = kernel_id;
  if (const IdPair* p = g_translation.find_kernel_id(kind, kernel_id)) {
    id = p->id;
  } else {
    int alias = 0x7fffffff;
    while (g_translation.find_id(kind, alias)) alias--;
    if (g_translation.append({kind, alias, kernel_id})) id = alias;
  }
  unlock_appends();
  return id;
}

template <uint32_t kCap>
void remember(IdTable<kCap>& table, std::atomic<bool>& overflow, uint32_t kind, int id) {
  if (table.find_id(kind, id)) return;
  lock_appends();
  if (!table.find_id(kind, id) && !table.append({kind, id, id})) overflow.store(true);
  unlock_appends();
}

// A kernel id just returned by a *get call.
int obtained(uint32_t kind, int kernel_id) {
  if (kernel_id < 0) return kernel_id;
  int id = program_id_of(kind, kernel_id);
  remember(g_obtained, g_obtained_overflow, kind, id);
  return id;
}

// ---- capture ----------------------------------------------------------------------------------

// The segments this process knew at "drain" and who saves each (see the top of this file).
struct SegmentClaim {
  int kernel_id;
  int key;
  bool won;              // this process saves it
  uint64_t attachments;  // the kernel's count (shm_nattch) at "drain"
};
SegmentClaim g_claims[STASIS_MAX_SYSV_OBJECTS];
uint32_t g_claim_count;
char g_claims_dir[STASIS_PATH_MAX];  // the generation directory the markers are in

void marker_of(const SegmentClaim& claim, char* out, size_t cap) {
  host_marker_path(out, cap, g_claims_dir, "sysv-shm", static_cast<uint32_t>(claim.kernel_id),
                   static_cast<uint32_t>(claim.key));
}

const SegmentClaim* claim_of(int kernel_id) {
  for (uint32_t i = 0; i < g_claim_count; i++)
    if (g_claims[i].kernel_id == kernel_id) return &g_claims[i];
  return nullptr;
}

void forget_claims() { g_claim_count = 0; }

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case STASIS_SYSV_SHM: return "System V shared memory segment";
    case STASIS_SYSV_SEM: return "System V semaphore set";
    default: return "System V message queue";
  }
}

LogLine& name_object(LogLine& error, const StasisSysvObject& o) {
  error << kind_name(o.kind) << " id " << o.id;
  if (o.key != IPC_PRIVATE) (error << " (key ").hex(static_cast<uint32_t>(o.key)) << ")";
  return error;
}

struct Attachment {
  uint64_t address, end;
  int kernel_id;
  bool may_write;
  uint32_t mappings;  // the kernel counts each in shm_nattch
};

class SysvCapture {
 public:
  SysvCapture(Arena& arena, LogLine& error) : arena_(arena), error_(error) {}

  // At "drain": competes for every segment this process obtained or attached, and counts its
  // mappings of each in the segment's marker.
  bool claim_segments() {
    if (!collect()) return false;
    for (uint32_t i = 0; i < object_count_; i++) {
      const StasisSysvObject& o = objects_[i];
      if (o.kind != STASIS_SYSV_SHM) continue;
      struct shmid_ds ds;
      if (STASIS_SYS3(SYS_shmctl, o.kernel_id, IPC_STAT, &ds) != 0) continue;  // gone, or refused later
      SegmentClaim& claim = g_claims[g_claim_count];
      claim = {o.kernel_id, ds.shm_perm.__key, false, ds.shm_nattch};
      char what[96] = "System V shared memory segment id ";
      FixedText(what, sizeof what) << o.kernel_id;
      char marker[STASIS_PATH_MAX + 128];
      marker_of(claim, marker, sizeof marker);
      int won = claim_for_host(marker, what, mappings_of(i), error_);
      if (won < 0) return false;
      claim.won = won == 1;
      g_claim_count++;
    }
    return true;
  }

  bool run(const Mapping* maps, uint32_t map_count, FdDataList& data) {
    maps_ = maps;
    map_count_ = map_count;
    data_ = &data;
    if (!collect()) return false;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < object_count_; i++) {
      int r = describe(objects_[i], i);
      if (r < 0) return false;
      if (r == 0) continue;  // removed since the program obtained it
      if (kept != i) retarget_attachments(i, kept), objects_[kept] = objects_[i];
      if (!save_contents(objects_[kept], kept)) return false;
      kept++;
    }
    object_count_ = kept;
    if (object_count_ == 0) return true;
    auto* saved = static_cast<StasisSysvAttachment*>(arena_.alloc(sizeof(StasisSysvAttachment) * (attachment_count_ + 1)));
    if (!saved) return out_of_memory();
    for (uint32_t i = 0; i < attachment_count_; i++)
      saved[i] = {attachments_[i].address, attachment_object_[i],
                  attachments_[i].may_write ? 0u : static_cast<uint32_t>(SHM_RDONLY)};
    return add(data_->add_ref(-1, STASIS_FD_DATA_SYSV_OBJECTS, objects_, sizeof(StasisSysvObject) * object_count_)) &&
           (attachment_count_ == 0 ||
            add(data_->add_ref(-1, STASIS_FD_DATA_SYSV_ATTACHMENTS, saved, sizeof(StasisSysvAttachment) * attachment_count_)));
  }

 private:
  // The objects the program obtained and the segments it has attached, with their attachments.
  bool collect() {
    if (g_obtained_overflow.load()) {
      error_ << "the program obtained more than " << STASIS_MAX_SYSV_OBJECTS
             << " System V IPC objects, more than this version of Stasis can save; not checkpointing";
      return false;
    }
    objects_ = static_cast<StasisSysvObject*>(arena_.alloc(sizeof(StasisSysvObject) * STASIS_MAX_SYSV_OBJECTS));
    attachments_ = static_cast<Attachment*>(arena_.alloc(sizeof(Attachment) * STASIS_MAX_SHM_ATTACHMENTS));
    if (!objects_ || !attachments_) return out_of_memory();
    if (g_shm_attached.load() && !find_attachments()) return false;
    for (uint32_t i = 0, n = g_obtained.size(); i < n; i++) {
      const IdPair& p = g_obtained[i];
      if (add_object(p.kind, p.id, kernel_id_of(p.kind, p.id)) < 0) return false;
    }
    return true;
  }

  // The kernel counts each mapping of a segment (an attachment split by mprotect is several).
  uint64_t mappings_of(uint32_t object) const {
    uint64_t mappings = 0;
    for (uint32_t a = 0; a < attachment_count_; a++)
      if (attachment_object_[a] == object) mappings += attachments_[a].mappings;
    return mappings;
  }

  bool out_of_memory() {
    error_ << "not enough checkpoint scratch memory for the System V IPC objects; not checkpointing";
    return false;
  }
  bool add(bool ok) { return ok || out_of_memory(); }

  // Index of the object (kind, kernel id), added if new; -1 when the table is full.
  int add_object(uint32_t kind, int id, int kernel_id) {
    for (uint32_t i = 0; i < object_count_; i++)
      if (objects_[i].kind == kind && objects_[i].kernel_id == kernel_id) return static_cast<int>(i);
    if (object_count_ == STASIS_MAX_SYSV_OBJECTS) {
      error_ << "the program uses more than " << STASIS_MAX_SYSV_OBJECTS
             << " System V IPC objects, more than this version of Stasis can save; not checkpointing";
      return -1;
    }
    StasisSysvObject& o = objects_[object_count_];
    o = {};
    o.kind = kind;
    o.id = id;
    o.kernel_id = kernel_id;
    return static_cast<int>(object_count_++);
  }

  void retarget_attachments(uint32_t from, uint32_t to) {
    for (uint32_t a = 0; a < attachment_count_; a++)
      if (attachment_object_[a] == from) attachment_object_[a] = to;
  }

  // Attachments from smaps: a segment is attached whole, possibly split into several mappings
  // by mprotect; "mw" (may write) tells an attachment made with SHM_RDONLY.
  bool find_attachments() {
    constexpr size_t kCap = 8u << 20;
    char* text = static_cast<char*>(arena_.alloc(kCap));
    if (!text) return out_of_memory();
    // smaps walks every page table to count what each mapping holds: milliseconds in a big
    // process, twice per checkpoint. The plain list says whether any segment is attached at all
    // (a program that attached one once, as Open MPI's start-up probe does, usually has none).
    if (!any_segment_mapped(text, kCap)) return true;
    long len = read_small_file("/proc/self/smaps", text, kCap);
    if (len <= 0 || static_cast<size_t>(len) + 1 >= kCap) {
      error_ << "cannot read /proc/self/smaps to find System V shared memory attachments; not checkpointing";
      return false;
    }
    Attachment* current = nullptr;  // the attachment the last header line belongs to
    for (const char* line = text; *line;) {
      const char* eol = line;
      while (*eol && *eol != '\n') eol++;
      bool header = (*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f');
      if (header) {
        current = nullptr;
        if (!sysv_header(line, eol, &current)) return false;
      } else if (current && str_starts(line, "VmFlags:")) {
        bool may_write = false;
        for (const char* p = line; p + 3 < eol; p++)
          if (p[0] == ' ' && p[1] == 'm' && p[2] == 'w' && (p[3] == ' ' || p + 3 == eol)) may_write = true;
        if (current->address == current_start_) current->may_write = may_write;
      }
      line = *eol ? eol + 1 : eol;
    }
    return true;
  }

  // Whether a /proc/self/maps text names a System V segment ("... /SYSV0000002a (deleted)").
  static bool has_sysv_mapping(const char* text) {
    for (const char* p = text; *p; p++)
      if (p[0] == '/' && p[1] == 'S' && p[2] == 'Y' && p[3] == 'S' && p[4] == 'V' && p > text && p[-1] == ' ')
        return true;
    return false;
  }

  // Whether the plain list of mappings names a System V segment: at "checkpoint" the capture's
  // own list (read once for every kind: a second read was 0.4 ms a rank of 32 Open MPI ranks, all
  // in the pause), at "drain" /proc/self/maps read into `text`. Unsure (unreadable, too long): yes.
  bool any_segment_mapped(char* text, size_t cap) const {
    const uint64_t made = g_attachments_made.load();
    if (made == g_none_attached_at) return false;
    bool any = false;
    if (maps_) {
      for (uint32_t i = 0; i < map_count_ && !any; i++) any = maps_[i].shared && str_starts(maps_[i].path, "/SYSV");
    } else {
      long len = read_small_file("/proc/self/maps", text, cap);
      any = len <= 0 || static_cast<size_t>(len) + 1 >= cap || has_sysv_mapping(text);
    }
    g_none_attached_at = any ? kNotSeen : made;
    return any;
  }

  // Parses one smaps header line; records it when it maps a System V segment.
  bool sysv_header(const char* line, const char* eol, Attachment** current) {
    const char* q = line;
    uint64_t start = parse_hex(q);
    q++;
    uint64_t end = parse_hex(q);
    q++;
    bool shared = q[3] == 's';
    q += 5;
    uint64_t offset = parse_hex(q);
    q++;
    while (q < eol && *q != ' ') q++;  // device
    q++;
    long inode = 0;
    while (*q >= '0' && *q <= '9') inode = inode * 10 + (*q++ - '0');
    while (*q == ' ') q++;
    const char* path = q;
    if (!shared || !str_starts(path, "/SYSV")) return true;
    static const char kDeleted[] = " (deleted)";
    if (eol - path < static_cast<long>(sizeof kDeleted) ||
        __builtin_memcmp(eol - (sizeof kDeleted - 1), kDeleted, sizeof kDeleted - 1) != 0)
      return true;
    int kernel_id = static_cast<int>(inode);
    current_start_ = start;
    if (offset == 0) {
      if (attachment_count_ == STASIS_MAX_SHM_ATTACHMENTS) {
        error_ << "the program has more than " << STASIS_MAX_SHM_ATTACHMENTS
               << " System V shared memory attachments, more than this version of Stasis can restore; not checkpointing";
        return false;
      }
      const IdPair* known = g_translation.find_kernel_id(STASIS_SYSV_SHM, kernel_id);
      int object = add_object(STASIS_SYSV_SHM, known ? known->id : kernel_id, kernel_id);
      if (object < 0) return false;
      attachment_object_[attachment_count_] = static_cast<uint32_t>(object);
      attachments_[attachment_count_] = {start, end, kernel_id, true, 1};
      *current = &attachments_[attachment_count_++];
      return true;
    }
    Attachment* last = attachment_count_ ? &attachments_[attachment_count_ - 1] : nullptr;
    if (!last || last->kernel_id != kernel_id || last->end != start || start - last->address != offset) {
      (error_ << "System V shared memory segment (kernel id " << kernel_id << ") is partly unmapped at ")
          .hex(start) << ", which this version of Stasis cannot restore; not checkpointing";
      return false;
    }
    last->end = end;
    last->mappings++;
    *current = last;
    return true;
  }

  // Fills in the object from the kernel: 1 done, 0 the object is gone, -1 refused.
  int describe(StasisSysvObject& o, uint32_t index) {
    long self = sys_getpid();
    long r;
    if (o.kind == STASIS_SYSV_SHM) {
      struct shmid_ds ds;
      r = STASIS_SYS3(SYS_shmctl, o.kernel_id, IPC_STAT, &ds);
      if (r == 0) {
        fill_perm(o, ds.shm_perm);
        o.size = ds.shm_segsz;
        o.removed = (ds.shm_perm.mode & SHM_DEST) ? 1 : 0;
        uint64_t whole = (o.size + kPage - 1) & ~(kPage - 1);
        for (uint32_t a = 0; a < attachment_count_; a++)
          if (attachment_object_[a] == index && attachments_[a].end - attachments_[a].address != whole)
            return refuse(o, "is attached only in part"), -1;
        if (!shared_by_computation_only(o, ds.shm_nattch, index)) return -1;
      }
    } else if (o.kind == STASIS_SYSV_SEM) {
      struct semid_ds ds;
      r = STASIS_SYS4(SYS_semctl, o.kernel_id, 0, IPC_STAT, &ds);
      if (r == 0) {
        fill_perm(o, ds.sem_perm);
        o.size = ds.sem_nsems;
        if (g_undo_overflow.load() || g_undo_sets.find_id(STASIS_SYSV_SEM, o.id))
          return refuse(o, "was changed with SEM_UNDO, whose pending adjustments cannot be saved"), -1;
        for (uint64_t s = 0; s < o.size; s++) {
          long pid = STASIS_SYS3(SYS_semctl, o.kernel_id, s, GETPID);
          if (pid > 0 && pid != self) return refuse(o, "is used by another process too"), -1;
        }
      }
    } else {
      struct msqid_ds ds;
      r = STASIS_SYS3(SYS_msgctl, o.kernel_id, IPC_STAT, &ds);
      if (r == 0) {
        fill_perm(o, ds.msg_perm);
        o.size = ds.msg_qbytes;
        o.count = ds.msg_qnum;
        if ((ds.msg_lspid > 0 && ds.msg_lspid != self) || (ds.msg_lrpid > 0 && ds.msg_lrpid != self))
          return refuse(o, "is used by another process too"), -1;
      }
    }
    if (r == -EINVAL || r == -EIDRM) return 0;
    if (r != 0) return refuse(o, "cannot be read (no permission?)"), -1;
    return 1;
  }

  // Whether the segment's attachments are all the computation's, and who saves it.
  bool shared_by_computation_only(StasisSysvObject& o, uint64_t attachments_now, uint32_t index) {
    const SegmentClaim* claim = claim_of(o.kernel_id);
    if (!claim) {  // not seen at "drain" (a coordinator that names no directory there): this process only
      if (attachments_now > mappings_of(index)) return refuse(o, "is attached by another process too");
      return true;
    }
    if (!claim->won) {
      o.saved_elsewhere = 1;
      return true;
    }
    char marker[STASIS_PATH_MAX + 128];
    marker_of(*claim, marker, sizeof marker);
    struct stat counted;
    if (STASIS_SYS2(SYS_stat, marker, &counted) != 0) return refuse(o, "cannot have its attachments counted");
    uint64_t by_computation = static_cast<uint64_t>(counted.st_size);
    if (claim->attachments != by_computation) {
      name_object(error_, o) << " has " << claim->attachments << " attachments, of which the computation's processes hold "
                             << by_computation << ": a process outside the computation uses it too, which this version "
                             << "of Stasis cannot restore; not checkpointing";
      return false;
    }
    return true;
  }

  template <typename Perm>
  static void fill_perm(StasisSysvObject& o, const Perm& perm) {
    o.key = perm.__key;
    o.mode = perm.mode & 0777;
    o.uid = perm.uid;
    o.gid = perm.gid;
    o.cuid = perm.cuid;
  }

  bool refuse(const StasisSysvObject& o, const char* why) {
    name_object(error_, o) << " " << why << ", which this version of Stasis cannot restore; not checkpointing";
    return false;
  }

  bool save_contents(const StasisSysvObject& o, uint32_t index) {
    if (o.kind == STASIS_SYSV_SHM) return o.saved_elsewhere || save_segment(o, index);
    if (o.kind == STASIS_SYSV_SEM) {
      auto* values = static_cast<uint16_t*>(arena_.alloc(sizeof(uint16_t) * (o.size + 1)));
      if (!values) return out_of_memory();
      if (STASIS_SYS4(SYS_semctl, o.kernel_id, 0, GETALL, values) != 0)
        return refuse(o, "has values that cannot be read");
      return add(data_->add_ref(static_cast<int>(index), STASIS_FD_DATA_SYSV_CONTENTS, values, sizeof(uint16_t) * o.size));
    }
    return save_messages(o, index);
  }

  // Copied into a memfd now (the program may change the segment once it runs again, even while
  // a forked writer is still writing the image); the image writer reads it from there.
  bool save_segment(const StasisSysvObject& o, uint32_t index) {
    if (o.size == 0) return true;
    long addr = STASIS_SYS3(SYS_shmat, o.kernel_id, 0, SHM_RDONLY);
    if (addr < 0 && addr > -4096) return refuse(o, "cannot be attached to read it");
    long fd = STASIS_SYS2(SYS_memfd_create, "stasis-sysv-shm", MFD_CLOEXEC);
    bool ok = fd >= 0;
    for (uint64_t done = 0; ok && done < o.size;) {
      long n = STASIS_SYS3(SYS_write, fd, addr + static_cast<long>(done), o.size - done);
      if (n == -EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<uint64_t>(n);
    }
    STASIS_SYS1(SYS_shmdt, addr);
    // The image writer reads the copy (a forked one through its own descriptor table); it is
    // closed at resume, or when the next capture starts after a failed checkpoint.
    if (fd >= 0 && !hold_checkpoint_source(static_cast<int>(fd))) {
      STASIS_SYS1(SYS_close, fd);
      name_object(error_, o) << ": too many copies of files and segments for one checkpoint; not checkpointing";
      return false;
    }
    if (!ok) {
      name_object(error_, o) << ": cannot copy its " << o.size << " bytes (errno " << (fd < 0 ? -fd : 0)
                             << "); not checkpointing";
      return false;
    }
    return add(data_->add_file(static_cast<int>(index), STASIS_FD_DATA_SYSV_CONTENTS, static_cast<int>(fd), o.size));
  }

  // MSG_COPY reads the message at an index and leaves the queue as it is.
  bool save_messages(const StasisSysvObject& o, uint32_t index) {
    if (o.count == 0) return true;
    struct msqid_ds ds;
    if (STASIS_SYS3(SYS_msgctl, o.kernel_id, IPC_STAT, &ds) != 0) return refuse(o, "cannot be read");
    uint64_t text_cap = ds.msg_cbytes + 1;
    auto* buffer = static_cast<char*>(arena_.alloc(sizeof(long) + text_cap));
    auto* saved = static_cast<char*>(arena_.alloc(o.count * sizeof(StasisSysvMessage) + ds.msg_cbytes + 1));
    if (!buffer || !saved) return out_of_memory();
    uint64_t used = 0;
    for (uint64_t m = 0; m < o.count; m++) {
      long n = STASIS_SYS5(SYS_msgrcv, o.kernel_id, buffer, text_cap, m, MSG_COPY | IPC_NOWAIT);
      if (n < 0) {
        name_object(error_, o) << ": cannot copy message " << m << " of " << o.count << " (errno " << -n
                               << "; MSG_COPY needs a kernel with CONFIG_CHECKPOINT_RESTORE); not checkpointing";
        return false;
      }
      StasisSysvMessage header = {*reinterpret_cast<long*>(buffer), static_cast<uint64_t>(n)};
      __builtin_memcpy(saved + used, &header, sizeof header);
      __builtin_memcpy(saved + used + sizeof header, buffer + sizeof(long), static_cast<size_t>(n));
      used += sizeof header + static_cast<uint64_t>(n);
    }
    return add(data_->add_ref(static_cast<int>(index), STASIS_FD_DATA_SYSV_CONTENTS, saved, used));
  }

  Arena& arena_;
  FdDataList* data_ = nullptr;  // run() only
  LogLine& error_;
  StasisSysvObject* objects_ = nullptr;
  uint32_t object_count_ = 0;
  Attachment* attachments_ = nullptr;
  uint32_t attachment_object_[STASIS_MAX_SHM_ATTACHMENTS] = {};
  uint32_t attachment_count_ = 0;
  uint64_t current_start_ = 0;
  const Mapping* maps_ = nullptr;  // the capture's /proc/self/maps, when it has read it
  uint32_t map_count_ = 0;
};

// ---- events -----------------------------------------------------------------------------------

// "drain": every process of the computation is stopped, and no forked writer exists yet.
int claim_shared_segments(const char* generation_dir) {
  forget_claims();
  if (!generation_dir || !*generation_dir || (!g_shm_attached.load() && g_obtained.size() == 0)) return 0;
  str_copy(g_claims_dir, generation_dir, sizeof g_claims_dir);
  LogLine error;
  Arena arena;  // for smaps and the tables; gone before the checkpoint's own arena is made
  if (!arena.create(sizeof(SysvCapture) + (9u << 20))) {
    stasis_plugin_refuse("not enough scratch memory to find the System V segments to save; not checkpointing");
    return 1;
  }
  bool ok = (new (arena.alloc(sizeof(SysvCapture))) SysvCapture(arena, error))->claim_segments();
  arena.destroy();
  if (ok) return 0;
  forget_claims();
  stasis_plugin_refuse(error.c_str());
  return 1;
}

int on_event(stasis_event_t event, const stasis_event_data_t* data, void*) {
  if (event == STASIS_EVENT_DRAIN) return claim_shared_segments(data ? data->ckpt_dir : nullptr);
  if (event == STASIS_EVENT_RESUME) {
    forget_claims();
  } else if (event == STASIS_EVENT_RESTART) {
    forget_claims();
    g_none_attached_at = kNotSeen;  // restart attached the image's segments itself
    g_translation.replace(g_restart_info.sysv.ids, g_restart_info.sysv.object_count);
  }
  return 0;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "sysv-ipc", on_event, nullptr, nullptr};

__attribute__((constructor)) void register_sysv_plugin() { stasis_register_plugin(&g_plugin); }

}  // namespace

bool claim_sysv_mapping(const Mapping& m, StasisRegionRecord* r) {
  if (!m.shared || !str_starts(m.path, "/SYSV") || !str_ends(m.path, " (deleted)")) return false;
  if (r) {
    r->kind = STASIS_REGION_SYSV_SHM;
    r->file_ino = m.inode;
  }
  return true;
}

bool capture_sysv_objects(Arena& arena, const Mapping* maps, uint32_t map_count, FdDataList& data, LogLine& error) {
  if (g_obtained.size() == 0 && !g_shm_attached.load()) return true;
  // The capture's state is large (attachment tables): it lives in the arena, not on the stack.
  void* memory = arena.alloc(sizeof(SysvCapture));
  if (!memory) {
    error << "not enough checkpoint scratch memory for the System V IPC objects; not checkpointing";
    return false;
  }
  return (new (memory) SysvCapture(arena, error))->run(maps, map_count, data);
}

}  // namespace stasis::rt

// ---- wrappers ---------------------------------------------------------------------------------
using namespace stasis::rt;

extern "C" {

__attribute__((visibility("default"))) int shmget(key_t key, size_t size, int flags) {
  static int (*real)(key_t, size_t, int);
  return obtained(STASIS_SYSV_SHM, next_symbol(real, "shmget")(key, size, flags));
}

__attribute__((visibility("default"))) void* shmat(int id, const void* address, int flags) {
  static void* (*real)(int, const void*, int);
  if (!g_shm_attached.load(std::memory_order_relaxed)) g_shm_attached.store(true);
  void* attached = next_symbol(real, "shmat")(kernel_id_of(STASIS_SYSV_SHM, id), address, flags);
  g_attachments_made.fetch_add(1, std::memory_order_relaxed);  // after: see g_none_attached_at
  return attached;
}

}  // extern "C"

// UCX's memory hooks (libucm) take over libc's shmat and attach through syscall(SYS_shmat): the
// same as the wrapper above, straight to the kernel (libc's shmat may be the hook itself).
long stasis::rt::shmat_syscall(long id, long address, long flags) {
  if (!g_shm_attached.load(std::memory_order_relaxed)) g_shm_attached.store(true);
  long r = STASIS_SYS3(SYS_shmat, kernel_id_of(STASIS_SYSV_SHM, static_cast<int>(id)), address, flags);
  g_attachments_made.fetch_add(1, std::memory_order_relaxed);
  if (r < 0 && r > -4096) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}

extern "C" {

__attribute__((visibility("default"))) int shmctl(int id, int cmd, struct shmid_ds* buf) {
  static int (*real)(int, int, struct shmid_ds*);
  auto* fn = next_symbol(real, "shmctl");
  if (cmd == SHM_STAT || cmd == SHM_STAT_ANY) return program_id_of(STASIS_SYSV_SHM, fn(id, cmd, buf));
  if (cmd == IPC_INFO || cmd == SHM_INFO) return fn(id, cmd, buf);
  return fn(kernel_id_of(STASIS_SYSV_SHM, id), cmd, buf);
}

__attribute__((visibility("default"))) int semget(key_t key, int nsems, int flags) {
  static int (*real)(key_t, int, int);
  return obtained(STASIS_SYSV_SEM, next_symbol(real, "semget")(key, nsems, flags));
}

__attribute__((visibility("default"))) int semctl(int id, int num, int cmd, ...) {
  static int (*real)(int, int, int, ...);
  va_list ap;
  va_start(ap, cmd);
  unsigned long arg = va_arg(ap, unsigned long);  // union semun: one word; ignored where unused
  va_end(ap);
  auto* fn = next_symbol(real, "semctl");
  if (cmd == SEM_STAT || cmd == SEM_STAT_ANY) return program_id_of(STASIS_SYSV_SEM, fn(id, num, cmd, arg));
  if (cmd == IPC_INFO || cmd == SEM_INFO) return fn(id, num, cmd, arg);
  return fn(kernel_id_of(STASIS_SYSV_SEM, id), num, cmd, arg);
}

static void note_sem_undo(int id, const struct sembuf* ops, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (ops[i].sem_flg & SEM_UNDO) {
      remember(g_undo_sets, g_undo_overflow, STASIS_SYSV_SEM, id);
      return;
    }
}

// The hot path of semaphore users: straight to the system call, as glibc's semop (no
// cancellation point) would go.
__attribute__((visibility("default"))) int semtimedop(int id, struct sembuf* ops, size_t count,
                                                      const struct timespec* timeout) {
  note_sem_undo(id, ops, count);
  long r = STASIS_SYS4(SYS_semtimedop, kernel_id_of(STASIS_SYSV_SEM, id), ops, count, timeout);
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return static_cast<int>(r);
}

__attribute__((visibility("default"))) int semop(int id, struct sembuf* ops, size_t count) {
  return semtimedop(id, ops, count, nullptr);
}

__attribute__((visibility("default"))) int msgget(key_t key, int flags) {
  static int (*real)(key_t, int);
  return obtained(STASIS_SYSV_MSG, next_symbol(real, "msgget")(key, flags));
}

__attribute__((visibility("default"))) int msgctl(int id, int cmd, struct msqid_ds* buf) {
  static int (*real)(int, int, struct msqid_ds*);
  auto* fn = next_symbol(real, "msgctl");
  if (cmd == MSG_STAT || cmd == MSG_STAT_ANY) return program_id_of(STASIS_SYSV_MSG, fn(id, cmd, buf));
  if (cmd == IPC_INFO || cmd == MSG_INFO) return fn(id, cmd, buf);
  return fn(kernel_id_of(STASIS_SYSV_MSG, id), cmd, buf);
}

__attribute__((visibility("default"))) int msgsnd(int id, const void* message, size_t size, int flags) {
  static int (*real)(int, const void*, size_t, int);
  return next_symbol(real, "msgsnd")(kernel_id_of(STASIS_SYSV_MSG, id), message, size, flags);
}

__attribute__((visibility("default"))) ssize_t msgrcv(int id, void* message, size_t size, long type,
                                                      int flags) {
  static ssize_t (*real)(int, void*, size_t, long, int);
  return next_symbol(real, "msgrcv")(kernel_id_of(STASIS_SYSV_MSG, id), message, size, type, flags);
}

}  // extern "C"
