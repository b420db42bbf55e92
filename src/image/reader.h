// Reads and verifies an image file (see format.h). Every inconsistency is refused with a
// stasis::Error whose message names the file and what is wrong with it.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "image/format.h"
#include "image/kind_data.h"

namespace stasis::image {

struct PagesRef {
  uint64_t addr = 0;
  uint64_t raw_size = 0;
  uint64_t stored_size = 0;
  uint64_t file_offset = 0;  // of the payload
  uint32_t compression = 0;
  uint64_t checksum = 0;
};

// One FD_DATA record: part of a descriptor's variable-length state.
struct FdDataRef {
  int32_t fd = -1;
  uint32_t tag = 0;
  uint64_t offset = 0;        // within the descriptor's data
  uint64_t raw_size = 0;      // bytes of data (after decompression)
  uint64_t stored_size = 0;   // bytes of data in the file
  uint64_t file_offset = 0;   // of the data (after the StasisFdDataHeader)
  uint32_t compression = 0;
  uint64_t checksum = 0;      // of the whole payload
  uint64_t payload_offset = 0;
};

struct Region {
  StasisRegionRecord record{};
  std::vector<PagesRef> pages;
  // An increment's region tracked since the parent (INHERIT records): pages in no PAGES record
  // here come from the parent image, except the holes (zero-filled).
  bool inherited = false;
  std::vector<StasisPageRun> holes;
};

class Image {
 public:
  // Parses the whole file: from its record index (version 3) without reading the memory it
  // holds, or record by record. With verify_payloads, also reads every payload and checks its
  // checksum (what `inspect` and `restart` do before trusting an image).
  static Image open(const std::string& path, bool verify_payloads);
  Image(Image&&) noexcept;
  Image& operator=(Image&&) noexcept;
  ~Image();

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  const StasisImageHeader& header() const { return header_; }
  const StasisProcessRecord& process() const { return process_; }
  // Where process().original_pid and the pids the process names mean something: its pid space as
  // MANIFEST.json records it ("" for a manifest older than pid spaces: one space for all).
  const std::string& pid_space() const { return pid_space_; }
  void set_pid_space(std::string space) { pid_space_ = std::move(space); }
  const std::vector<StasisThreadRecord>& threads() const { return threads_; }
  const std::vector<StasisFdRecord>& fds() const { return fds_; }
  const std::vector<Region>& regions() const { return regions_; }
  const std::vector<FdDataRef>& fd_data_records() const { return fd_data_; }
  // The whole variable-length state of descriptor `fd` with `tag` (StasisFdDataTag), joined from
  // its FD_DATA records, verified and decompressed; empty if there is none.
  std::vector<char> fd_data(int fd, uint32_t tag) const;
  // The same for data saved without its holes (a file's extents, each at its offset): `size`
  // bytes, zeros where no record is.
  std::vector<char> fd_data_with_holes(int fd, uint32_t tag, uint64_t size) const;
  bool has_fd_data(int fd, uint32_t tag) const;
  // Reads every FD_DATA payload into memory now, so fd_data() keeps working after the image's
  // descriptor is closed (restart closes everything before it rebuilds the program's table).
  void load_fd_data();
  // Restores descriptor `fd` as one on the outside world: what `stasis restart` itself has at
  // number `restart_fd` (a process restarted on another host gets its standard streams so).
  // Restores descriptor `fd` (an outside one: a process started through a remote launcher saw
  // its streams so) as another end of the pipe `end` is one of.
  void treat_as_end_of(int fd, const StasisFdRecord& end) {
    for (auto& f : fds_)
      if (f.fd == fd) f.kind = end.kind, std::memcpy(f.kind_data, end.kind_data, sizeof f.kind_data), f.same_description_as = -1;
  }
  void treat_as_outside(int fd, int restart_fd) {
    for (auto& f : fds_)
      if (f.fd == fd)
        f.kind = STASIS_FD_EXTERNAL, set_kind_data(f, StasisExternalData{static_cast<uint64_t>(restart_fd) + 1}),
        f.same_description_as = -1;
  }
  const StasisEndRecord& end() const { return end_; }
  // The saved bytes of the process's vdso and where they were (empty in images older than the
  // VDSO record).
  const std::vector<unsigned char>& vdso_text() const { return vdso_text_; }
  uint64_t vdso_text_address() const { return vdso_text_address_; }
  // The madvise marks of the saved memory, checked to lie inside its regions (empty when it had
  // none, and in images older than version 5).
  const std::vector<StasisMemoryMark>& memory_marks() const { return memory_marks_; }
  // What XSAVE state the threads hold in use, and where (absent in images before version 7).
  const std::optional<StasisCpuStateRecord>& cpu_state() const { return cpu_state_; }
  // The PARENT record of an incremental image; nullptr for a full one.
  const StasisParentRecord* parent() const { return has_parent_ ? &parent_ : nullptr; }

  // Reads one PAGES payload, checks its checksum and decompresses it into out (raw_size bytes).
  // `scratch` is reused between calls to avoid reallocating.
  void read_pages(const PagesRef& pages, void* out, std::vector<char>& scratch) const;
  // Reads [addr, addr + len) of an uncompressed PAGES payload that open() verified.
  void read_raw_pages(const PagesRef& pages, uint64_t addr, uint64_t len, void* out) const;

 private:
  Image() = default;
  std::vector<StasisIndexEntry> read_index();
  void load_from_index(const std::vector<StasisIndexEntry>& index);
  void verify_in_parallel(const std::vector<StasisIndexEntry>& index) const;
  void scan_records(bool verify_payloads);
  void take_record(const StasisRecordHeader& h, uint64_t offset, const std::vector<char>& payload);
  StasisEndRecord parse_end(const std::vector<char>& payload, const StasisRecordHeader& h) const;
  void check_memory_marks() const;
  std::string path_;
  std::string pid_space_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  StasisImageHeader header_{};
  StasisProcessRecord process_{};
  std::vector<StasisThreadRecord> threads_;
  std::vector<StasisFdRecord> fds_;
  std::vector<Region> regions_;
  std::vector<char> joined_fd_data(int fd, uint32_t tag, std::optional<uint64_t> holes_within) const;
  std::vector<FdDataRef> fd_data_;
  std::vector<std::vector<char>> fd_data_payloads_;  // by index in fd_data_, after load_fd_data()
  StasisEndRecord end_{};
  std::vector<unsigned char> vdso_text_;
  uint64_t vdso_text_address_ = 0;
  std::vector<StasisMemoryMark> memory_marks_;
  std::optional<StasisCpuStateRecord> cpu_state_;
  bool have_memory_marks_ = false;
  bool have_process_ = false;
  StasisParentRecord parent_{};
  bool has_parent_ = false;
};

// Payload bytes that opening images with verify_payloads has checked so far, in this process
// (what `stasis restart` shows while it verifies).
uint64_t payload_bytes_verified();

// The images an incremental image builds on, parent first, each opened (and, with
// verify_payloads, verified) and checked to be the very image its child was taken on. Empty for
// a full image. Throws an Error naming the image that is missing, corrupt or not the parent.
std::vector<Image> open_ancestors(const Image& newest, bool verify_payloads);

// Where the bytes of a region come from: a part of one PAGES record of one image of the chain.
struct MemoryPiece {
  uint64_t addr = 0, len = 0;
  const Image* image = nullptr;
  const PagesRef* pages = nullptr;  // [addr, addr + len) lies within it
};

// The pieces that make up `region` of `newest` (by ascending address; memory in none of them is
// zero-filled), taking each page from the newest image of the chain that has it.
std::vector<MemoryPiece> region_pieces(const Image& newest, const std::vector<Image>& ancestors,
                                       const Region& region);

const char* region_kind_name(uint32_t kind);
const char* fd_kind_name(uint32_t kind);
const char* compression_name(uint32_t compression);

}  // namespace stasis::image
