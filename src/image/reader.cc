#include "image/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lz4.h>
#include <emmintrin.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>
#define XXH_INLINE_ALL

#include <fmt/format.h>

#include "common/error.h"
#include "image/framing.h"

namespace stasis::image {
namespace {

void pread_exact(int fd, void* buf, uint64_t len, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  while (len) {
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("{}: read failed at byte {}", path, offset));
    p += n;
    len -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

template <typename T>
T payload_as(const std::vector<char>& payload, const StasisRecordHeader& h, const std::string& path,
             const char* what) {
  if (h.stored_size != sizeof(T) || h.compression != STASIS_COMPRESS_NONE)
    throw Error(fmt::format("{} is corrupt: its {} record has {} bytes, expected {}", path, what,
                            h.stored_size, sizeof(T)));
  T value;
  std::memcpy(&value, payload.data(), sizeof(T));
  return value;
}

// The most bytes `stored` bytes of a payload can decompress to (what a reader may allocate for
// it): LZ4 expands at most 255 times; zstd at most 32768 times (a 4-byte RLE block for 128 KiB),
// plus its frame header. Anything claiming more is corrupt, whatever its checksum.
bool raw_size_possible(uint32_t compression, uint64_t stored, uint64_t raw) {
  switch (compression) {
    case STASIS_COMPRESS_NONE: return raw == stored;
    case STASIS_COMPRESS_LZ4: return raw <= 0x7E000000 && stored <= 0x7E000000 && raw <= stored * 255 + 255;
    case STASIS_COMPRESS_ZSTD: return stored <= (1ull << 46) && raw <= stored * 32768 + (1u << 17);
    case STASIS_COMPRESS_ZSTD_LANES:
      return raw % 8 == 0 && raw_size_possible(STASIS_COMPRESS_ZSTD, stored, raw);
  }
  return false;
}

// No process has a descriptor numbered higher (the kernel's fs.nr_open cannot exceed it).
constexpr int32_t kMaxDescriptor = 1 << 30;

// Fixed-size text fields of a record are read as C strings: end each within its array.
template <size_t N>
void terminate(char (&text)[N]) {
  text[N - 1] = 0;
}

}  // namespace

Image::Image(Image&& other) noexcept { *this = std::move(other); }
Image& Image::operator=(Image&& other) noexcept {
  std::swap(path_, other.path_);
  std::swap(pid_space_, other.pid_space_);
  std::swap(fd_, other.fd_);
  file_size_ = other.file_size_;
  header_ = other.header_;
  process_ = other.process_;
  threads_ = std::move(other.threads_);
  fds_ = std::move(other.fds_);
  regions_ = std::move(other.regions_);
  fd_data_ = std::move(other.fd_data_);
  fd_data_payloads_ = std::move(other.fd_data_payloads_);
  end_ = other.end_;
  vdso_text_ = std::move(other.vdso_text_);
  vdso_text_address_ = other.vdso_text_address_;
  memory_marks_ = std::move(other.memory_marks_);
  have_memory_marks_ = other.have_memory_marks_;
  cpu_state_ = other.cpu_state_;
  have_process_ = other.have_process_;
  parent_ = other.parent_;
  has_parent_ = other.has_parent_;
  return *this;
}
Image::~Image() {
  if (fd_ >= 0) ::close(fd_);
}

Image Image::open(const std::string& path, bool verify_payloads) {
  Image image;
  image.path_ = path;
  image.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (image.fd_ < 0)
    throw Error(fmt::format("cannot open the image {}: {}", path, std::strerror(errno)));
  struct stat st;
  if (fstat(image.fd_, &st) != 0)
    throw Error(fmt::format("cannot read the image {}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw Error(fmt::format("{} is not a Stasis image (not a regular file)", path));
  image.file_size_ = static_cast<uint64_t>(st.st_size);
  if (image.file_size_ < sizeof(StasisImageHeader))
    throw Error(fmt::format("{} is not a Stasis image (too short: {} bytes)", path, image.file_size_));
  StasisImageHeader& hdr = image.header_;
  pread_exact(image.fd_, &hdr, sizeof hdr, 0, path);
  if (std::memcmp(hdr.magic, STASIS_IMAGE_MAGIC, 8) != 0)
    throw Error(fmt::format("{} is not a Stasis image (no STASISIM signature)", path));
  if (hdr.format_version < STASIS_IMAGE_VERSION_WITHOUT_INDEX || hdr.format_version > STASIS_IMAGE_VERSION)
    throw Error(fmt::format("{} has image format version {}; this stasis reads versions {} to {}", path,
                            hdr.format_version, STASIS_IMAGE_VERSION_WITHOUT_INDEX, STASIS_IMAGE_VERSION));
  if (hdr.header_size != sizeof hdr || image_header_checksum(hdr) != hdr.header_checksum)
    throw Error(fmt::format("{} is corrupt: the image header checksum does not match", path));
  terminate(hdr.producer);
  terminate(hdr.arch);

  // Without the payloads, the records are read one by one, a payload apart: readahead would read
  // most of the file around them.
  if (!verify_payloads) posix_fadvise(image.fd_, 0, 0, POSIX_FADV_RANDOM);
  std::vector<StasisIndexEntry> index = image.read_index();
  if (index.empty()) {
    image.scan_records(verify_payloads);
  } else {
    image.load_from_index(index);
    if (verify_payloads) image.verify_in_parallel(index);
  }
  if (!verify_payloads) posix_fadvise(image.fd_, 0, 0, POSIX_FADV_NORMAL);
  if (!image.have_process_ || image.threads_.empty())
    throw Error(fmt::format("{} is corrupt: it has no process or thread records", path));
  if (image.threads_.size() > STASIS_MAX_THREADS)
    throw Error(fmt::format("{} is corrupt: it has {} thread records (at most {})", path, image.threads_.size(),
                            STASIS_MAX_THREADS));
  for (const StasisFdRecord& f : image.fds_)
    if (f.fd < 0 || f.fd > kMaxDescriptor)
      throw Error(fmt::format("{} is corrupt: it saves descriptor number {}", path, f.fd));
  for (const Region& region : image.regions_)
    if (region.inherited && !image.has_parent_)
      throw Error(fmt::format("{} is corrupt: it inherits memory but names no parent image", path));
  image.check_memory_marks();
  return image;
}

// Every marked range lies inside the saved regions (in order, page-aligned, known marks only):
// restart hands them to madvise, which must never touch memory the image does not restore.
void Image::check_memory_marks() const {
  std::vector<std::pair<uint64_t, uint64_t>> regions;
  for (const Region& region : regions_) regions.emplace_back(region.record.start, region.record.end);
  std::sort(regions.begin(), regions.end());
  uint64_t previous_end = 0;
  for (const StasisMemoryMark& m : memory_marks_) {
    auto corrupt = [&](const char* what) {
      return Error(fmt::format("{} is corrupt: the memory marks of {:#x}-{:#x} {}", path_, m.start, m.end, what));
    };
    if (m.start >= m.end || m.start % 4096 || m.end % 4096) throw corrupt("are not a page-aligned range");
    if (m.start < previous_end) throw corrupt("overlap or precede the range before them");
    if (m.marks == 0 || (m.marks & ~STASIS_MARKS_KNOWN) || m.reserved != 0)
      throw corrupt(fmt::format("hold unknown bits ({:#x})", m.marks).c_str());
    previous_end = m.end;
    // Covered by regions end to end (adjacent regions may share the range).
    uint64_t at = m.start;
    auto it = std::upper_bound(regions.begin(), regions.end(), std::make_pair(at, ~uint64_t{0}));
    if (it != regions.begin()) --it;
    for (; it != regions.end() && at < m.end; ++it)
      if (it->first <= at && it->second > at) at = it->second;
    if (at < m.end) throw corrupt("lie outside the saved memory");
  }
}

namespace {

// PAGES and FD_DATA payloads are the bulk of an image, and PAD records (one before each mappable
// PAGES payload) carry nothing: their payloads are read only to verify them. Every other record
// is small and is read (and checked) whenever the image is opened.
bool is_bulk(uint32_t type) {
  return type == STASIS_REC_PAGES || type == STASIS_REC_FD_DATA || type == STASIS_REC_PAD;
}

std::atomic<uint64_t> g_payload_bytes_verified{0};

bool header_sound(const StasisRecordHeader& h) { return record_header_sound(h); }

const char* record_kind(uint32_t type) {
  return type == STASIS_REC_PAGES ? "memory pages" : type == STASIS_REC_FD_DATA ? "descriptor data" : "metadata";
}

}  // namespace

uint64_t payload_bytes_verified() { return g_payload_bytes_verified.load(std::memory_order_relaxed); }

StasisEndRecord Image::parse_end(const std::vector<char>& payload, const StasisRecordHeader& h) const {
  StasisEndRecord end = {};
  uint64_t expected = header_.format_version == STASIS_IMAGE_VERSION_WITHOUT_INDEX ? STASIS_END_RECORD_SIZE_V2
                                                                                  : sizeof end;
  if (h.stored_size != expected || h.compression != STASIS_COMPRESS_NONE)
    throw Error(fmt::format("{} is corrupt: its END record has {} bytes, expected {}", path_, h.stored_size,
                            expected));
  std::memcpy(&end, payload.data(), expected);
  return end;
}

// The index at the end of a version 3 image, checked against the END record (which covers every
// header with its chained checksum) and against itself (each record starts where the one before
// it ends). Empty when there is none to use: a version 2 image, or a file that does not end with
// a sound END record (scan_records then says precisely what is wrong with it).
std::vector<StasisIndexEntry> Image::read_index() {
  constexpr uint64_t kEndBytes = sizeof(StasisRecordHeader) + sizeof(StasisEndRecord);
  if (header_.format_version == STASIS_IMAGE_VERSION_WITHOUT_INDEX ||
      file_size_ < sizeof(StasisImageHeader) + sizeof(StasisRecordHeader) + kEndBytes)
    return {};
  const uint64_t end_at = file_size_ - kEndBytes;
  StasisRecordHeader h;
  std::vector<char> payload(sizeof(StasisEndRecord));
  pread_exact(fd_, &h, sizeof h, end_at, path_);
  pread_exact(fd_, payload.data(), payload.size(), end_at + sizeof h, path_);
  if (h.type != STASIS_REC_END || !header_sound(h) || h.stored_size != sizeof(StasisEndRecord) ||
      !payload_sound(h, payload.data()))
    return {};
  StasisEndRecord end = parse_end(payload, h);
  if (end.index_offset == 0) return {};  // written without one
  auto corrupt = [&](const std::string& what) {
    return Error(fmt::format("{} is corrupt: its record index at byte {} {}", path_, end.index_offset, what));
  };
  if (end.index_offset < sizeof(StasisImageHeader) || end.index_offset > end_at - sizeof h)
    throw corrupt("lies outside the file");
  std::vector<char> tail(end_at - end.index_offset);
  pread_exact(fd_, tail.data(), tail.size(), end.index_offset, path_);
  StasisRecordHeader index_header;
  std::memcpy(&index_header, tail.data(), sizeof index_header);
  if (!header_sound(index_header) || index_header.type != STASIS_REC_INDEX ||
      sizeof index_header + index_header.stored_size != tail.size() ||
      index_header.stored_size % sizeof(StasisIndexEntry) != 0)
    throw corrupt("has a bad header");
  if (!payload_sound(index_header, tail.data() + sizeof index_header))
    throw corrupt("does not match its checksum");
  std::vector<StasisIndexEntry> index(index_header.stored_size / sizeof(StasisIndexEntry));
  std::memcpy(index.data(), tail.data() + sizeof index_header, index_header.stored_size);
  uint64_t chain = 0, expected_offset = sizeof(StasisImageHeader);
  for (const StasisIndexEntry& entry : index) {
    const StasisRecordHeader& r = entry.header;
    // Each record ends before the index: no size can wrap around or reach past it.
    if (entry.offset != expected_offset || r.type == STASIS_REC_END || r.type == STASIS_REC_INDEX ||
        !header_sound(r) || end.index_offset - entry.offset < sizeof r ||
        r.stored_size > end.index_offset - entry.offset - sizeof r)
      throw corrupt(fmt::format("lists a record at byte {} that cannot be there", entry.offset));
    expected_offset = entry.offset + sizeof r + r.stored_size;
    chain = chain_record_header(chain, r);
  }
  chain = chain_record_header(chain, index_header);
  if (expected_offset != end.index_offset || end.record_count != index.size() + 1 || end.headers_checksum != chain)
    throw corrupt("does not match the END record");
  end_ = end;
  return index;
}

void Image::load_from_index(const std::vector<StasisIndexEntry>& index) {
  std::vector<char> payload;
  for (size_t i = 0; i < index.size(); i++) {
    const StasisRecordHeader& h = index[i].header;
    if (!is_bulk(h.type)) {
      payload.resize(h.stored_size);
      pread_exact(fd_, payload.data(), h.stored_size, index[i].offset + sizeof h, path_);
      if (!payload_sound(h, payload.data()))
        throw Error(fmt::format("{} is corrupt: checksum mismatch in record {} (metadata) at byte {}", path_, i,
                                index[i].offset));
    }
    take_record(h, index[i].offset, payload);
  }
}

// Several threads read the file at once (one sequential stream leaves this kind of disk idle
// half the time), each a contiguous part of it through one read-only mapping (hashed where it
// lies in the page cache, never copied). Every bulk payload is checked, and every record header
// in the file against the index's copy, so a verified image is sound in every byte.
void Image::verify_in_parallel(const std::vector<StasisIndexEntry>& index) const {
  void* mapped = mmap(nullptr, file_size_, PROT_READ, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED)
    throw Error(fmt::format("{}: cannot map it to verify it: {}", path_, std::strerror(errno)));
  // Each part is read front to back: the kernel reads ahead while its thread hashes.
  madvise(mapped, file_size_, MADV_SEQUENTIAL);
  const char* file = static_cast<const char*>(mapped);
  constexpr uint64_t kBytesPerThread = 64ull << 20;
  const size_t threads = std::clamp<uint64_t>(file_size_ / kBytesPerThread, 1, 4);
  // The first record each thread finds damaged (index.size(): none), and whether its header or
  // its payload is.
  struct Damage {
    size_t record;
    bool in_header = false;
  };
  std::vector<Damage> damage(threads, Damage{index.size()});
  auto verify_part = [&](size_t part) {
    uint64_t from = file_size_ / threads * part;
    uint64_t to = part + 1 == threads ? file_size_ : from + file_size_ / threads;
    auto first = std::lower_bound(index.begin(), index.end(), from,
                                  [](const StasisIndexEntry& e, uint64_t at) { return e.offset < at; });
    for (auto e = first; e != index.end() && e->offset < to; ++e) {
      const StasisRecordHeader& h = e->header;
      bool header_ok = std::memcmp(file + e->offset, &h, sizeof h) == 0;
      bool payload_ok = !is_bulk(h.type) || payload_sound(h, file + e->offset + sizeof h);
      if (!header_ok || !payload_ok) {
        damage[part] = {static_cast<size_t>(e - index.begin()), !header_ok};
        return;
      }
      if (is_bulk(h.type)) g_payload_bytes_verified.fetch_add(h.stored_size, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t part = 1; part < threads; part++) helpers.emplace_back(verify_part, part);
  verify_part(0);
  for (auto& helper : helpers) helper.join();
  munmap(mapped, file_size_);
  for (const Damage& found : damage) {
    size_t i = found.record;
    if (i == index.size()) continue;
    if (found.in_header)
      throw Error(fmt::format("{} is corrupt: record {} at byte {} differs from its copy in the record index",
                              path_, i, index[i].offset));
    throw Error(fmt::format("{} is corrupt: checksum mismatch in record {} ({}) at byte {}", path_, i,
                            record_kind(index[i].header.type), index[i].offset));
  }
}

// Reads the records one after the other, from the first: images without an index, and damaged
// ones (a missing or broken END record is found and named here).
void Image::scan_records(bool verify_payloads) {
  uint64_t offset = sizeof(StasisImageHeader), records = 0, chain = 0;
  bool have_end = false;
  std::vector<char> payload;
  while (offset < file_size_) {
    if (offset + sizeof(StasisRecordHeader) > file_size_) break;
    StasisRecordHeader h;
    pread_exact(fd_, &h, sizeof h, offset, path_);
    if (!header_sound(h))
      throw Error(fmt::format("{} is corrupt: record {} at byte {} has a bad header checksum", path_,
                              records, offset));
    uint64_t payload_offset = offset + sizeof h;
    if (h.stored_size > file_size_ - payload_offset) break;  // truncated
    if (!is_bulk(h.type) || verify_payloads) {
      if (payload.size() < h.stored_size) payload.resize(h.stored_size);  // never shrinks: no refills
      pread_exact(fd_, payload.data(), h.stored_size, payload_offset, path_);
      if (!payload_sound(h, payload.data()))
        throw Error(fmt::format("{} is corrupt: checksum mismatch in record {} ({}) at byte {}", path_,
                                records, record_kind(h.type),
                                offset));
      if (is_bulk(h.type)) g_payload_bytes_verified.fetch_add(h.stored_size, std::memory_order_relaxed);
    }
    if (h.type == STASIS_REC_END) {
      end_ = parse_end(payload, h);
      if (end_.record_count != records || end_.headers_checksum != chain)
        throw Error(fmt::format("{} is corrupt: its END record does not match the {} records before it",
                                path_, records));
      have_end = true;
      offset = payload_offset + h.stored_size;
      break;
    }
    if (h.type != STASIS_REC_INDEX) take_record(h, offset, payload);  // checked above; read_index() uses it
    chain = chain_record_header(chain, h);
    records++;
    offset = payload_offset + h.stored_size;
  }
  if (!have_end)
    throw Error(fmt::format("{} is truncated: it ends at byte {} without its END record (the checkpoint "
                            "that wrote it did not complete)",
                            path_, file_size_));
  if (offset != file_size_)
    throw Error(fmt::format("{} is corrupt: {} unexpected bytes after the END record", path_,
                            file_size_ - offset));
}

// One record other than END and INDEX; `payload` holds its checked payload unless it is bulk.
void Image::take_record(const StasisRecordHeader& h, uint64_t offset, const std::vector<char>& payload) {
  const std::string& path = path_;
  const uint64_t payload_offset = offset + sizeof h;
  switch (h.type) {
    case STASIS_REC_PROCESS:
      process_ = payload_as<StasisProcessRecord>(payload, h, path, "PROCESS");
      terminate(process_.comm), terminate(process_.hostname), terminate(process_.cwd), terminate(process_.exe);
      if (process_.zombie_count > STASIS_MAX_ZOMBIES || process_.queued_count > STASIS_MAX_QUEUED_SHARED ||
          process_.posix_timer_count > STASIS_MAX_POSIX_TIMERS)
        throw Error(fmt::format("{} is corrupt: its PROCESS record counts {} zombies, {} queued signals and {} "
                                "timers (at most {}, {} and {})",
                                path, process_.zombie_count, process_.queued_count, process_.posix_timer_count,
                                STASIS_MAX_ZOMBIES, STASIS_MAX_QUEUED_SHARED, STASIS_MAX_POSIX_TIMERS));
      have_process_ = true;
      break;
    case STASIS_REC_THREAD:
      threads_.push_back(payload_as<StasisThreadRecord>(payload, h, path, "THREAD"));
      terminate(threads_.back().name);
      break;
    case STASIS_REC_FD:
      fds_.push_back(payload_as<StasisFdRecord>(payload, h, path, "FD"));
      terminate(fds_.back().path);
      break;
    case STASIS_REC_PAD:
      break;
    case STASIS_REC_PARENT:
      parent_ = payload_as<StasisParentRecord>(payload, h, path, "PARENT");
      parent_.parent_image[sizeof parent_.parent_image - 1] = 0;
      has_parent_ = true;
      break;
    case STASIS_REC_INHERIT: {
      if (regions_.empty() || regions_.back().record.start != h.arg ||
          h.stored_size % sizeof(StasisPageRun) != 0 || h.compression != STASIS_COMPRESS_NONE)
        throw Error(fmt::format("{} is corrupt: the inherited-pages record at byte {} matches no region",
                                path, offset));
      Region& region = regions_.back();
      region.inherited = true;
      size_t at = region.holes.size();
      region.holes.resize(at + h.stored_size / sizeof(StasisPageRun));
      if (h.stored_size) std::memcpy(&region.holes[at], payload.data(), h.stored_size);
      for (size_t i = at; i < region.holes.size(); i++) {
        const StasisPageRun& hole = region.holes[i];
        if (hole.start < region.record.start || hole.start > region.record.end ||
            hole.len > region.record.end - hole.start)
          throw Error(fmt::format("{} is corrupt: a hole at {:#x} of the inherited-pages record at byte {} lies "
                                  "outside its region",
                                  path, hole.start, offset));
      }
      break;
    }
    case STASIS_REC_FD_DATA: {
      StasisFdDataHeader dh;
      if (h.stored_size < sizeof dh || h.raw_size < sizeof dh)
        throw Error(fmt::format("{} is corrupt: descriptor data record at byte {} is too short", path, offset));
      if (!raw_size_possible(h.compression, h.stored_size - sizeof dh, h.raw_size - sizeof dh))
        throw Error(fmt::format("{} is corrupt: descriptor data record at byte {} claims {} bytes from {} stored "
                                "({} compression)",
                                path, offset, h.raw_size - sizeof dh, h.stored_size - sizeof dh, h.compression));
      pread_exact(fd_, &dh, sizeof dh, payload_offset, path);
      if (dh.offset > UINT64_MAX - h.raw_size)
        throw Error(fmt::format("{} is corrupt: descriptor data record at byte {} has offset {}", path, offset,
                                dh.offset));
      FdDataRef ref;
      ref.fd = dh.fd;
      ref.tag = dh.tag;
      ref.offset = dh.offset;
      ref.raw_size = h.raw_size - sizeof dh;
      ref.stored_size = h.stored_size - sizeof dh;
      ref.file_offset = payload_offset + sizeof dh;
      ref.compression = h.compression;
      ref.checksum = h.payload_checksum;
      ref.payload_offset = payload_offset;
      fd_data_.push_back(ref);
      break;
    }
    case STASIS_REC_VDSO:
      if (h.stored_size != h.raw_size || h.raw_size == 0 || h.raw_size > STASIS_MAX_VDSO_TEXT ||
          h.compression != STASIS_COMPRESS_NONE || !vdso_text_.empty())
        throw Error(fmt::format("{} is corrupt: the vdso record at byte {} has an impossible size "
                                "({} bytes) or is not the only one", path, offset, h.raw_size));
      vdso_text_.assign(payload.begin(), payload.begin() + static_cast<long>(h.raw_size));
      vdso_text_address_ = h.arg;
      break;
    case STASIS_REC_REGION: {
      Region region;
      region.record = payload_as<StasisRegionRecord>(payload, h, path, "REGION");
      region.record.path[sizeof region.record.path - 1] = 0;
      if (region.record.end <= region.record.start)
        throw Error(fmt::format("{} is corrupt: the region record at byte {} ends ({:#x}) before it starts ({:#x})",
                                path, offset, region.record.end, region.record.start));
      regions_.push_back(region);
      break;
    }
    case STASIS_REC_CPU_STATE:
      if (header_.format_version <= STASIS_IMAGE_VERSION_WITHOUT_CPU_STATE || cpu_state_)
        throw Error(fmt::format("{} is corrupt: the CPU state record at byte {} is not the only one, "
                                "or is in a version {} image", path, offset, header_.format_version));
      cpu_state_ = payload_as<StasisCpuStateRecord>(payload, h, path, "CPU_STATE");
      break;
    case STASIS_REC_MEMORY_MARKS:
      if (header_.format_version <= STASIS_IMAGE_VERSION_WITHOUT_MARKS || have_memory_marks_ ||
          h.stored_size != h.raw_size || h.compression != STASIS_COMPRESS_NONE || h.raw_size == 0 ||
          h.raw_size % sizeof(StasisMemoryMark) != 0)
        throw Error(fmt::format("{} is corrupt: the memory marks record at byte {} has an impossible size ({} "
                                "bytes), is not the only one, or is in a version {} image",
                                path, offset, h.raw_size, header_.format_version));
      memory_marks_.resize(h.raw_size / sizeof(StasisMemoryMark));
      std::memcpy(memory_marks_.data(), payload.data(), h.raw_size);
      have_memory_marks_ = true;
      break;
    case STASIS_REC_PAGES: {
      if (regions_.empty())
        throw Error(fmt::format("{} is corrupt: memory pages before any region", path));
      Region& region = regions_.back();
      if (h.arg < region.record.start || h.arg > region.record.end || h.raw_size > region.record.end - h.arg)
        throw Error(fmt::format("{} is corrupt: memory pages at {:#x} lie outside their region", path,
                                h.arg));
      if (!raw_size_possible(h.compression, h.stored_size, h.raw_size))
        throw Error(fmt::format("{} is corrupt: memory pages at {:#x} claim {} bytes from {} stored ({} "
                                "compression)",
                                path, h.arg, h.raw_size, h.stored_size, h.compression));
      region.pages.push_back({h.arg, h.raw_size, h.stored_size, payload_offset, h.compression,
                              h.payload_checksum});
      break;
    }
    default:
      throw Error(fmt::format("{} is corrupt: unknown record type {} at byte {}", path, h.type, offset));
  }
}

namespace {
// Undoes STASIS_COMPRESS_ZSTD_LANES' regrouping: byte k of word i is at lanes[k * words + i].
// Eight words at a time as an 8x8 byte transpose in SSE2 registers (restart decompresses lanes
// at the speed of plain zstd only so), the rest one by one.
void gather_lanes(const char* lanes, uint64_t n, char* out) {
  const uint64_t words = n / 8;
  uint64_t i = 0;
  for (; i + 8 <= words; i += 8) {
    __m128i l[8];
    for (uint64_t lane = 0; lane < 8; lane++)
      l[lane] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(lanes + lane * words + i));
    const __m128i t0 = _mm_unpacklo_epi8(l[0], l[1]), t1 = _mm_unpacklo_epi8(l[2], l[3]);
    const __m128i t2 = _mm_unpacklo_epi8(l[4], l[5]), t3 = _mm_unpacklo_epi8(l[6], l[7]);
    const __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
    const __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
    __m128i* to = reinterpret_cast<__m128i*>(out + 8 * i);
    _mm_storeu_si128(to, _mm_unpacklo_epi32(u0, u2));      // words i, i+1
    _mm_storeu_si128(to + 1, _mm_unpackhi_epi32(u0, u2));  // i+2, i+3
    _mm_storeu_si128(to + 2, _mm_unpacklo_epi32(u1, u3));  // i+4, i+5
    _mm_storeu_si128(to + 3, _mm_unpackhi_epi32(u1, u3));  // i+6, i+7
  }
  for (; i < words; i++) {
    uint64_t w = 0;
    for (uint64_t lane = 0; lane < 8; lane++)
      w |= static_cast<uint64_t>(static_cast<unsigned char>(lanes[lane * words + i])) << (8 * lane);
    std::memcpy(out + 8 * i, &w, 8);
  }
}
}  // namespace

void Image::read_pages(const PagesRef& pages, void* out, std::vector<char>& scratch) const {
  const bool lanes = pages.compression == STASIS_COMPRESS_ZSTD_LANES &&
                     header_.format_version > STASIS_IMAGE_VERSION_WITHOUT_LANES;
  // Lanes are decompressed behind the stored bytes, in the caller's scratch (reused, not zeroed).
  scratch.resize(pages.stored_size + (lanes ? pages.raw_size : 0));
  pread_exact(fd_, scratch.data(), pages.stored_size, pages.file_offset, path_);
  if (XXH3_64bits(scratch.data(), pages.stored_size) != pages.checksum)
    throw Error(fmt::format("{} is corrupt: checksum mismatch in the memory pages at {:#x}", path_,
                            pages.addr));
  if (pages.compression == STASIS_COMPRESS_NONE) {
    if (pages.stored_size != pages.raw_size)
      throw Error(fmt::format("{} is corrupt: pages at {:#x} have inconsistent sizes", path_, pages.addr));
    std::memcpy(out, scratch.data(), pages.raw_size);
    return;
  }
  if (pages.compression == STASIS_COMPRESS_LZ4) {
    int n = LZ4_decompress_safe(scratch.data(), static_cast<char*>(out),
                                static_cast<int>(pages.stored_size), static_cast<int>(pages.raw_size));
    if (n < 0 || static_cast<uint64_t>(n) != pages.raw_size)
      throw Error(fmt::format("{} is corrupt: the memory pages at {:#x} do not decompress", path_, pages.addr));
    return;
  }
  if (pages.compression != STASIS_COMPRESS_ZSTD && !lanes)
    throw Error(fmt::format("{} is corrupt: unknown compression {} at {:#x}", path_, pages.compression,
                            pages.addr));
  char* in_lanes = scratch.data() + pages.stored_size;
  size_t n = ZSTD_decompress(lanes ? in_lanes : out, pages.raw_size, scratch.data(), pages.stored_size);
  if (ZSTD_isError(n) || n != pages.raw_size)
    throw Error(fmt::format("{} is corrupt: the memory pages at {:#x} do not decompress", path_, pages.addr));
  if (lanes) gather_lanes(in_lanes, pages.raw_size, static_cast<char*>(out));
}

void Image::read_raw_pages(const PagesRef& pages, uint64_t addr, uint64_t len, void* out) const {
  if (pages.compression != STASIS_COMPRESS_NONE || addr < pages.addr || addr + len > pages.addr + pages.raw_size)
    throw Error(fmt::format("{}: no uncompressed pages at {:#x}", path_, addr));
  pread_exact(fd_, out, len, pages.file_offset + (addr - pages.addr), path_);
}

bool Image::has_fd_data(int fd, uint32_t tag) const {
  for (const auto& ref : fd_data_)
    if (ref.fd == fd && ref.tag == tag) return true;
  return false;
}

void Image::load_fd_data() {
  fd_data_payloads_.resize(fd_data_.size());
  for (size_t i = 0; i < fd_data_.size(); i++) {
    fd_data_payloads_[i].resize(fd_data_[i].stored_size + sizeof(StasisFdDataHeader));
    pread_exact(fd_, fd_data_payloads_[i].data(), fd_data_payloads_[i].size(),
                fd_data_[i].payload_offset, path_);
  }
}

std::vector<char> Image::fd_data(int fd, uint32_t tag) const { return joined_fd_data(fd, tag, std::nullopt); }

std::vector<char> Image::fd_data_with_holes(int fd, uint32_t tag, uint64_t size) const {
  std::vector<char> out = joined_fd_data(fd, tag, size);
  out.resize(size);
  return out;
}

std::vector<char> Image::joined_fd_data(int fd, uint32_t tag, std::optional<uint64_t> holes_within) const {
  std::vector<char> out, payload;
  for (size_t i = 0; i < fd_data_.size(); i++) {
    const FdDataRef& ref = fd_data_[i];
    if (ref.fd != fd || ref.tag != tag) continue;
    // Records follow each other; with holes (a file's extents), a record may start further on,
    // and none ends past the file's size.
    const bool in_order = holes_within ? ref.offset >= out.size() && ref.offset <= *holes_within &&
                                             ref.raw_size <= *holes_within - ref.offset
                                       : ref.offset == out.size();
    if (!in_order)
      throw Error(fmt::format("{} is corrupt: data of descriptor {} is not in order at byte {}{}", path_, fd,
                              ref.offset, holes_within ? fmt::format(" (of {})", *holes_within) : ""));
    out.resize(ref.offset);
    if (i < fd_data_payloads_.size()) {
      payload = fd_data_payloads_[i];
    } else {
      payload.resize(ref.stored_size + sizeof(StasisFdDataHeader));
      pread_exact(fd_, payload.data(), payload.size(), ref.payload_offset, path_);
    }
    if (XXH3_64bits(payload.data(), payload.size()) != ref.checksum)
      throw Error(fmt::format("{} is corrupt: checksum mismatch in the data of descriptor {}", path_, fd));
    const char* stored = payload.data() + sizeof(StasisFdDataHeader);
    size_t at = out.size();
    out.resize(at + ref.raw_size);
    if (ref.compression == STASIS_COMPRESS_NONE && ref.stored_size == ref.raw_size) {
      std::memcpy(out.data() + at, stored, ref.raw_size);
    } else if (ref.compression == STASIS_COMPRESS_ZSTD) {
      size_t n = ZSTD_decompress(out.data() + at, ref.raw_size, stored, ref.stored_size);
      if (ZSTD_isError(n) || n != ref.raw_size)
        throw Error(fmt::format("{} is corrupt: the data of descriptor {} does not decompress", path_, fd));
    } else if (ref.compression == STASIS_COMPRESS_LZ4) {
      int n = LZ4_decompress_safe(stored, out.data() + at, static_cast<int>(ref.stored_size),
                                  static_cast<int>(ref.raw_size));
      if (n < 0 || static_cast<uint64_t>(n) != ref.raw_size)
        throw Error(fmt::format("{} is corrupt: the data of descriptor {} does not decompress", path_, fd));
    } else {
      throw Error(fmt::format("{} is corrupt: the data of descriptor {} has unknown compression {}",
                              path_, fd, ref.compression));
    }
  }
  return out;
}

std::vector<Image> open_ancestors(const Image& newest, bool verify_payloads) {
  std::vector<Image> chain;
  const Image* child = &newest;
  try {
    while (const StasisParentRecord* parent = child->parent()) {
      std::string path =
          (std::filesystem::path(child->path()).parent_path() / parent->parent_image).lexically_normal();
      if (chain.size() > 4096)
        throw Error(fmt::format("{} is corrupt: its chain of parent images does not end", child->path()));
      Image image = Image::open(path, verify_payloads);
      if (image.header().header_checksum != parent->parent_header_checksum)
        throw Error(fmt::format("{} is not the image {} was taken on (it was replaced)", path,
                                child->path()));
      chain.push_back(std::move(image));
      child = &chain.back();
    }
  } catch (const Error& e) {
    throw Error(fmt::format("{} is an incremental image and an image it builds on cannot be used: {}",
                            newest.path(), e.what()));
  }
  return chain;
}

namespace {

// Fills [lo, hi) from the image at `level` of the chain (0: the newest) and, where it inherits
// pages it does not have, from the next.
void collect_pieces(const std::vector<const Image*>& chain, size_t level, uint64_t lo, uint64_t hi,
                    std::vector<MemoryPiece>& out) {
  for (const Region& region : chain[level]->regions()) {
    uint64_t a = std::max(lo, region.record.start), b = std::min(hi, region.record.end);
    if (a >= b) continue;
    std::vector<std::pair<uint64_t, uint64_t>> known;  // pages here, and holes
    for (const PagesRef& pages : region.pages) {
      uint64_t from = std::max(a, pages.addr), to = std::min(b, pages.addr + pages.raw_size);
      if (from >= to) continue;
      out.push_back({from, to - from, chain[level], &pages});
      known.emplace_back(from, to);
    }
    if (!region.inherited || level + 1 == chain.size()) continue;
    for (const StasisPageRun& hole : region.holes) {
      uint64_t from = std::max(a, hole.start), to = std::min(b, hole.start + hole.len);
      if (from < to) known.emplace_back(from, to);
    }
    std::sort(known.begin(), known.end());
    uint64_t at = a;
    for (const auto& [from, to] : known) {
      if (from > at) collect_pieces(chain, level + 1, at, from, out);
      at = std::max(at, to);
    }
    if (at < b) collect_pieces(chain, level + 1, at, b, out);
  }
}

}  // namespace

std::vector<MemoryPiece> region_pieces(const Image& newest, const std::vector<Image>& ancestors,
                                       const Region& region) {
  std::vector<const Image*> chain = {&newest};
  for (const Image& image : ancestors) chain.push_back(&image);
  std::vector<MemoryPiece> pieces;
  if (!region.inherited) {
    for (const PagesRef& pages : region.pages) pieces.push_back({pages.addr, pages.raw_size, &newest, &pages});
    return pieces;
  }
  collect_pieces(chain, 0, region.record.start, region.record.end, pieces);
  std::sort(pieces.begin(), pieces.end(),
            [](const MemoryPiece& x, const MemoryPiece& y) { return x.addr < y.addr; });
  return pieces;
}

const char* region_kind_name(uint32_t kind) {
  switch (kind) {
    case STASIS_REGION_ANON: return "anon";
    case STASIS_REGION_HEAP: return "heap";
    case STASIS_REGION_STACK: return "stack";
    case STASIS_REGION_FILE_PRIVATE: return "file-private";
    case STASIS_REGION_FILE_SHARED: return "file-shared";
    case STASIS_REGION_SHARED_ANON: return "shared-anon";
    case STASIS_REGION_SHARED_ELSEWHERE: return "shared-elsewhere";
    case STASIS_REGION_SYSV_SHM: return "sysv-shm";
    case STASIS_REGION_KVM_RUN: return "kvm-run";
  }
  return "unknown";
}

namespace {
// The name of each kind of descriptor, as `stasis inspect` and error messages show it.
struct FdKindName {
  uint32_t kind;
  const char* name;
};
constexpr FdKindName kFdKindNames[] = {
    {STASIS_FD_REGULAR, "file"},           {STASIS_FD_CHARDEV, "chardev"},
    {STASIS_FD_DIRECTORY, "directory"},    {STASIS_FD_EXTERNAL, "external"},
    {STASIS_FD_PIPE, "pipe"},              {STASIS_FD_FIFO, "fifo"},
    {STASIS_FD_EVENTFD, "eventfd"},        {STASIS_FD_EPOLL, "epoll"},
    {STASIS_FD_SIGNALFD, "signalfd"},      {STASIS_FD_TIMERFD, "timerfd"},
    {STASIS_FD_INOTIFY, "inotify"},        {STASIS_FD_SAVED_FILE, "saved-file"},
    {STASIS_FD_PTY_MASTER, "pty-master"},  {STASIS_FD_PTY_SLAVE, "pty-slave"},
    {STASIS_FD_UNIX_SOCKET, "unix-socket"},  {STASIS_FD_UNIX_LISTENER, "unix-listener"},
    {STASIS_FD_TCP_LISTENER, "tcp-listener"},  {STASIS_FD_TCP_CONNECTION, "tcp-connection"},
    {STASIS_FD_UDP_SOCKET, "udp-socket"},  {STASIS_FD_UNIX_DATAGRAM, "unix-datagram"},
    {STASIS_FD_NETLINK_UEVENT, "netlink-uevent"},
    {STASIS_FD_MQUEUE, "mqueue"},
    {STASIS_FD_KVM_VM, "kvm-vm"},
    {STASIS_FD_KVM_VCPU, "kvm-vcpu"},
};
}  // namespace

const char* fd_kind_name(uint32_t kind) {
  for (const auto& entry : kFdKindNames)
    if (entry.kind == kind) return entry.name;
  return "unknown";
}

const char* compression_name(uint32_t compression) {
  switch (compression) {
    case STASIS_COMPRESS_ZSTD: return "zstd";
    case STASIS_COMPRESS_LZ4: return "lz4";
    case STASIS_COMPRESS_ZSTD_LANES: return "zstd-lanes";
  }
  return "none";
}

}  // namespace stasis::image
