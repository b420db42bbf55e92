// Files: open descriptors. Regular files and directories are reopened by path at their saved
// offset; character devices like /dev/null by path; standard streams connected to something
// outside the computation (terminal, pipe, socket) are reconnected to those of `stasis restart`.
// Every kind, these included, is a row of the capture table (capture_table.cc), tried in order;
// what none takes is refused with a message naming the descriptor and its kind.
#include "plugins/files/files.h"
#include "plugins/files/checkpoint_sources.h"
#include "plugins/files/left_out_fds.h"
#include "plugins/files/outside.h"
#include "plugins/files/records.h"
#include "plugins/saved_files/saved_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace stasis::rt {
namespace {

bool restorable_chardev(const char* path) {
  static const char* const kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                         "/dev/urandom"};
  for (const char* d : kDevices)
    if (str_eq(path, d)) return true;
  return false;
}

constexpr int kMaxInherited = 1024;
// stasis_external_file_key of each descriptor present at launch, 0 = none
uint64_t g_inherited_ino[kMaxInherited];

// What the launched process inherited from outside, for the processes it starts: file keys and
// the numbers the launched process had them at, as a descendant may hold them at other numbers
// (STASIS_EXTERNAL_INODES in the environment: "FD:KEY,...").
constexpr int kMaxExternal = 64;
struct OutsideFile {
  uint64_t key;
  int32_t fd;
};
OutsideFile g_external[kMaxExternal];
int g_external_count = 0;

// The number the computation's launch (or `stasis restart`) had this outside file at, or -1 when
// `st` is not one of the files the computation inherited from outside.
int outside_descriptor_of(int fd, const struct stat& st) {
  const uint64_t key = stasis_external_file_key(st.st_dev, st.st_ino);
  // After a restart, the outside is what `stasis restart` had at its own numbers.
  if (int restart_fd = pid_table_outside_descriptor(key); restart_fd >= 0) return restart_fd;
  if (fd < kMaxInherited && g_inherited_ino[fd] == key) return fd;
  for (int other = 0; other < kMaxInherited; other++)  // a copy at another number (dup, 3>&1)
    if (g_inherited_ino[other] == key) return other;
  for (int i = 0; i < g_external_count; i++)
    if (g_external[i].key == key) return g_external[i].fd;
  return pid_table_outside_descriptor(key);
}

// The descriptors of this process's ancestors, each listed once per checkpoint: a description
// inherited across fork is looked up by inode here, then confirmed with kcmp.
struct HeldDescriptor {
  int32_t fd;
  uint64_t dev, ino;
};
struct AncestorDescriptors {
  long pid = 0;
  HeldDescriptor* held = nullptr;
  uint32_t count = 0;
};

class AncestorTables {
 public:
  explicit AncestorTables(Arena& arena) : arena_(arena) {}
  // Level 0 is the parent, 1 the grandparent...; nullptr above the topmost one below init.
  const AncestorDescriptors* level(uint32_t i) {
    while (listed_ <= i) {
      if (listed_ == kMaxLevels) return nullptr;
      char stat[512];
      const char* after_comm = listed_ ? read_proc_stat(levels_[listed_ - 1].pid, stat, sizeof stat) : nullptr;
      long pid = listed_ == 0 ? STASIS_SYS0(SYS_getppid)
                              : after_comm ? static_cast<long>(proc_stat_field(after_comm, 4)) : 0;
      if (pid <= 1) return nullptr;
      list(pid, levels_[listed_++]);
    }
    return &levels_[i];
  }

 private:
  void list(long pid, AncestorDescriptors& out) {
    out.pid = pid;
    uint32_t cap = 64;
    out.held = static_cast<HeldDescriptor*>(arena_.alloc(sizeof(HeldDescriptor) * cap));
    char dir_path[48] = "/proc/";
    format_uint(dir_path + 6, static_cast<unsigned long>(pid));
    str_copy(dir_path + str_len(dir_path), "/fd", 8);
    for_each_proc_number(dir_path, [&](long fd, const char* name, long dir) {
      struct stat st;
      if (STASIS_SYS4(SYS_newfstatat, dir, name, &st, 0) != 0) return true;
      if (out.count == cap && !arena_.grow(out.held, cap)) return false;  // a partial table
      out.held[out.count++] = {static_cast<int32_t>(fd), st.st_dev, st.st_ino};
      return true;
    });
  }

  static constexpr uint32_t kMaxLevels = 64;
  Arena& arena_;
  AncestorDescriptors levels_[kMaxLevels];
  uint32_t listed_ = 0;
};

// A description inherited across fork is shared with the parent (and maybe further up): its
// owner is the topmost ancestor still holding it, at its lowest descriptor, so every holder
// names the same one.
void find_owner_among_ancestors(AncestorTables& ancestors, long self, int fd, const struct stat& st,
                                int32_t* owner_pid, int32_t* owner_fd) {
  for (uint32_t i = 0; const AncestorDescriptors* a = ancestors.level(i); i++) {
    int theirs = -1;
    for (uint32_t k = 0; k < a->count; k++) {
      const HeldDescriptor& h = a->held[k];
      if (h.ino == st.st_ino && h.dev == st.st_dev && (theirs < 0 || h.fd < theirs) &&
          STASIS_SYS5(SYS_kcmp, a->pid, self, 0 /* KCMP_FILE */, h.fd, fd) == 0)
        theirs = h.fd;
    }
    if (theirs < 0) return;
    *owner_pid = static_cast<int32_t>(virtual_pid_of(a->pid));
    *owner_fd = theirs;
  }
}

}  // namespace

// The capture table's row for the kinds of this folder: plain files, directories, devices, and
// descriptors inherited from outside the computation.
int capture_plain_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList&, LogLine&) {
  const struct stat& st = probe.st;
  if (!S_ISREG(st.st_mode) || probe.deleted || r.path[0] != '/' || str_starts(r.path, "/memfd:")) {
    // not a named regular file: below, or another row
  } else if (const bool write_only = (r.flags & O_ACCMODE) == O_WRONLY;
             !named_file_saved(r.path, r.flags) ||
             (write_only && outside_use_of(probe.fd, st) != OutsideUse::kNone)) {
    // (A temporary file the computation writes alone goes with its bytes, saved_files row; one
    // the outside writes too, `stasis launch prog > /tmp/log`, is the outside's stream.)
    r.offset = STASIS_SYS3(SYS_lseek, probe.fd, 0, SEEK_CUR);
    // Written to: restart may cut the bytes after its size at the checkpoint only when they can
    // be nobody's but the computation's (README.md, Output files).
    const OutsideUse use = (r.flags & O_ACCMODE) == O_RDONLY ? OutsideUse::kNone : outside_use_of(probe.fd, st);
    if (use == OutsideUse::kSharedDescription) {  // `./job.sh > log`: the job writes through it too
      r.kind = STASIS_FD_EXTERNAL;
      set_kind_data(r, OutsideFileData{static_cast<uint64_t>(probe.fd) + 1, kOutsideRegularFile});
      return 1;
    }
    r.kind = STASIS_FD_REGULAR;
    set_kind_data(r, RegularFileData{kOutsideWritersChecked, use == OutsideUse::kOtherWriter ? 1u : 0u});
    return 1;
  }
  // Deleted, but its description is shared with a process outside the computation (a log the
  // caller removed, as ctest does with LastTest.log.tmp): the outside's stream, not a file whose
  // bytes go into the image (a write-only one could not be read into it anyway).
  if (S_ISREG(st.st_mode) && probe.deleted && (r.flags & O_ACCMODE) != O_RDONLY &&
      outside_use_of(probe.fd, st) == OutsideUse::kSharedDescription) {
    r.offset = STASIS_SYS3(SYS_lseek, probe.fd, 0, SEEK_CUR);
    r.kind = STASIS_FD_EXTERNAL;
    set_kind_data(r, OutsideFileData{static_cast<uint64_t>(probe.fd) + 1, kOutsideRegularFile});
    return 1;
  }
  if (S_ISDIR(st.st_mode) && !probe.deleted) {
    r.kind = STASIS_FD_DIRECTORY;
    r.offset = STASIS_SYS3(SYS_lseek, probe.fd, 0, SEEK_CUR);
    return 1;
  }
  if (S_ISCHR(st.st_mode) && restorable_chardev(r.path)) {
    r.kind = STASIS_FD_CHARDEV;
    return 1;
  }
  if (int outside = outside_descriptor_of(probe.fd, st); outside >= 0) {
    r.kind = STASIS_FD_EXTERNAL;
    set_kind_data(r, StasisExternalData{static_cast<uint64_t>(outside) + 1});  // restart connects its own there
    return 1;
  }
  return 0;
}

namespace {
// Fills r.kind and what goes with it: 1 captured, 0 no kind takes it, -1 refused (error says).
int capture_by_kind(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  for (unsigned i = 0; i < kCaptureKindCount; i++)
    if (kCaptureKinds[i].capture)
      if (int handled = kCaptureKinds[i].capture(probe, r, data, error)) return handled;
  return 0;
}

}  // namespace

void note_external_fds_from_env() {
  note_outside_processes_from_env();
  g_external_count = 0;
  const char* list = g_settings.external_inodes.or_else(nullptr);
  uint64_t v = 0, fd = 0;
  for (const char* p = list; p && g_external_count < kMaxExternal; p++) {
    if (*p >= '0' && *p <= '9') {
      v = v * 10 + static_cast<uint64_t>(*p - '0');
      continue;
    }
    if (*p == ':') {
      fd = v, v = 0;
      continue;
    }
    if (v) g_external[g_external_count++] = {v, static_cast<int32_t>(fd)};
    v = fd = 0;
    if (!*p) break;
  }
}

void note_inherited_fds(const uint64_t* only) {
  if (only) note_outside_after_restart();
  else note_outside_processes_at_launch();
  g_external_count = 0;  // after a restart these inodes mean nothing
  for (int fd = 0; fd < kMaxInherited; fd++) {
    g_inherited_ino[fd] = 0;
    if (only && !(only[fd / 64] & (1ull << (fd % 64)))) continue;
    struct stat st;
    if (STASIS_SYS2(SYS_fstat, fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      g_inherited_ino[fd] = stasis_external_file_key(st.st_dev, st.st_ino);
  }
  if (only) return;
  // At launch (before main, single-threaded): tell the processes this one starts.
  static char list[kMaxExternal * 27 + 1];
  size_t n = 0;
  for (int fd = 0; fd < kMaxInherited && n + 28 < sizeof list; fd++)
    if (g_inherited_ino[fd] > 1) {
      if (n) list[n++] = ',';
      format_uint(list + n, static_cast<unsigned long>(fd));
      n = str_len(list);
      list[n++] = ':';
      format_uint(list + n, g_inherited_ino[fd]);
      n = str_len(list);
    }
  list[n] = 0;
  setenv("STASIS_EXTERNAL_INODES", list, 1);
}

bool FdDataList::init(Arena& arena, uint32_t cap) {
  arena_ = &arena;
  items_ = static_cast<FdDataItem*>(arena.alloc(sizeof(FdDataItem) * cap));
  count_ = 0;
  cap_ = items_ ? cap : 0;
  return items_ != nullptr;
}

bool FdDataList::add_copy(int fd, uint32_t tag, const void* bytes, uint64_t len) {
  void* copy = len ? arena_->alloc(len) : nullptr;
  if (len && !copy) return false;
  if (len) __builtin_memcpy(copy, bytes, len);
  return add_ref(fd, tag, copy, len);
}

bool FdDataList::read_files_now() {
  for (uint32_t i = 0; i < count_; i++) {
    FdDataItem& item = items_[i];
    if (item.source_fd < 0 || item.len == 0) continue;
    char* copy = static_cast<char*>(arena_->alloc(item.len));
    if (!copy) return false;
    for (uint64_t got = 0; got < item.len;) {
      long r = STASIS_SYS4(SYS_pread64, item.source_fd, copy + got, item.len - got, item.offset + got);
      if (r == -EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<uint64_t>(r);
    }
    item.bytes = copy;
    item.source_fd = -1;
  }
  return true;
}

bool FdDataList::room_for_one() {
  constexpr uint32_t kMaxItems = 1u << 20;  // 40 MiB of items: far beyond any real process
  return count_ < cap_ || (cap_ > 0 && cap_ < kMaxItems && arena_->grow(items_, cap_));
}

bool FdDataList::add_ref(int fd, uint32_t tag, const void* bytes, uint64_t len) {
  if (!room_for_one()) return false;
  items_[count_++] = {fd, tag, bytes, len, -1, 0};
  return true;
}

bool FdDataList::add_file(int fd, uint32_t tag, int source_fd, uint64_t len, uint64_t offset) {
  if (!room_for_one()) return false;
  items_[count_++] = {fd, tag, nullptr, len, source_fd, offset};
  return true;
}

bool capture_fds(Arena& arena, StasisFdRecord** out, uint32_t* count, FdDataList& data, LogLine& error) {
  constexpr uint32_t kMax = 65536;
  uint32_t cap = 64, n = 0;
  auto* recs = static_cast<StasisFdRecord*>(arena.alloc(sizeof(StasisFdRecord) * cap));
  const long pid = sys_getpid();
  AncestorTables ancestors(arena);
  begin_outside_lookups();
  close_checkpoint_sources();  // a checkpoint that failed before resume left them
  bool ok = true;
  bool listed = for_each_proc_number("/proc/self/fd", [&](long number, const char*, long dir) {
    const int fd = static_cast<int>(number);
    if (fd == dir || is_runtime_fd(fd) || is_left_out_fd(fd) || is_checkpoint_source(fd)) return true;
    if (n == cap && (cap >= kMax || !arena.grow(recs, cap))) {
      error << "the process has more than " << n << " descriptors; not checkpointing";
      return ok = false;
    }
    StasisFdRecord& r = recs[n];
    r = {};
    r.fd = fd;
    char proc_path[48] = "/proc/self/fd/";
    format_uint(proc_path + 14, static_cast<unsigned long>(fd));
    long len = STASIS_SYS3(SYS_readlink, proc_path, r.path, sizeof r.path - 1);
    struct stat st;
    if (len < 0 || STASIS_SYS2(SYS_fstat, fd, &st) != 0) return true;  // closed meanwhile
    r.path[len] = 0;
    r.flags = static_cast<uint32_t>(STASIS_SYS2(SYS_fcntl, fd, F_GETFL));
    r.cloexec = (STASIS_SYS2(SYS_fcntl, fd, F_GETFD) & FD_CLOEXEC) ? 1 : 0;
    r.dev = st.st_dev;
    r.ino = st.st_ino;
    r.size = static_cast<uint64_t>(st.st_size);
    r.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    r.same_description_as = -1;
    r.owner_pid = static_cast<int32_t>(g_config.original_pid);
    r.owner_fd = fd;
    for (uint32_t j = 0; j < n; j++) {
      const StasisFdRecord& first = recs[j];
      if (first.ino != r.ino || first.dev != r.dev ||
          STASIS_SYS5(SYS_kcmp, pid, pid, 0 /* KCMP_FILE */, first.fd, fd) != 0)
        continue;
      // A second number for one description (dup): the first holder captured its state.
      r.same_description_as = first.fd;
      r.owner_pid = first.owner_pid;
      r.owner_fd = first.owner_fd;
      r.kind = first.kind;
      r.offset = first.offset;
      __builtin_memcpy(r.kind_data, first.kind_data, sizeof r.kind_data);
      n++;
      return true;
    }
    find_owner_among_ancestors(ancestors, pid, fd, st, &r.owner_pid, &r.owner_fd);
    const bool deleted = str_ends(r.path, " (deleted)");
    const int handled = capture_by_kind(FdProbe{fd, r.path, st, deleted}, r, data, error);
    if (handled == 0)
      error << "descriptor " << fd << " is "
            << (deleted ? "a file deleted while open" : kind_of_link(r.path)) << " (" << r.path
            << "), which this version of Stasis cannot restore; not checkpointing";
    if (handled <= 0) return ok = false;
    n++;
    return true;
  });
  if (!listed) {
    error << "cannot list /proc/self/fd";
    ok = false;
  }
  *out = recs;
  *count = n;
  return ok;
}

}  // namespace stasis::rt
