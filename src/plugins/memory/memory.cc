// Memory: every mapping of the process, saved as a REGION record followed by PAGES records for
// the pages that hold data only memory has (populated anonymous pages, pages of private file
// mappings modified in memory, shared anonymous pages). Clean file pages are re-mapped from their
// file at restart; vdso/vvar are recorded (not saved) because the kernel provides them anew.
#include "plugins/memory/memory.h"

#include "plugins/files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace stasis::rt {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFileOrShared = 1ull << 61;

struct Mapping {
  uint64_t start, end, offset, dev, inode;  // dev as stat() encodes it
  uint32_t prot;
  bool shared;
  const char* path;  // NUL-terminated, inside the maps text; "" for anonymous
};

// maps shows a device as hex major:minor; st_dev encodes it as glibc's makedev() does.
uint64_t parse_device(const char*& p) {
  uint64_t major = parse_hex(p);
  p++;
  uint64_t minor = parse_hex(p);
  return ((major & 0xfff) << 8) | ((major & ~0xfffull) << 32) | (minor & 0xff) | ((minor & ~0xffull) << 12);
}

// Reads /proc/self/maps into the arena and splits it into mappings (paths are cut in place).
uint32_t read_mappings(Arena& arena, Mapping** out, LogLine& error) {
  constexpr size_t kCap = 8u << 20;
  char* text = static_cast<char*>(arena.alloc(kCap));
  if (!text) return 0;
  long len = read_small_file("/proc/self/maps", text, kCap);
  if (len <= 0) {
    error << "cannot read /proc/self/maps";
    return 0;
  }
  uint32_t lines = 0;
  for (long i = 0; i < len; i++) lines += text[i] == '\n';
  auto* maps = static_cast<Mapping*>(arena.alloc(sizeof(Mapping) * (lines + 1)));
  uint32_t n = 0;
  for (char* p = text; *p;) {
    char* eol = p;
    while (*eol && *eol != '\n') eol++;
    bool more = *eol != 0;
    *eol = 0;
    const char* q = p;
    Mapping m = {};
    m.start = parse_hex(q);
    q++;
    m.end = parse_hex(q);
    q++;
    m.prot = (q[0] == 'r' ? PROT_READ : 0) | (q[1] == 'w' ? PROT_WRITE : 0) |
             (q[2] == 'x' ? PROT_EXEC : 0);
    m.shared = q[3] == 's';
    q += 5;
    m.offset = parse_hex(q);
    q++;
    m.dev = parse_device(q);
    q++;
    m.inode = 0;
    while (*q >= '0' && *q <= '9') m.inode = m.inode * 10 + static_cast<uint64_t>(*q++ - '0');
    while (*q == ' ') q++;
    m.path = q;
    maps[n++] = m;
    p = more ? eol + 1 : eol;
  }
  *out = maps;
  return n;
}

class PageScanner {
 public:
  bool open(Arena& arena) {
    buf_ = static_cast<uint64_t*>(arena.alloc(kWindow * 8));
    vec_ = static_cast<unsigned char*>(arena.alloc(kWindow));
    long fd = STASIS_SYS3(SYS_open, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
    fd_ = static_cast<int>(fd);
    return fd >= 0 && buf_ && vec_;
  }
  void close() { STASIS_SYS1(SYS_close, fd_); }
  // Calls visit(run_start, run_len) for each run of pages worth saving in [start, end).
  template <typename Visit>
  bool runs(uint64_t start, uint64_t end, uint32_t kind, Visit visit) {
    uint64_t run_start = 0, run_len = 0;
    for (uint64_t window = start; window < end; window += kWindow * kPage) {
      uint64_t pages = (end - window) / kPage;
      if (pages > kWindow) pages = kWindow;
      if (kind == STASIS_REGION_SHARED_ANON) {
        if (STASIS_SYS3(SYS_mincore, window, pages * kPage, vec_) != 0) return false;
      } else {
        long got = STASIS_SYS4(SYS_pread64, fd_, buf_, pages * 8, (window / kPage) * 8);
        if (got != static_cast<long>(pages * 8)) return false;
      }
      for (uint64_t i = 0; i < pages; i++) {
        bool keep;
        if (kind == STASIS_REGION_SHARED_ANON) {
          keep = vec_[i] & 1;
        } else {
          uint64_t e = buf_[i];
          keep = (e & kSwapped) || ((e & kPresent) && (kind != STASIS_REGION_FILE_PRIVATE ||
                                                       !(e & kFileOrShared)));
        }
        uint64_t addr = window + i * kPage;
        if (keep && run_len && run_start + run_len == addr) {
          run_len += kPage;
        } else if (keep) {
          if (run_len && !visit(run_start, run_len)) return false;
          run_start = addr;
          run_len = kPage;
        }
      }
    }
    if (run_len && !visit(run_start, run_len)) return false;
    return true;
  }

 private:
  static constexpr uint64_t kWindow = 65536;
  int fd_ = -1;
  uint64_t* buf_ = nullptr;
  unsigned char* vec_ = nullptr;
};

void fill_file_identity(StasisRegionRecord& r) {
  struct stat st;
  if (STASIS_SYS4(SYS_newfstatat, AT_FDCWD, r.path, &st, 0) == 0) {
    r.file_dev = st.st_dev;
    r.file_ino = st.st_ino;
    r.file_size = static_cast<uint64_t>(st.st_size);
    r.file_mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  }
}

// A file no path leads to: deleted while open, or a memfd.
bool unnamed_file(const Mapping& m) {
  return str_ends(m.path, " (deleted)") || str_starts(m.path, "/memfd:");
}

// Another shared mapping shows some of the same bytes of the same file.
bool mapped_twice(const Mapping* maps, uint32_t count, uint32_t index) {
  const Mapping& m = maps[index];
  for (uint32_t j = 0; j < count; j++) {
    const Mapping& o = maps[j];
    if (j != index && o.shared && o.dev == m.dev && o.inode == m.inode &&
        o.offset < m.offset + (m.end - m.start) && m.offset < o.offset + (o.end - o.start))
      return true;
  }
  return false;
}

}  // namespace

bool forked_copy_is_faithful(Arena& arena) {
  constexpr size_t kCap = 16u << 20;
  char* text = static_cast<char*>(arena.alloc(kCap));
  if (!text || read_small_file("/proc/self/smaps", text, kCap) <= 0) return false;
  for (const char* line = text; *line;) {
    if (str_starts(line, "VmFlags:")) {
      for (const char* p = line; *p && *p != '\n'; p++)
        if (p[0] == ' ' && ((p[1] == 'w' && p[2] == 'f') || (p[1] == 'd' && p[2] == 'c')) &&
            (p[3] == ' ' || p[3] == '\n'))
          return false;
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return true;
}

bool write_memory(ImageWriter& writer, Arena& arena, StasisVdsoLayout* vdso, LogLine& error) {
  Mapping* maps = nullptr;
  uint32_t count = read_mappings(arena, &maps, error);
  if (count == 0) {
    if (error.size() == 0) error << "no memory mappings found";
    return false;
  }
  PageScanner scanner;
  if (!scanner.open(arena)) {
    error << "cannot read /proc/self/pagemap";
    return false;
  }
  *vdso = {};
  bool ok = true;
  for (uint32_t i = 0; i < count && ok; i++) {
    const Mapping& m = maps[i];
    // The scratch arena is not program state. It is a shared mapping, which the kernel never
    // merges with a neighbour (a private arena once swallowed a glibc heap that way).
    if (m.start == arena.start() && m.end == arena.end()) continue;
    uint64_t table_start, table_end;  // the pid table belongs to the computation, not the process
    if (pid_table_region(&table_start, &table_end) && m.start >= table_start && m.end <= table_end) continue;
    if (m.start < arena.end() && m.end > arena.start()) {
      error << "the checkpoint scratch memory shares a mapping with the program; not checkpointing";
      ok = false;
      break;
    }
    StasisRegionRecord r = {};
    bool every_page = false;
    r.start = m.start;
    r.end = m.end;
    r.prot = m.prot;
    r.file_offset = m.offset;
    str_copy(r.path, m.path, sizeof r.path);
    if (m.path[0] == '[') {
      if (str_eq(m.path, "[vdso]")) {
        vdso->vdso_start = m.start, vdso->vdso_end = m.end;
        vdso->vdso_checksum = XXH3_64bits(reinterpret_cast<void*>(m.start), m.end - m.start);
        continue;
      }
      if (str_eq(m.path, "[vvar]")) { vdso->vvar_start = m.start, vdso->vvar_end = m.end; continue; }
      if (str_eq(m.path, "[vvar_vclock]")) {
        vdso->vvar_vclock_start = m.start, vdso->vvar_vclock_end = m.end;
        continue;
      }
      if (str_eq(m.path, "[heap]")) r.kind = STASIS_REGION_HEAP;
      else if (str_eq(m.path, "[stack]")) r.kind = STASIS_REGION_STACK;
      else if (str_starts(m.path, "[anon")) r.kind = STASIS_REGION_ANON;
      else continue;  // [vsyscall], [uprobes]: the kernel's
    } else if (m.path[0] == 0) {
      r.kind = m.shared ? STASIS_REGION_SHARED_ANON : STASIS_REGION_ANON;
    } else if (m.shared && str_starts(m.path, "/SYSV") && str_ends(m.path, " (deleted)")) {
      // The segment's contents are saved once, with the segment (plugins/ipc), however many
      // times it is attached; restart attaches it again. maps shows its id as the inode.
      r.kind = STASIS_REGION_SYSV_SHM;
      r.file_ino = m.inode;
    } else if (m.shared && unnamed_file(m) && descriptor_holding_file(m.dev, m.inode) >= 0) {
      // The file's contents are saved with that descriptor, and restart maps the file it
      // recreates there: writes through the mapping stay visible through the descriptor.
      r.kind = STASIS_REGION_FILE_SHARED;
      r.file_dev = m.dev;
      r.file_ino = m.inode;
    } else if (m.shared && unnamed_file(m) && !str_starts(m.path, "/SYSV") &&
               mapped_twice(maps, count, i)) {
      error << "memory at ";
      error.hex(m.start) << "-";
      error.hex(m.end) << " maps " << m.path << " shared, as other memory does, and no descriptor "
            << "of the program holds it; this version of Stasis cannot restore that sharing; "
            << "not checkpointing";
      ok = false;
      break;
    } else if (unnamed_file(m) || str_ends(m.path, ".stasis")) {
      // Its file is gone, never had a name, or is an image a restart mapped memory from (which
      // may be deleted before the next restart): the data must come from this image. Privately
      // mapped pages never touched are not "present" yet hold the file's data: save them all.
      r.kind = m.shared ? STASIS_REGION_SHARED_ANON : STASIS_REGION_ANON;
      every_page = !m.shared;
    } else {
      r.kind = m.shared ? STASIS_REGION_FILE_SHARED : STASIS_REGION_FILE_PRIVATE;
      fill_file_identity(r);
    }
    if (every_page) {
      r.saved_bytes = m.end - m.start;
    } else if (r.kind != STASIS_REGION_FILE_SHARED && r.kind != STASIS_REGION_SYSV_SHM) {
      uint64_t saved = 0;
      ok = scanner.runs(m.start, m.end, r.kind, [&](uint64_t, uint64_t len) {
        saved += len;
        return true;
      });
      r.saved_bytes = saved;
    }
    ok = ok && writer.add_record(STASIS_REC_REGION, r.start, &r, sizeof r);
    if (ok && r.saved_bytes) {
      bool unreadable = !(m.prot & PROT_READ);
      bool zero_filled_at_restart = r.kind != STASIS_REGION_FILE_PRIVATE;
      if (every_page)
        ok = writer.add_pages(m.start, m.end - m.start, unreadable, zero_filled_at_restart);
      else
        ok = scanner.runs(m.start, m.end, r.kind, [&](uint64_t start, uint64_t len) {
          return writer.add_pages(start, len, unreadable, zero_filled_at_restart);
        });
    }
    if (!ok && error.size() == 0) {
      error << "saving the region " ;
      error.hex(m.start) << "-";
      error.hex(m.end) << " failed: " << (writer.failure() ? writer.failure() : "pagemap read");
    }
  }
  scanner.close();
  return ok;
}

}  // namespace stasis::rt
