#include "restart/loader_feed.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "cli/progress.h"
#include "common/error.h"
#include "plugins/files/restore.h"

namespace stasis::restart {

using cli::human_bytes;
using cli::Progress;

namespace {

class PipeWriter {
 public:
  explicit PipeWriter(int fd) : fd_(fd) { buffer_.reserve(1 << 20); }
  void put(const void* data, size_t len) {
    const char* p = static_cast<const char*>(data);
    if (buffer_.size() + len > (1 << 20)) flush();
    if (len >= (1 << 19)) {
      flush();
      write_all(p, len);
      return;
    }
    buffer_.insert(buffer_.end(), p, p + len);
  }
  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

 private:
  void write_all(const char* p, size_t len) {
    while (len) {
      ssize_t n = ::write(fd_, p, len);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error("the restart loader stopped reading its feed");
      p += n;
      len -= static_cast<size_t>(n);
    }
  }
  int fd_;
  std::vector<char> buffer_;
};

// Each mapped chunk is a mapping of its own (two, with the rest of its region): well below the
// kernel's vm.max_map_count (65530 by default), whatever the image; the rest is copied. An
// increment's written pages cut the memory its parents hold into many pieces.
constexpr uint32_t kMaxMappedChunks = 16384;

// Whether [start, end) holds memory marked MADV_WIPEONFORK, which the kernel allows on anonymous
// memory only: a piece there is copied, never mapped from the image file.
bool wipes_on_fork(const std::vector<StasisMemoryMark>& marks, uint64_t start, uint64_t end) {
  for (const StasisMemoryMark& m : marks)
    if ((m.marks & STASIS_MARK_WIPEONFORK) && m.start < end && m.end > start) return true;
  return false;
}

bool can_map(const image::MemoryPiece& piece, int image_fd, uint32_t region_kind,
             const std::vector<StasisMemoryMark>& marks) {
  const image::PagesRef& pages = *piece.pages;
  return image_fd >= 0 && !wipes_on_fork(marks, piece.addr, piece.addr + piece.len) &&
         pages.compression == STASIS_COMPRESS_NONE &&
         pages.file_offset % 4096 == 0 && (piece.addr - pages.addr) % 4096 == 0 &&
         piece.len % 4096 == 0 && piece.len >= STASIS_MIN_MAPPED_CHUNK &&
         region_kind != STASIS_REGION_SHARED_ANON;  // a private mapping cannot stand in for it
}

// The bytes of a piece. A compressed payload is decoded once for all the pieces taken from it (the
// pieces of a region taken from an older image of a chain are often several parts of one record);
// an uncompressed one is read piece by piece when opening the image verified it, else whole,
// checking it as it is read.
class PagesCache {
 public:
  explicit PagesCache(bool payloads_verified) : payloads_verified_(payloads_verified) {}
  const char* bytes_at(const image::MemoryPiece& piece) {
    if (piece.pages->compression == STASIS_COMPRESS_NONE && payloads_verified_) {
      data_.resize(piece.len);
      piece.image->read_raw_pages(*piece.pages, piece.addr, piece.len, data_.data());
      cached_ = nullptr;
      return data_.data();
    }
    if (piece.pages != cached_) {
      data_.resize(piece.pages->raw_size);
      piece.image->read_pages(*piece.pages, data_.data(), scratch_);
      cached_ = piece.pages;
    }
    return data_.data() + (piece.addr - piece.pages->addr);
  }

 private:
  bool payloads_verified_;
  const image::PagesRef* cached_ = nullptr;
  std::vector<char> data_, scratch_;
};

}  // namespace

AncestorFds open_ancestors_for_loader(const std::vector<image::Image>& ancestors, int floor) {
  AncestorFds out{ancestors, {}};
  for (const auto& image : ancestors) {
    if (out.fds.size() == STASIS_MAX_ANCESTOR_FDS) {
      out.fds.push_back(-1);
      continue;
    }
    int fd = open(image.path().c_str(), O_RDONLY | O_CLOEXEC);
    int placed = fd < 0 ? -1 : fcntl(fd, F_DUPFD, std::max(floor + 2, 700));
    if (fd >= 0) close(fd);
    if (placed >= STASIS_PID_TABLE_FD) {  // clear of the pid table and the coordinator connection
      close(placed);
      placed = -1;
    }
    out.fds.push_back(placed);
  }
  return out;
}

void feed_loader(const image::Image& img, const AncestorFds& ancestors,
                 const std::map<uint64_t, int>& objects, const StasisRestartInfo& info,
                 const StasisVdsoProxy& vdso_plan, int image_fd, bool payloads_verified, int out) {
  PipeWriter pipe(out);
  const auto& proc = img.process();
  StasisLoaderPlan plan = {};
  plan.magic = STASIS_LOADER_PLAN_MAGIC;
  plan.region_count = static_cast<uint32_t>(img.regions().size());
  plan.mark_count = static_cast<uint32_t>(img.memory_marks().size());
  plan.thread_count = static_cast<uint32_t>(img.threads().size());
  plan.restore_mm = 1;
  plan.image_fd = image_fd;
  plan.vdso = proc.vdso;
  plan.vdso_proxy = vdso_plan;
  plan.mm = proc.mm;
  plan.restart_info_addr = proc.restart_info_addr;
  plan.restart_info = info;
  for (size_t i = 0; i < ancestors.fds.size() && i < STASIS_MAX_ANCESTOR_FDS; i++)
    plan.ancestor_image_fds[i] = std::max(ancestors.fds[i], 0);
  pipe.put(&plan, sizeof plan);
  for (const auto& t : img.threads()) {
    StasisLoaderThread lt = {};
    lt.tid = t.tid;
    lt.is_leader = t.is_leader;
    lt.context = t.context;
    lt.fs_base = t.fs_base;
    lt.clear_child_tid = t.clear_child_tid;
    lt.tcb_tid_addr = t.tcb_tid_addr;
    pipe.put(&lt, sizeof lt);
  }
  uint64_t previous_end = 0;
  uint64_t stack_limit = proc.rlimits[RLIMIT_STACK].cur;
  if (stack_limit == RLIM_INFINITY || stack_limit > (64ull << 20)) stack_limit = 8ull << 20;
  PagesCache cache(payloads_verified);
  uint32_t mapped_chunks = 0;
  Progress progress(fmt::format("stasis restart: process {}: memory", proc.original_pid));
  uint64_t copied_bytes = 0, mapped_bytes = 0;
  auto show_progress = [&] {
    progress.update(copied_bytes + mapped_bytes,
                    fmt::format("({} mapped from images)", human_bytes(static_cast<double>(mapped_bytes))));
  };
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    StasisLoaderRegion lr = {};
    lr.start = r.start;
    lr.end = r.end;
    // The main stack was a grow-down mapping; give the restored one room to grow the same way.
    if (r.kind == STASIS_REGION_STACK && r.end - r.start < stack_limit) {
      uint64_t low = r.end - stack_limit;
      lr.start = std::max<uint64_t>(low, previous_end + (1ull << 20));
      if (lr.start > r.start) lr.start = r.start;
    }
    lr.prot = r.prot;
    lr.kind = r.kind;
    lr.file_offset = r.file_offset;
    if (auto object = objects.find(r.start); object != objects.end()) {
      lr.kind = STASIS_REGION_FILE_SHARED;  // filled already, and shared with whoever else maps it
      lr.object_fd = object->second;
      pipe.put(&lr, sizeof lr);
      previous_end = r.end;
      continue;
    }
    if (r.kind == STASIS_REGION_SHARED_ELSEWHERE)
      throw Error(fmt::format("{}: shared memory at {:#x} has no recreated object", img.path(), r.start));
    std::vector<image::MemoryPiece> pieces = image::region_pieces(img, ancestors.images, region);
    lr.chunk_count = static_cast<uint32_t>(pieces.size());
    std::string mapped_path = restore::mapped_file_path(img, r);
    snprintf(lr.path, sizeof lr.path, "%s", mapped_path.c_str());
    pipe.put(&lr, sizeof lr);
    for (const auto& piece : pieces) {
      StasisLoaderChunk chunk = {piece.addr, piece.len, 0, 0, 0};
      int source_fd = ancestors.fd_of(piece.image, img);
      if (mapped_chunks < kMaxMappedChunks && can_map(piece, source_fd, r.kind, img.memory_marks())) {  // verified already
        mapped_chunks++;
        chunk.file_offset = piece.pages->file_offset + (piece.addr - piece.pages->addr);
        chunk.mapped = 1;
        chunk.image_fd = source_fd;
        pipe.put(&chunk, sizeof chunk);
        mapped_bytes += piece.len;
        continue;
      }
      pipe.put(&chunk, sizeof chunk);
      pipe.put(cache.bytes_at(piece), piece.len);
      copied_bytes += piece.len;
      show_progress();
    }
    previous_end = r.end;
  }
  // Before the end of the feed: the loader cannot resume the program (and its output) earlier.
  show_progress();
  progress.finish();
  for (const StasisMemoryMark& mark : img.memory_marks()) pipe.put(&mark, sizeof mark);
  uint64_t end = STASIS_LOADER_END_MAGIC;
  pipe.put(&end, sizeof end);
  pipe.flush();
}

}  // namespace stasis::restart
