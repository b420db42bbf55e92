// `stasis restart [PATH]`: verify a checkpoint, rebuild the process's descriptors, cwd, umask and
// limits in this process, then exec the restart loader (keeping this pid), which maps the memory
// that a feeder process streams to it and resumes the saved threads.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include <random>
#include <set>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cli/command.h"
#include "cli/coord_client.h"
#include "cli/restart_hosts.h"
#include "cli/restart_slurm.h"
#include "cli/progress.h"
#include "common/error.h"
#include "image/reader.h"
#include "plugins/files/restore.h"
#include "protocol/wire.h"
#include "plugins/memory/restore_memory.h"
#include "plugins/ipc/restore_ipc.h"
#include "plugins/process/timers.h"
#include "restart/loader_protocol.h"

namespace fs = std::filesystem;

namespace stasis::cli {
namespace {


struct Checkpoint {
  fs::path dir;
  uint64_t generation = 0;
  std::vector<fs::path> images;
  std::vector<std::string> hosts;  // of each image: the address it reached the coordinator from
};

bool is_generation_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit);
}

Checkpoint load_checkpoint(const fs::path& given) {
  fs::path dir = given;
  if (!fs::exists(dir)) throw Error(fmt::format("{} does not exist", given.string()));
  if (fs::is_regular_file(dir) && dir.extension() == ".stasis")
    throw Error(fmt::format("{} is an image; pass its checkpoint directory ({})", given.string(),
                            dir.parent_path().string()));
  if (!fs::exists(dir / "MANIFEST.json")) {
    fs::path newest;
    if (fs::exists(dir / "latest") && fs::exists(dir / "latest" / "MANIFEST.json")) {
      newest = fs::canonical(dir / "latest");
    } else {
      uint64_t best = 0;
      for (const auto& entry : fs::directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        if (!is_generation_name(name) || !fs::exists(entry.path() / "MANIFEST.json")) continue;
        if (std::stoull(name) >= best) best = std::stoull(name), newest = entry.path();
      }
    }
    if (newest.empty())
      throw Error(fmt::format("no complete checkpoint in {} (no generation directory has a MANIFEST.json)",
                              given.string()));
    dir = newest;
  }
  Checkpoint ckpt;
  ckpt.dir = fs::absolute(dir).lexically_normal();
  nlohmann::json manifest;
  try {
    std::ifstream in(dir / "MANIFEST.json");
    manifest = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}/MANIFEST.json is unreadable: {}", dir.string(), e.what()));
  }
  if (manifest.value("format", "") != "stasis-checkpoint" || !manifest.value("complete", false))
    throw Error(fmt::format("{}/MANIFEST.json does not describe a complete Stasis checkpoint", dir.string()));
  ckpt.generation = manifest.value("generation", 0ull);
  for (const auto& process : manifest.at("processes")) {
    ckpt.images.push_back(ckpt.dir / process.at("image").get<std::string>());
    std::string address = process.value("address", "");
    ckpt.hosts.push_back(address.empty() ? process.value("host", "") : address);
  }
  return ckpt;
}

uint64_t current_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

std::string xsave_feature_names(uint64_t bits) {
  static const char* const kNames[] = {"x87", "SSE", "AVX", "MPX-BNDREGS", "MPX-BNDCSR",
                                       "AVX-512-opmask", "AVX-512-ZMM_Hi256", "AVX-512-Hi16_ZMM",
                                       "PT", "PKRU", "PASID", "CET-U", "CET-S", "HDC", "UINTR",
                                       "LBR", "HWP", "AMX-TILECFG", "AMX-TILEDATA"};
  std::string out;
  for (int i = 0; i < 64; i++)
    if (bits & (1ull << i))
      out += (out.empty() ? "" : ", ") + std::string(i < 19 ? kNames[i] : fmt::format("bit {}", i));
  return out;
}

struct OwnVdso {
  uint64_t vvar = 0, vvar_vclock = 0, vdso = 0;  // sizes
  uint64_t vdso_checksum = 0;
};

OwnVdso own_vdso() {
  OwnVdso v;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0;
    if (sscanf(line.c_str(), "%lx-%lx", &start, &end) != 2) continue;
    if (line.ends_with("[vvar]")) v.vvar = end - start;
    if (line.ends_with("[vvar_vclock]")) v.vvar_vclock = end - start;
    if (line.ends_with("[vdso]")) {
      v.vdso = end - start;
      v.vdso_checksum = XXH3_64bits(reinterpret_cast<void*>(start), end - start);
    }
  }
  return v;
}

// Everything that would make the restart fail after this process has been replaced is checked
// here, while a clear message is still possible.
void check_restartable(const image::Image& img) {
  const auto& hdr = img.header();
  uint64_t missing = hdr.xcr0 & ~current_xcr0();
  if (missing)
    throw Error(fmt::format("{} needs CPU state this machine lacks ({}); restart it on a CPU with "
                            "these features", img.path(), xsave_feature_names(missing)));
  const auto& saved = img.process().vdso;
  OwnVdso own = own_vdso();
  if (saved.vdso_start && (saved.vdso_end - saved.vdso_start != own.vdso ||
                           saved.vvar_end - saved.vvar_start != own.vvar ||
                           saved.vvar_vclock_end - saved.vvar_vclock_start != own.vvar_vclock ||
                           saved.vdso_checksum != own.vdso_checksum))
    throw Error(fmt::format("{} was taken under a kernel with a different vdso; restart it on a "
                            "machine running the same kernel", img.path()));
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    if (r.start < STASIS_LOADER_LIMIT && r.end > STASIS_LOADER_BASE)
      throw Error(fmt::format("the program had memory at {:#x}-{:#x}, where the restart loader must "
                              "run; this image cannot be restarted by this build", r.start, r.end));
    if (r.kind != STASIS_REGION_FILE_PRIVATE && r.kind != STASIS_REGION_FILE_SHARED) continue;
    if (restore::saved_file_mapped_by(img, r)) continue;  // restart recreates it from the image
    struct stat st;
    if (stat(r.path, &st) != 0)
      throw Error(fmt::format("{} was mapped by the program and is gone; restore it to restart", r.path));
    int64_t mtime = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    if (r.kind == STASIS_REGION_FILE_PRIVATE &&
        (st.st_ino != r.file_ino || static_cast<uint64_t>(st.st_size) != r.file_size || mtime != r.file_mtime_ns))
      throw Error(fmt::format("{} changed since the checkpoint (the program mapped it); restart "
                              "would run mismatched code or data", r.path));
  }
  if (!fs::is_directory(img.process().cwd))
    throw Error(fmt::format("the program's working directory {} is gone", img.process().cwd));
  for (const auto& fd : img.fds()) restore::check_descriptor(img, fd);
}

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

// Runs in a grandchild of `stasis restart` (so the restarted program never sees it as a child).
// Uncompressed page-aligned payloads of at least STASIS_MIN_MAPPED_CHUNK bytes are mapped from
// the image instead of copied.

// The images an incremental image builds on, for mapping (parallel to them: a descriptor the
// loader inherits, or -1 where their pages must be copied).
struct AncestorFds {
  const std::vector<image::Image>& images;
  std::vector<int> fds;
  // 0: the plan's image_fd (the newest image); -1: not mappable.
  int fd_of(const image::Image* image, const image::Image& newest) const {
    if (image == &newest) return 0;
    for (size_t i = 0; i < images.size(); i++)
      if (&images[i] == image) return fds[i];
    return -1;
  }
};

// Opens the images without close-on-exec, for the loader, at numbers clear of every one the
// program uses (below `floor`), of the feed and image descriptors (the lowest free ones, so at
// most floor + 1) and of the numbers restart moves them through (from 600); an image whose
// number would be too high is copied instead.
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

// Each mapped chunk is a mapping of its own (two, with the rest of its region): well below the
// kernel's vm.max_map_count (65530 by default), whatever the image; the rest is copied. An
// increment's written pages cut the memory its parents hold into many pieces.
constexpr uint32_t kMaxMappedChunks = 16384;

bool can_map(const image::MemoryPiece& piece, int image_fd, uint32_t region_kind) {
  const image::PagesRef& pages = *piece.pages;
  return image_fd >= 0 && pages.compression == STASIS_COMPRESS_NONE &&
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

// `objects`: regions mapped from a shared memory object `stasis restart` made (start -> descriptor).
// `payloads_verified`: every payload was checked when the images were opened (else only what is
// copied is checked here; mapped memory is not: restart --lazy).
void feed_loader(const image::Image& img, const AncestorFds& ancestors,
                 const std::map<uint64_t, int>& objects, const StasisRestartInfo& info, int image_fd,
                 bool payloads_verified, int out) {
  PipeWriter pipe(out);
  const auto& proc = img.process();
  StasisLoaderPlan plan = {};
  plan.magic = STASIS_LOADER_PLAN_MAGIC;
  plan.region_count = static_cast<uint32_t>(img.regions().size());
  plan.thread_count = static_cast<uint32_t>(img.threads().size());
  plan.restore_mm = 1;
  plan.image_fd = image_fd;
  plan.vdso = proc.vdso;
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
      if (mapped_chunks < kMaxMappedChunks && can_map(piece, source_fd, r.kind)) {  // verified already
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
  uint64_t end = STASIS_LOADER_END_MAGIC;
  pipe.put(&end, sizeof end);
  pipe.flush();
}

int lowest_free_number(const std::set<int>& taken) {
  for (int n = 3;; n++)
    if (!taken.count(n) && n != STASIS_COORDINATOR_FD) return n;
}

// Moves `fd` to number `target` (which nothing else holds), without close-on-exec: the loader
// inherits it.
void place_descriptor(int fd, int target) {
  if (fd != target) {
    if (dup2(fd, target) < 0) throw Error(fmt::format("cannot place a restart descriptor at {}", target));
    close(fd);
  }
  fcntl(target, F_SETFD, 0);
}

// Closes every descriptor below `floor` that is not in `keep` (those at or above it are restart's
// own: shared descriptions and pipes made for the program, all close-on-exec).
void close_all_except(const std::set<int>& keep, int floor) {
  std::vector<int> open_fds;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(entry.path().filename().string());
    open_fds.push_back(fd);
  }
  for (int fd : open_fds)
    if (!keep.count(fd) && fd < floor) close(fd);
}

// --setenv's NAME=VALUE assignments as StasisRestartInfo carries them (a later one for the same
// name wins, as with env(1)).
void pack_setenv_entries(const std::vector<std::string>& assignments, char (&entries)[STASIS_MAX_SETENV_BYTES]) {
  auto name_of = [](const std::string& assignment) {
    size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0)
      throw Error(fmt::format("--setenv {}: expected NAME=VALUE", assignment));
    return assignment.substr(0, equals);
  };
  size_t used = 0;
  for (size_t i = 0; i < assignments.size(); i++) {
    const std::string& assignment = assignments[i];
    const std::string name = name_of(assignment);
    if (std::any_of(assignments.begin() + i + 1, assignments.end(), [&](const auto& later) { return name_of(later) == name; }))
      continue;
    if (used + assignment.size() + 2 > sizeof entries)
      throw Error(fmt::format("--setenv: the assignments exceed {} bytes in all", sizeof entries - 1));
    memcpy(entries + used, assignment.c_str(), assignment.size() + 1);
    used += assignment.size() + 1;
  }
  entries[used] = '\0';
}

// --ib's library: softib's (as `launch --ib=soft` uses it) or the file given.
std::string verbs_library_path(const std::string& choice) {
  if (choice == "soft") return (fs::path(softib_library_dir()) / "libibverbs.so.1").string();
  std::error_code error;
  if (!fs::is_regular_file(choice, error))
    throw Error(fmt::format("--ib {}: expected 'soft' or the path of a verbs library (libibverbs.so.1)", choice));
  return fs::absolute(choice).lexically_normal().string();
}

class RestartCommand : public Command {
 public:
  const char* name() const override { return "restart"; }
  const char* summary() const override {
    return "Restart a computation from a checkpoint (the newest complete one by default)";
  }
  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_, "Coordinator HOST:PORT (default $STASIS_COORD or 127.0.0.1:7781)");
    app.add_option("--hosts", hosts_text_,
                   "For a computation that ran on several hosts: OLD=NEW,... restarts the processes of "
                   "host OLD (as MANIFEST.json lists it) on host NEW; others on their own host");
    app.add_option("--rsh", rsh_, "How to run a command on another host (default $STASIS_RSH or ssh)");
    app.add_option("--part", part_vpid_, "(internal) restart only the part of the computation rooted at this process")
        ->group("");
    app.add_option("--restart-id", restart_id_, "(internal) names this restart's meetings")->group("");
    app.add_flag("--lazy", lazy_,
                 "Map uncompressed memory without reading it first: the program runs again at once "
                 "and pages load as it touches them, but their checksums are not verified "
                 "(memory that is copied still is)");
    app.add_option("--setenv", setenv_,
                   "NAME=VALUE: every restarted process finds this in its environment (which is otherwise "
                   "the checkpoint's) before its plugins re-create their resources; repeatable")
        ->type_name("NAME=VALUE")
        ->allow_extra_args(false);  // one assignment per --setenv: PATH follows
    app.add_option("--ib", ib_library_,
                   "Re-create InfiniBand verbs objects over another verbs library than the checkpoint's: "
                   "'soft' (softib, for a host without InfiniBand) or the path of a libibverbs.so.1 "
                   "(see docs/infiniband.md)")
        ->type_name("soft|PATH");
    app.add_option("path", path_,
                   "A checkpoint directory, or the checkpoint root (default $STASIS_CKPT_DIR or ./stasis-ckpt)");
  }
  int run() override {
    // The plugin reads it at its restart event, as any --setenv (remote parts get it so too).
    if (!ib_library_.empty()) setenv_.push_back("STASIS_IB_LIBRARY=" + verbs_library_path(ib_library_));
    pack_setenv_entries(setenv_, info_.setenv_entries);
    fs::path given = path_;
    if (given.empty()) given = getenv("STASIS_CKPT_DIR") ? getenv("STASIS_CKPT_DIR") : "stasis-ckpt";
    Checkpoint ckpt = load_checkpoint(given);
    ProgressSampler verifying("stasis restart: verifying images", image::payload_bytes_verified);
    // On several hosts only the images of this restart's part are verified (every part would
    // otherwise read every host's); the others' saved socket bytes are checked as they are read.
    several_hosts_ = part_vpid_ != 0 || std::any_of(ckpt.hosts.begin(), ckpt.hosts.end(),
                                                    [&](const auto& h) { return h != ckpt.hosts.front(); });
    for (const auto& path : ckpt.images) {
      images_.push_back(image::Image::open(path.string(), /*verify_payloads=*/!lazy_ && !several_hosts_));
      images_.back().load_fd_data();
    }
    plan_tree();
    split_into_parts(ckpt);
    for (const auto& img : images_) {
      if (several_hosts_ && !lazy_) image::Image::open(img.path(), /*verify_payloads=*/true);  // throws, naming the damage
      ancestors_.push_back(image::open_ancestors(img, /*verify_payloads=*/!lazy_));
    }
    restore::recreate_named_shm_files(images_);  // before the checks: regions find them by path
    for (const auto& img : images_) check_restartable(img);
    verifying.stop();  // its thread ends before this process forks the tree
    loader_ = restart_loader_path();
    plan_tree();

    CoordAddress addr = coord_address_from(coord_);
    CoordinatorOptions options;
    options.ckpt_dir = ckpt.dir.parent_path().string();
    std::string secret = expect_restart(addr, options);
    info_.generation = ckpt.generation;
    info_.test_clock_shift_ns = restore::test_clock_shift_ns_from_env();
    info_.restart_process_count = static_cast<uint32_t>(total_processes_);
    info_.coord_port = addr.port;
    snprintf(info_.coord_host, sizeof info_.coord_host, "%s", addr.host.c_str());
    snprintf(info_.secret_hex, sizeof info_.secret_hex, "%s", secret.c_str());

    floor_ = 3;  // above every descriptor number any restored process uses
    for (const auto& img : images_)
      for (const auto& f : img.fds()) floor_ = std::max(floor_, f.fd + 1);
    floor_ += 2;  // the loader's feed and image take the lowest numbers the program leaves free
    restore::set_descriptor_floor(floor_);
    create_pid_table();
    restore::create_ptys(images_);  // before any description that is an end of one
    restore::create_socket_pairs(images_);
    if (several_hosts_) start_other_parts(addr, ckpt);
    restore::CrossHostTcp cross{addr.str(), own_address_, old_address_, restart_id_, &others_};
    restore::create_tcp_sockets(images_, several_hosts_ ? &cross : nullptr);
    restore::create_datagram_sockets(images_, several_hosts_);
    create_shared_descriptions();
    shared_memory_ = restore::create_shared_memory(images_);
    sysv_segments_ = restore::recreate_host_segments(images_);  // once, shared by the processes
    // Tasks of a launcher outside the computation (srun) come back as this process's children.
    std::vector<size_t> tasks = several_hosts_ ? std::vector<size_t>{} : launcher_tasks(parent_, saved_ppids(), root_);
    auto is_task = [&](size_t i) { return std::find(tasks.begin(), tasks.end(), i) != tasks.end(); };
    // Other roots (processes whose parent had already ended: init adopted them) are adopted by
    // init again: started through a child that exits at once.
    for (size_t i = 0; i < images_.size(); i++) {
      if (parent_[i] >= 0 || (tasks.empty() ? i == root_ : is_task(i))) continue;
      pid_t middle = fork();
      if (middle < 0) throw Error("cannot fork a restarted process");
      if (middle == 0) {
        if (fork() == 0) become(i);
        _exit(0);
      }
      waitpid(middle, nullptr, 0);
    }
    if (!tasks.empty()) restart_launcher_tasks(tasks);  // never returns
    become(root_);  // never returns
  }

 private:
  // Parent/child relations by virtual pid; the launched process (the ancestor of the others)
  // stays this process, so a shell's job control still sees the pid it started.
  // A coordinator that exits when idle (the one a launch started, whose processes were just
  // killed) must stay for the processes this restart brings back; one exiting at this very
  // moment is replaced.
  std::string expect_restart(const CoordAddress& addr, const CoordinatorOptions& options) {
    StasisCommand expect{};
    expect.verb = STASIS_CMD_EXPECT_RESTART;
    for (int attempt = 0;; attempt++) {
      std::string secret = ensure_coordinator(addr, options);
      try {
        CoordConnection coordinator(addr);
        bool ok = false;
        coordinator.command(expect, ok);
        return secret;
      } catch (const Error&) {
        if (attempt == 1) throw;
      }
    }
  }

  // A computation that ran on several hosts comes back part by part (cli/restart_hosts.h): this
  // restart keeps only its own part's images (the others', in others_, tell it about the far
  // ends of connections), and notes the parts it must start.
  void split_into_parts(const Checkpoint& ckpt) {
    total_processes_ = images_.size();
    const std::vector<std::string>& old_hosts = ckpt.hosts;
    if (!several_hosts_) {
      if (!hosts_text_.empty()) throw Error(fmt::format("--hosts: this checkpoint ran on one host ({})", old_hosts.front()));
      return;
    }
    std::map<std::string, std::string> mapping = parse_host_mapping(hosts_text_);
    for (const auto& [from, to] : mapping)
      if (std::find(old_hosts.begin(), old_hosts.end(), from) == old_hosts.end())
        throw Error(fmt::format("--hosts: {} is not a host of this checkpoint (MANIFEST.json lists {})", from,
                                fmt::join(std::set<std::string>(old_hosts.begin(), old_hosts.end()), ", ")));
    auto new_host = [&](size_t i) {
      auto it = mapping.find(old_hosts[i]);
      return it == mapping.end() ? old_hosts[i] : it->second;
    };
    std::map<std::string, std::string> new_addresses;
    for (size_t i = 0; i < old_hosts.size(); i++) new_addresses[old_hosts[i]] = new_host(i);
    restore::note_new_host_addresses(new_addresses);
    std::vector<size_t> roots = part_roots(parent_, old_hosts);
    size_t mine = roots[root_];
    if (part_vpid_ != 0) {
      mine = images_.size();
      for (size_t i = 0; i < images_.size(); i++)
        if (images_[i].process().original_pid == part_vpid_ && roots[i] == i) mine = i;
      if (mine == images_.size())
        throw Error(fmt::format("--part {}: no part of this checkpoint starts at that process", part_vpid_));
    } else {
      std::random_device random;
      restart_id_ = fmt::format("{:08x}{:08x}", random(), random());
      for (size_t i = 0; i < images_.size(); i++)
        if (roots[i] == i && parent_[i] < 0 && i != mine)
          detached_parts_.push_back({0, images_[i].process().original_pid, new_host(i)});
      if (!is_local_address(new_host(mine))) root_elsewhere_ = {0, images_[mine].process().original_pid, new_host(mine)};
    }
    own_address_ = new_host(mine);
    old_address_ = old_hosts[mine];
    refuse_descriptors_across_parts(roots, mine, old_hosts);
    std::vector<image::Image> part, other;
    for (size_t i = 0; i < images_.size(); i++) {
      if (roots[i] != mine) {
        // A part whose root's parent is in this one: that parent starts it.
        if (roots[i] == i && parent_[i] >= 0 && roots[static_cast<size_t>(parent_[i])] == mine)
          remote_children_[images_[static_cast<size_t>(parent_[i])].process().original_pid].push_back(
              {other.size(), images_[i].process().original_pid, new_host(i)});
        other.push_back(std::move(images_[i]));
        continue;
      }
      for (const auto& outside : outside_streams_)
        if (outside.image == i) images_[i].treat_as_outside(outside.fd, outside.restart_fd);
      part.push_back(std::move(images_[i]));
    }
    images_ = std::move(part);
    others_ = std::move(other);
    // A process started on another host through a remote launcher took its standard streams as
    // outside ones; where they are pipes of this part, they become ends of those pipes again.
    std::map<std::pair<uint64_t, uint64_t>, StasisFdRecord> pipes_here;
    for (const auto& img : images_)
      for (const auto& f : img.fds())
        if (f.kind == STASIS_FD_PIPE || f.kind == STASIS_FD_FIFO) pipes_here.emplace(std::pair{f.dev, f.ino}, f);
    for (const auto& [parent, children] : remote_children_)
      for (const RemotePart& child : children)
        for (int stdio = 0; stdio <= 2; stdio++) {
          image::Image& img = others_[child.index];
          auto f = std::find_if(img.fds().begin(), img.fds().end(), [&](const auto& r) { return r.fd == stdio; });
          if (f == img.fds().end() || f->kind != STASIS_FD_EXTERNAL) continue;
          if (auto pipe = pipes_here.find({f->dev, f->ino}); pipe != pipes_here.end()) img.treat_as_end_of(stdio, pipe->second);
        }
    plan_tree();
  }

  // Only standard streams can join processes on two hosts (a remote launcher carries them): a
  // description this part shares with another must be a standard stream of the root of one of
  // them, whose parent is in the other. Anything else both hold is refused, naming it. What this
  // part's root has from its parent's part becomes what this restart has there (the remote
  // launcher's stream), for every process of the part that holds it.
  void refuse_descriptors_across_parts(const std::vector<size_t>& roots, size_t mine,
                                       const std::vector<std::string>& old_hosts) {
    auto key_of = [](const StasisFdRecord& f) {
      if (f.kind == STASIS_FD_PIPE || f.kind == STASIS_FD_FIFO) return fmt::format("pipe {}:{}", f.dev, f.ino);
      return fmt::format("description {}:{}", f.owner_pid, f.owner_fd);
    };
    auto crosses = [](const StasisFdRecord& f) {
      return f.kind != STASIS_FD_EXTERNAL && f.kind != STASIS_FD_TCP_CONNECTION && f.kind != STASIS_FD_TCP_LISTENER;
    };
    std::map<std::string, std::set<size_t>> parts_holding;      // key -> part roots
    std::map<std::pair<std::string, size_t>, int> root_stream;  // (key, part root) -> its number there
    for (size_t i = 0; i < images_.size(); i++)
      for (const auto& f : images_[i].fds())
        if (crosses(f)) {
          parts_holding[key_of(f)].insert(roots[i]);
          if (roots[i] == i && f.fd <= 2) root_stream.emplace(std::pair{key_of(f), i}, f.fd);
        }
    auto parent_part = [&](size_t part) { return parent_[part] < 0 ? images_.size() : roots[static_cast<size_t>(parent_[part])]; };
    for (size_t i = 0; i < images_.size(); i++) {
      if (roots[i] != mine) continue;
      for (const auto& f : images_[i].fds()) {
        if (!crosses(f)) continue;
        std::string key = key_of(f);
        for (size_t part : parts_holding[key]) {
          if (part == mine) continue;
          if (root_stream.count({key, part}) && parent_part(part) == mine) continue;  // it starts that part
          if (auto from = root_stream.find({key, mine}); from != root_stream.end() && parent_part(mine) == part) {
            outside_streams_.push_back({i, f.fd, from->second});
            continue;
          }
          throw Error(fmt::format("descriptor {} ({}) of process {} on {} is shared with process(es) on {}: "
                                  "only standard streams of a process started on another host can be",
                                  f.fd, f.path, images_[i].process().original_pid, old_hosts[i], old_hosts[part]));
        }
      }
    }
  }

  // The parts no restarted process starts, and this restart's own if it belongs elsewhere.
  void start_other_parts(const CoordAddress& addr, const Checkpoint& ckpt) {
    coord_for_parts_ = addr.str();
    ckpt_dir_ = ckpt.dir.string();
    for (const auto& part : detached_parts_) {
      pid_t middle = fork();
      if (middle < 0) throw Error("cannot fork to start a part of the restart");
      if (middle == 0) {
        if (fork() == 0) exec_part(part.vpid, part.host);
        _exit(0);
      }
      waitpid(middle, nullptr, 0);
    }
    if (root_elsewhere_.vpid) exec_part(root_elsewhere_.vpid, root_elsewhere_.host);
  }

  // Becomes `stasis restart --part VPID` on `host`: directly if it is this host, else through the
  // remote launcher (as ssh passes no environment, what the part needs is on its command line).
  [[noreturn]] void exec_part(uint32_t vpid, const std::string& host) {
    std::string self = fs::read_symlink("/proc/self/exe").string();
    std::vector<std::string> args = {self, "restart", "--part", std::to_string(vpid), "--restart-id", restart_id_,
                                     "--coord", coord_for_parts_};
    if (!hosts_text_.empty()) args.insert(args.end(), {"--hosts", hosts_text_});
    for (const auto& assignment : setenv_) args.insert(args.end(), {"--setenv", assignment});
    std::string rsh = !rsh_.empty() ? rsh_ : getenv("STASIS_RSH") ? getenv("STASIS_RSH") : "ssh";
    args.insert(args.end(), {"--rsh", rsh, ckpt_dir_});
    std::vector<std::string> words;
    if (is_local_address(host)) {
      words = args;
    } else {
      for (size_t at = 0; at < rsh.size();) {
        size_t space = rsh.find(' ', at);
        if (space == std::string::npos) space = rsh.size();
        if (space > at) words.push_back(rsh.substr(at, space - at));
        at = space + 1;
      }
      std::string command = "exec env";
      for (const char* name : {"STASIS_RUNTIME_DIR", "STASIS_IB"})
        if (getenv(name)) command += fmt::format(" {}={}", name, shell_quote(getenv(name)));
      for (const auto& arg : args) command += " " + shell_quote(arg);
      words.push_back(host);
      words.push_back(command);
    }
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fmt::print(stderr, "stasis restart: cannot run {} to restart process {} on {}: {}\n", words[0], vpid, host,
               std::strerror(errno));
    _exit(127);
  }

  void plan_tree() {
    std::map<uint32_t, size_t> by_vpid;
    for (size_t i = 0; i < images_.size(); i++) {
      uint32_t vpid = images_[i].process().original_pid;
      if (!by_vpid.emplace(vpid, i).second)
        throw Error(fmt::format("two images of this checkpoint are process {}", vpid));
    }
    parent_.assign(images_.size(), -1);
    children_.assign(images_.size(), {});
    for (size_t i = 0; i < images_.size(); i++) {
      auto it = by_vpid.find(images_[i].process().ppid);
      if (it != by_vpid.end() && it->second != i) {
        parent_[i] = static_cast<int>(it->second);
        children_[it->second].push_back(i);  // ascending virtual pids: group leaders first
      }
    }
    size_t best_size = 0;
    for (size_t i = 0; i < images_.size(); i++) {
      if (parent_[i] >= 0) continue;
      size_t size = subtree_size(i);
      if (size > best_size) best_size = size, root_ = i;
    }
  }

  size_t subtree_size(size_t i) const {
    size_t n = 1;
    for (size_t c : children_[i]) n += subtree_size(c);
    return n;
  }

  void create_pid_table() {
    int fd = memfd_create("stasis-pids", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, sizeof(StasisPidTable)) != 0)
      throw Error(fmt::format("cannot create the pid table: {}", std::strerror(errno)));
    void* addr = mmap(nullptr, sizeof(StasisPidTable), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) throw Error("cannot map the pid table");
    table_ = static_cast<StasisPidTable*>(addr);
    table_->magic = STASIS_PID_TABLE_MAGIC;
    std::memcpy(table_->coord_host, info_.coord_host, sizeof table_->coord_host);
    table_->coord_port = info_.coord_port;
    std::memcpy(table_->secret_hex, info_.secret_hex, sizeof table_->secret_hex);
    for (int std_fd = 0; std_fd <= 2; std_fd++) {
      struct stat st;
      if (fstat(std_fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
          table_->external_count < STASIS_PID_TABLE_MAX_EXTERNAL) {
        table_->external_fds[table_->external_count] = std_fd;
        table_->external_inodes[table_->external_count++] = stasis_external_file_key(st.st_dev, st.st_ino);
      }
    }
    if (dup2(fd, STASIS_PID_TABLE_FD) < 0) throw Error("cannot place the pid table");
    close(fd);
  }

  // Open file descriptions held by several processes (inherited across fork) and pipes whose ends
  // several processes hold are made here, before the tree is forked, so every process inherits
  // the same one.
  void create_shared_descriptions() {
    // The part's processes, and the standard streams of the parts they start on other hosts.
    std::vector<std::pair<const image::Image*, int>> holders_of;  // image, highest descriptor counted
    for (const auto& img : images_) holders_of.push_back({&img, INT32_MAX});
    for (const auto& [parent, children] : remote_children_)
      for (const auto& child : children) holders_of.push_back({&others_[child.index], 2});
    std::map<restore::DescriptionKey, std::set<size_t>> holders;
    std::map<std::pair<uint64_t, uint64_t>, std::set<size_t>> pipe_holders;
    for (size_t i = 0; i < holders_of.size(); i++)
      for (const auto& f : holders_of[i].first->fds()) {
        if (f.kind == STASIS_FD_EXTERNAL || f.fd > holders_of[i].second) continue;
        holders[{f.owner_pid, f.owner_fd}].insert(i);
        if (f.kind == STASIS_FD_PIPE || f.kind == STASIS_FD_FIFO) pipe_holders[{f.dev, f.ino}].insert(i);
      }
    // Every end with saved bytes refills the one pipe; any end creates it.
    for (const auto& [img, highest] : holders_of)
      for (const auto& f : img->fds())
        if ((f.kind == STASIS_FD_PIPE || f.kind == STASIS_FD_FIFO) && f.fd <= highest &&
            pipe_holders[{f.dev, f.ino}].size() > 1)
          restore::create_pipe(*img, f);
    for (const auto& [key, who] : holders) {
      if (who.size() < 2) continue;
      // The owner's own record when the owner is among them, else any holder's.
      const image::Image* from = holders_of[*who.begin()].first;
      for (size_t i : who)
        if (static_cast<int32_t>(holders_of[i].first->process().original_pid) == key.first) from = holders_of[i].first;
      for (const auto& f : from->fds())
        if (f.owner_pid == key.first && f.owner_fd == key.second && f.same_description_as < 0) {
          shared_[key] = restore::open_description(*from, f);
          break;
        }
    }
  }

  // Runs in the process that becomes image i: its session and group, its children and zombies,
  // then its own descriptors and memory.
  std::vector<pid_t> saved_ppids() const {
    std::vector<pid_t> ppids;
    for (const auto& img : images_) ppids.push_back(img.process().ppid);
    return ppids;
  }

  [[noreturn]] void restart_launcher_tasks(const std::vector<size_t>& tasks) {
    std::vector<pid_t> pids;
    for (size_t i : tasks) {
      pid_t child = fork();
      if (child < 0) throw Error("cannot fork a restarted process");
      if (child == 0) become(i);
      stasis_pid_table_map(table_, images_[i].process().original_pid, child);
      join_group(child, images_[i].process());
      pids.push_back(child);
    }
    stand_in_for_launcher(pids);
  }

  [[noreturn]] void become(size_t i) {
    const StasisProcessRecord& proc = images_[i].process();
    stasis_pid_table_map(table_, proc.original_pid, getpid());
    if (proc.sid == proc.original_pid) setsid();
    restore::take_controlling_terminal(proc);
    if (proc.pgid == proc.original_pid) setpgid(0, 0);
    for (size_t c : children_[i]) {
      pid_t child = fork();
      if (child < 0) throw Error("cannot fork a restarted process");
      if (child == 0) become(c);
      stasis_pid_table_map(table_, images_[c].process().original_pid, child);
      join_group(child, images_[c].process());
    }
    if (auto remote = remote_children_.find(proc.original_pid); remote != remote_children_.end())
      for (const RemotePart& part : remote->second) {
        const image::Image& img = others_[part.index];
        pid_t child = fork();
        if (child < 0) throw Error("cannot fork a restarted process");
        if (child == 0) {
          // Its standard streams travel through the remote launcher; what this restart has there
          // stands for the outside world.
          for (const auto& f : img.fds())
            if (f.fd <= 2 && f.kind != STASIS_FD_EXTERNAL) {
              auto it = shared_.find({f.owner_pid, f.owner_fd});
              int source = it != shared_.end() ? it->second : restore::open_description(img, f);
              if (source != f.fd) dup2(source, f.fd);
            }
          exec_part(part.vpid, part.host);
        }
        stasis_pid_table_map(table_, part.vpid, child);
        join_group(child, img.process());
      }
    for (uint32_t z = 0; z < proc.zombie_count && z < STASIS_MAX_ZOMBIES; z++) {
      const StasisZombie& zombie = proc.zombies[z];
      pid_t child = fork();
      if (child == 0) {
        if (WIFSIGNALED(zombie.wait_status)) {
          struct rlimit no_core = {0, 0};
          setrlimit(RLIMIT_CORE, &no_core);
          signal(WTERMSIG(zombie.wait_status), SIG_DFL);
          kill(getpid(), WTERMSIG(zombie.wait_status));
        }
        _exit(WEXITSTATUS(zombie.wait_status));
      }
      if (child > 0) stasis_pid_table_map(table_, zombie.vpid, child);
    }
    join_group(0, proc);
    restore::restore_foreground_group(proc);
    try {
      restore_process(images_[i], ancestors_[i]);
    } catch (const std::exception& e) {
      fmt::print(stderr, "stasis restart: process {}: {}\n", proc.original_pid, e.what());
      _exit(1);
    }
  }

  // Puts `pid` (0: this process) into its saved process group when that group's leader is part of
  // the computation (and so already exists).
  void join_group(pid_t pid, const StasisProcessRecord& proc) {
    if (proc.pgid == proc.original_pid || proc.sid == proc.original_pid) {
      // Not a session leader's: its setsid() would fail once it leads a group.
      if (pid && proc.sid != proc.original_pid) setpgid(pid, pid);
      return;
    }
    uint32_t leader = stasis_pid_table_lookup(table_->real_of_virtual, proc.pgid);
    if (leader) setpgid(pid, static_cast<pid_t>(leader));
  }

  [[noreturn]] void restore_process(const image::Image& img, const std::vector<image::Image>& ancestors) {
    StasisRestartInfo info = info_;
    for (const auto& f : img.fds()) {
      if (f.fd < 0 || f.fd >= 1024) continue;
      if (f.cloexec) info.cloexec_fds[f.fd / 64] |= 1ull << (f.fd % 64);
      if (f.kind == STASIS_FD_EXTERNAL) info.external_fds[f.fd / 64] |= 1ull << (f.fd % 64);
    }
    restore::recreate_sysv_objects(img, sysv_segments_, info);  // before the feeder: the loader needs their ids
    restore::connect_cross_host_tcp(img);
    restore::note_moved_socket_names(img, info);

    // Descriptor numbers the loader will find its feed and the image at: free in the program.
    std::set<int> saved;
    for (const auto& f : img.fds()) saved.insert(f.fd);
    const int feed_fd = lowest_free_number(saved);
    saved.insert(feed_fd);
    const int image_fd = lowest_free_number(saved);
    int image = open(img.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (image < 0) throw Error(fmt::format("cannot open {}: {}", img.path(), std::strerror(errno)));

    const std::map<uint64_t, int> objects = restore::pass_shared_memory(img, shared_memory_, floor_);
    const AncestorFds ancestor_fds = open_ancestors_for_loader(ancestors, floor_);
    int feed[2];
    if (pipe2(feed, O_CLOEXEC) != 0) throw Error("cannot create the restart pipe");
    fcntl(feed[0], F_SETPIPE_SZ, 1 << 20);
    pid_t child = fork();
    if (child < 0) throw Error("cannot fork the image feeder");
    if (child == 0) {
      if (fork() != 0) _exit(0);  // the grandchild feeds; init adopts it
      close(feed[0]);
      try {
        feed_loader(img, ancestor_fds, objects, info, image_fd, /*payloads_verified=*/!lazy_, feed[1]);
      } catch (const std::exception& e) {
        fmt::print(stderr, "stasis restart: {}\n", e.what());
        _exit(1);
      }
      _exit(0);
    }
    close(feed[1]);
    int status = 0;
    waitpid(child, &status, 0);

    // From here on this process becomes the restarted program.
    const StasisProcessRecord& proc = img.process();
    // Out of the way of every number they may have to move to, then into place.
    int feed_out_of_way = fcntl(feed[0], F_DUPFD, 600), image_out_of_way = fcntl(image, F_DUPFD, 600);
    if (feed_out_of_way < 0 || image_out_of_way < 0 || feed_out_of_way == image_fd ||
        image_out_of_way == feed_fd)
      throw Error("cannot set up the restart descriptors");
    std::set<int> keep = {0, 1, 2, feed_out_of_way, image_out_of_way, STASIS_PID_TABLE_FD};
    for (const auto& f : img.fds())
      if (f.kind == STASIS_FD_EXTERNAL) keep.insert(f.fd);
    close_all_except(keep, floor_);
    place_descriptor(feed_out_of_way, feed_fd);
    place_descriptor(image_out_of_way, image_fd);
    restore::place_descriptors(img, shared_);
    if (chdir(proc.cwd) != 0) throw Error(fmt::format("cannot enter {}", proc.cwd));
    umask(proc.umask);
    // The runtime's coordinator connection, made before the program's limits may forbid it.
    int coordinator_socket = stasis_tcp_socket_for(info_.coord_host);
    if (coordinator_socket < 0 || dup2(coordinator_socket, STASIS_COORDINATOR_FD) < 0)
      throw Error("cannot make the restarted process's coordinator descriptor");
    close(coordinator_socket);
    for (int r = 0; r < 16; r++) {
      struct rlimit lim = {proc.rlimits[r].cur, proc.rlimits[r].max};
      setrlimit(r, &lim);  // best effort: raising a hard limit needs privilege
    }
    fcntl(STASIS_PID_TABLE_FD, F_SETFD, 0);  // every process of the computation inherits it
    std::string fd_text = std::to_string(feed_fd);
    char* argv[] = {const_cast<char*>("stasis-loader"), fd_text.data(), nullptr};
    char* envp[] = {nullptr};
    execve(loader_.c_str(), argv, envp);
    throw Error(fmt::format("cannot execute the restart loader {}: {}", loader_, std::strerror(errno)));
  }


  std::vector<image::Image> images_;
  std::vector<std::vector<image::Image>> ancestors_;  // of each image: what an increment builds on
  std::vector<int> parent_;
  std::vector<std::vector<size_t>> children_;
  size_t root_ = 0;
  int floor_ = 3;
  std::string loader_;
  StasisRestartInfo info_ = {};
  StasisPidTable* table_ = nullptr;
  std::map<restore::DescriptionKey, int> shared_;
  std::map<restore::MemoryObjectKey, int> shared_memory_;  // memory several regions map
  restore::HostSegments sysv_segments_;                     // System V segments, made once
  std::string coord_, path_;
  std::vector<std::string> setenv_;  // --setenv NAME=VALUE
  std::string ib_library_;           // --ib soft|PATH
  bool lazy_ = false;  // --lazy
  // Restarts on several hosts (split_into_parts).
  struct RemotePart {
    size_t index = 0;  // in others_
    uint32_t vpid = 0;
    std::string host;
  };
  std::string hosts_text_, rsh_, restart_id_, own_address_, old_address_, coord_for_parts_, ckpt_dir_;
  uint32_t part_vpid_ = 0;
  bool several_hosts_ = false;
  size_t total_processes_ = 0;
  std::vector<image::Image> others_;                            // the other parts' processes
  std::map<uint32_t, std::vector<RemotePart>> remote_children_;  // by the parent's virtual pid
  std::vector<RemotePart> detached_parts_;                       // parts with no parent restarted
  RemotePart root_elsewhere_;                                    // this restart's part, on another host
  struct OutsideStream {
    size_t image;
    int fd, restart_fd;
  };
  std::vector<OutsideStream> outside_streams_;  // descriptors this restart's own streams stand for
};

}  // namespace

std::unique_ptr<Command> make_restart_command() { return std::make_unique<RestartCommand>(); }

}  // namespace stasis::cli
