// The reader on small images built here record by record: version 6 (with its record index,
// zstd's lanes form, memory marks and a file's extents), 3 (without lanes) and 2 (without
// index), and damaged copies, each refused with a message naming the damage.
#include "image/reader.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
#define XXH_INLINE_ALL
#include "image/framing.h"

#include "common/error.h"

namespace stasis::image {
namespace {

constexpr uint64_t kRegionStart = 0x100000000, kPageBytes = 4096;

// Writes records the way the checkpoint's ImageWriter does (checksums, chain, END, INDEX).
class ImageBuilder {
 public:
  explicit ImageBuilder(uint32_t version) : version_(version) {
    StasisImageHeader header = {};
    std::memcpy(header.magic, STASIS_IMAGE_MAGIC, 8);
    header.format_version = version;
    header.header_size = sizeof header;
    header.header_checksum = stasis::image::image_header_checksum(header);
    append(&header, sizeof header);
  }
  template <typename T>
  void record_of(uint32_t type, const T& payload) {
    record(type, &payload, sizeof payload);
  }
  void record(uint32_t type, const void* payload, uint64_t size, uint64_t arg = 0,
              uint32_t compression = STASIS_COMPRESS_NONE, uint64_t raw_size = 0) {
    const StasisRecordHeader h =
        stasis::image::frame_record(type, compression, arg, payload, size, raw_size ? raw_size : size);
    if (type != STASIS_REC_INDEX) index_.push_back({bytes_.size(), h});
    chain_ = stasis::image::chain_record_header(chain_, h);
    count_++;
    append(&h, sizeof h);
    append(payload, size);
  }
  // The index (version 3) and END; returns the file's bytes.
  std::vector<char> finish() {
    StasisEndRecord end = {};
    if (version_ != STASIS_IMAGE_VERSION_WITHOUT_INDEX) {
      end.index_offset = bytes_.size();
      record(STASIS_REC_INDEX, index_.data(), index_.size() * sizeof(StasisIndexEntry));
    }
    end.record_count = count_;
    end.headers_checksum = chain_;
    uint64_t size = version_ != STASIS_IMAGE_VERSION_WITHOUT_INDEX ? sizeof end : STASIS_END_RECORD_SIZE_V2;
    const StasisRecordHeader h = stasis::image::frame_record(STASIS_REC_END, STASIS_COMPRESS_NONE, 0, &end, size, size);
    append(&h, sizeof h);
    append(&end, size);
    return bytes_;
  }
  uint64_t size() const { return bytes_.size(); }

 private:
  void append(const void* data, uint64_t size) {
    const char* p = static_cast<const char*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  uint32_t version_;
  std::vector<char> bytes_;
  std::vector<StasisIndexEntry> index_;
  uint64_t chain_ = 0, count_ = 0;
};

struct Built {
  std::vector<char> bytes;
  uint64_t pages_header_at = 0;  // of the PAGES record
};

// Process 42 with one thread and a region of `pages` pages at kRegionStart (its PAGES to follow).
void add_process_and_region(ImageBuilder& b, uint64_t pages) {
  StasisProcessRecord process = {};
  process.original_pid = 42;
  b.record_of(STASIS_REC_PROCESS, process);
  StasisThreadRecord thread = {};
  thread.tid = 42;
  thread.is_leader = 1;
  b.record_of(STASIS_REC_THREAD, thread);
  StasisRegionRecord region = {};
  region.start = kRegionStart;
  region.end = kRegionStart + pages * kPageBytes;
  region.kind = STASIS_REGION_ANON;
  b.record_of(STASIS_REC_REGION, region);
}

// A process with one thread and one region of 16 pages, stored page-aligned after a PAD record.
Built build_image(uint32_t version) {
  ImageBuilder b(version);
  Built built;
  add_process_and_region(b, 16);
  uint64_t payload_at = b.size() + 2 * sizeof(StasisRecordHeader);
  std::vector<char> pad((kPageBytes - payload_at % kPageBytes) % kPageBytes);
  b.record(STASIS_REC_PAD, pad.data(), pad.size());
  std::vector<char> pages(16 * kPageBytes);
  for (size_t i = 0; i < pages.size(); i++) pages[i] = static_cast<char>(i * 7);
  built.pages_header_at = b.size();
  b.record(STASIS_REC_PAGES, pages.data(), pages.size(), kRegionStart);
  built.bytes = b.finish();
  return built;
}

class ImageFile {
 public:
  explicit ImageFile(const std::vector<char>& bytes) {
    char name[] = "/tmp/stasis-reader-test-XXXXXX";
    int fd = mkstemp(name);
    path_ = name;
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
  }
  ~ImageFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The message of opening the image, "" when it opens.
std::string refusal(const std::vector<char>& bytes, bool verify_payloads) {
  ImageFile file(bytes);
  try {
    Image::open(file.path(), verify_payloads);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

void expect_sound(const std::vector<char>& bytes) {
  ImageFile file(bytes);
  for (bool verify : {false, true}) {
    Image image = Image::open(file.path(), verify);
    EXPECT_EQ(image.process().original_pid, 42u);
    ASSERT_EQ(image.regions().size(), 1u);
    ASSERT_EQ(image.regions()[0].pages.size(), 1u);
    const PagesRef& pages = image.regions()[0].pages[0];
    EXPECT_EQ(pages.file_offset % kPageBytes, 0u);  // mappable
    std::vector<char> out(pages.raw_size), scratch;
    image.read_pages(pages, out.data(), scratch);
    EXPECT_EQ(out[100], static_cast<char>(700));
  }
}

uint64_t end_payload_at(const std::vector<char>& bytes) { return bytes.size() - sizeof(StasisEndRecord); }

TEST(ImageReader, ReadsAnImageThroughItsIndex) { expect_sound(build_image(STASIS_IMAGE_VERSION).bytes); }

TEST(ImageReader, ReadsAVersion2ImageWithoutIndex) {
  expect_sound(build_image(STASIS_IMAGE_VERSION_WITHOUT_INDEX).bytes);
}

TEST(ImageReader, RefusesAnotherVersion) {
  std::vector<char> bytes = build_image(STASIS_IMAGE_VERSION).bytes;
  StasisImageHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  header.format_version = STASIS_IMAGE_VERSION + 1;
  header.header_checksum = stasis::image::image_header_checksum(header);
  std::memcpy(bytes.data(), &header, sizeof header);
  EXPECT_NE(refusal(bytes, false).find("image format version " + std::to_string(STASIS_IMAGE_VERSION + 1)),
            std::string::npos);
}

TEST(ImageReader, ReadsAVersion3Image) { expect_sound(build_image(STASIS_IMAGE_VERSION_WITHOUT_LANES).bytes); }

// A region of 8 pages holding doubles, stored as zstd of their lanes (what the writer does
// where that is smaller); returns the image and the pages' bytes.
std::pair<std::vector<char>, std::vector<char>> image_with_lanes(uint32_t version) {
  ImageBuilder b(version);
  add_process_and_region(b, 8);
  std::vector<char> pages(8 * kPageBytes), lanes(pages.size());
  for (size_t i = 0; i < pages.size() / 8; i++) {
    double d = 273.15 + static_cast<double>(i) * 0.03125;
    std::memcpy(pages.data() + 8 * i, &d, 8);
  }
  const size_t words = pages.size() / 8;
  for (size_t i = 0; i < words; i++)
    for (size_t lane = 0; lane < 8; lane++) lanes[lane * words + i] = pages[8 * i + lane];
  std::vector<char> stored(ZSTD_compressBound(lanes.size()));
  stored.resize(ZSTD_compress(stored.data(), stored.size(), lanes.data(), lanes.size(), 1));
  b.record(STASIS_REC_PAGES, stored.data(), stored.size(), kRegionStart, STASIS_COMPRESS_ZSTD_LANES,
           pages.size());
  return {b.finish(), pages};
}

TEST(ImageReader, ZstdLanesDecodeToTheBytesWritten) {
  auto [bytes, pages] = image_with_lanes(STASIS_IMAGE_VERSION);
  ImageFile file(bytes);
  for (bool verify : {false, true}) {
    Image image = Image::open(file.path(), verify);
    ASSERT_EQ(image.regions().size(), 1u);
    ASSERT_EQ(image.regions()[0].pages.size(), 1u);
    const PagesRef& ref = image.regions()[0].pages[0];
    EXPECT_EQ(ref.compression, static_cast<uint32_t>(STASIS_COMPRESS_ZSTD_LANES));
    std::vector<char> out(ref.raw_size), scratch;
    image.read_pages(ref, out.data(), scratch);
    EXPECT_EQ(out, pages);
  }
}

TEST(ImageReader, RefusesZstdLanesInAVersion3Image) {
  auto [bytes, pages] = image_with_lanes(STASIS_IMAGE_VERSION_WITHOUT_LANES);
  ImageFile file(bytes);
  Image image = Image::open(file.path(), true);
  const PagesRef& ref = image.regions()[0].pages[0];
  std::vector<char> out(ref.raw_size), scratch;
  try {
    image.read_pages(ref, out.data(), scratch);
    ADD_FAILURE() << "lanes read from a version 3 image";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown compression 3"), std::string::npos) << e.what();
  }
}

TEST(ImageReader, RefusesACorruptIndex) {
  std::vector<char> bytes = build_image(STASIS_IMAGE_VERSION).bytes;
  uint64_t index_offset;
  std::memcpy(&index_offset, bytes.data() + end_payload_at(bytes) + offsetof(StasisEndRecord, index_offset), 8);
  bytes[index_offset + sizeof(StasisRecordHeader) + 20] ^= 0x10;  // inside the first entry
  for (bool verify : {false, true}) {
    std::string message = refusal(bytes, verify);
    EXPECT_NE(message.find("is corrupt: its record index"), std::string::npos) << message;
  }
}

TEST(ImageReader, RefusesAnIndexThatListsOtherRecords) {
  // A sound index of another image (same sizes, one header differs): the END record's chained
  // checksum no longer matches it.
  Built built = build_image(STASIS_IMAGE_VERSION);
  std::vector<char> bytes = built.bytes;
  ImageBuilder other(STASIS_IMAGE_VERSION);
  StasisProcessRecord process = {};
  process.original_pid = 43;
  other.record_of(STASIS_REC_PROCESS, process);
  StasisRecordHeader forged;
  std::memcpy(&forged, other.finish().data() + sizeof(StasisImageHeader), sizeof forged);
  uint64_t index_offset;
  std::memcpy(&index_offset, bytes.data() + end_payload_at(bytes) + offsetof(StasisEndRecord, index_offset), 8);
  // Replace the PROCESS entry's header and re-checksum the INDEX record itself.
  char* index_payload = bytes.data() + index_offset + sizeof(StasisRecordHeader);
  std::memcpy(index_payload + offsetof(StasisIndexEntry, header), &forged, sizeof forged);
  StasisRecordHeader index_header;
  std::memcpy(&index_header, bytes.data() + index_offset, sizeof index_header);
  index_header = stasis::image::frame_record(STASIS_REC_INDEX, index_header.compression, index_header.arg,
                                             index_payload, index_header.stored_size, index_header.raw_size);
  std::memcpy(bytes.data() + index_offset, &index_header, sizeof index_header);
  std::string message = refusal(bytes, false);
  EXPECT_NE(message.find("its record index"), std::string::npos) << message;
}

TEST(ImageReader, VerifyingComparesEveryHeaderWithTheIndex) {
  Built built = build_image(STASIS_IMAGE_VERSION);
  std::vector<char> bytes = built.bytes;
  bytes[built.pages_header_at + offsetof(StasisRecordHeader, arg)] ^= 0x01;
  // Without verification only the index is read (restart --lazy: documented); verified, refused.
  EXPECT_EQ(refusal(bytes, false), "");
  std::string message = refusal(bytes, true);
  EXPECT_NE(message.find("differs from its copy in the record index"), std::string::npos) << message;
}

TEST(ImageReader, VerifyingChecksEveryPayload) {
  for (uint32_t version : {STASIS_IMAGE_VERSION, STASIS_IMAGE_VERSION_WITHOUT_INDEX}) {
    Built built = build_image(version);
    std::vector<char> bytes = built.bytes;
    bytes[built.pages_header_at + sizeof(StasisRecordHeader) + 5000] ^= 0x40;
    EXPECT_EQ(refusal(bytes, false), "");
    std::string message = refusal(bytes, true);
    EXPECT_NE(message.find("checksum mismatch in record"), std::string::npos) << message;
  }
}

TEST(ImageReader, RefusesATruncatedImage) {
  for (uint32_t version : {STASIS_IMAGE_VERSION, STASIS_IMAGE_VERSION_WITHOUT_INDEX}) {
    std::vector<char> bytes = build_image(version).bytes;
    bytes.resize(bytes.size() - 10);
    for (bool verify : {false, true}) {
      std::string message = refusal(bytes, verify);
      EXPECT_NE(message.find("is truncated"), std::string::npos) << message;
    }
  }
}

TEST(ImageReader, ADamagedEndRecordIsFoundByTheScan) {
  std::vector<char> bytes = build_image(STASIS_IMAGE_VERSION).bytes;
  bytes[end_payload_at(bytes)] ^= 0x01;  // END's record count
  std::string message = refusal(bytes, false);
  EXPECT_NE(message.find("is corrupt: checksum mismatch"), std::string::npos) << message;
}

// A 16-page region with the given MEMORY_MARKS record (version as given).
std::vector<char> image_with_marks(uint32_t version, const std::vector<StasisMemoryMark>& marks) {
  ImageBuilder b(version);
  add_process_and_region(b, 16);
  std::vector<char> pages(16 * kPageBytes, 1);
  b.record(STASIS_REC_PAGES, pages.data(), pages.size(), kRegionStart);
  b.record(STASIS_REC_MEMORY_MARKS, marks.data(), marks.size() * sizeof(StasisMemoryMark));
  return b.finish();
}

TEST(ImageReader, ReadsMemoryMarksInsideTheRegions) {
  const std::vector<StasisMemoryMark> marks = {
      {kRegionStart, kRegionStart + 2 * kPageBytes, STASIS_MARK_WIPEONFORK, 0},
      {kRegionStart + 4 * kPageBytes, kRegionStart + 16 * kPageBytes, STASIS_MARK_DONTFORK | STASIS_MARK_DONTDUMP, 0}};
  ImageFile file(image_with_marks(STASIS_IMAGE_VERSION, marks));
  Image image = Image::open(file.path(), true);
  ASSERT_EQ(image.memory_marks().size(), 2u);
  EXPECT_EQ(image.memory_marks()[1].marks, static_cast<uint32_t>(STASIS_MARK_DONTFORK | STASIS_MARK_DONTDUMP));
}

// A process and its region, with the given CPU_STATE records.
std::vector<char> image_with_cpu_states(uint32_t version, int records) {
  ImageBuilder b(version);
  add_process_and_region(b, 1);
  std::vector<char> pages(kPageBytes, 1);
  b.record(STASIS_REC_PAGES, pages.data(), pages.size(), kRegionStart);
  StasisCpuStateRecord cpu = {};
  cpu.xfeatures_in_use = 0x7;
  cpu.component_offset[2] = 576;
  cpu.component_size[2] = 256;
  for (int i = 0; i < records; i++) b.record_of(STASIS_REC_CPU_STATE, cpu);
  return b.finish();
}

TEST(ImageReader, ReadsTheCpuStateAndKeepsItThroughAMove) {
  ImageFile file(image_with_cpu_states(STASIS_IMAGE_VERSION, 1));
  Image opened = Image::open(file.path(), true);
  Image image = std::move(opened);
  ASSERT_TRUE(image.cpu_state().has_value());
  EXPECT_EQ(image.cpu_state()->xfeatures_in_use, 0x7u);
  EXPECT_EQ(image.cpu_state()->component_offset[2], 576u);
  ImageFile without(image_with_cpu_states(STASIS_IMAGE_VERSION, 0));
  EXPECT_FALSE(Image::open(without.path(), true).cpu_state().has_value());
}

TEST(ImageReader, RefusesTwoCpuStatesOrOneInAVersion6Image) {
  for (auto bytes : {image_with_cpu_states(STASIS_IMAGE_VERSION, 2),
                     image_with_cpu_states(STASIS_IMAGE_VERSION_WITHOUT_CPU_STATE, 1)}) {
    std::string message = refusal(bytes, false);
    EXPECT_NE(message.find("is corrupt: the CPU state record"), std::string::npos) << message;
  }
}

TEST(ImageReader, RefusesMemoryMarksThatCannotBeSetAgain) {
  const uint64_t end = kRegionStart + 16 * kPageBytes;
  const std::pair<std::vector<StasisMemoryMark>, const char*> cases[] = {
      {{{kRegionStart, end + kPageBytes, STASIS_MARK_DONTFORK, 0}}, "lie outside the saved memory"},
      {{{kRegionStart + 1, end, STASIS_MARK_DONTFORK, 0}}, "are not a page-aligned range"},
      {{{kRegionStart, end, 1u << 20, 0}}, "hold unknown bits"},
      {{{kRegionStart + kPageBytes, end, STASIS_MARK_DONTFORK, 0}, {kRegionStart, end, STASIS_MARK_DONTFORK, 0}},
       "overlap or precede"},
  };
  for (const auto& [marks, why] : cases) {
    std::string message = refusal(image_with_marks(STASIS_IMAGE_VERSION, marks), false);
    EXPECT_NE(message.find(why), std::string::npos) << message;
    EXPECT_NE(message.find("is corrupt: the memory marks of"), std::string::npos) << message;
  }
  // Version 4 had no such record.
  std::string message = refusal(
      image_with_marks(STASIS_IMAGE_VERSION_WITHOUT_MARKS, {{kRegionStart, end, STASIS_MARK_DONTFORK, 0}}), false);
  EXPECT_NE(message.find("is in a version 4 image"), std::string::npos) << message;
}


// A file saved without its holes (version 6): its extents at their offsets, zeros between; out
// of order, overlapping or past the file's size is refused.
std::vector<char> image_with_extents(const std::vector<std::pair<uint64_t, std::string>>& extents) {
  ImageBuilder b(STASIS_IMAGE_VERSION);
  add_process_and_region(b, 1);
  std::vector<char> page(kPageBytes);
  b.record(STASIS_REC_PAGES, page.data(), page.size(), kRegionStart);
  for (const auto& [offset, bytes] : extents) {
    std::vector<char> payload(sizeof(StasisFdDataHeader));
    const StasisFdDataHeader header = {3, STASIS_FD_DATA_SHM_FILE_BYTES, offset};
    std::memcpy(payload.data(), &header, sizeof header);
    payload.insert(payload.end(), bytes.begin(), bytes.end());
    b.record(STASIS_REC_FD_DATA, payload.data(), payload.size());
  }
  return b.finish();
}

std::string holes_refusal(const std::vector<char>& bytes, uint64_t size) {
  ImageFile file(bytes);
  try {
    Image::open(file.path(), true).fd_data_with_holes(3, STASIS_FD_DATA_SHM_FILE_BYTES, size);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(ImageReader, PlacesAFilesExtentsAtTheirOffsets) {
  ImageFile file(image_with_extents({{4096, "abcd"}, {12288, "wxyz"}}));
  Image image = Image::open(file.path(), true);
  std::vector<char> bytes = image.fd_data_with_holes(3, STASIS_FD_DATA_SHM_FILE_BYTES, 16384);
  ASSERT_EQ(bytes.size(), 16384u);
  std::vector<char> expected(16384);
  std::memcpy(expected.data() + 4096, "abcd", 4);
  std::memcpy(expected.data() + 12288, "wxyz", 4);
  EXPECT_EQ(bytes, expected);
  // Read as contiguous data, the gap is damage.
  EXPECT_THROW(image.fd_data(3, STASIS_FD_DATA_SHM_FILE_BYTES), Error);
  // No extent at all: the file is all holes.
  EXPECT_EQ(image.fd_data_with_holes(4, STASIS_FD_DATA_SHM_FILE_BYTES, 100), std::vector<char>(100));
}

TEST(ImageReader, RefusesExtentsOutOfOrderOrPastTheFile) {
  EXPECT_NE(holes_refusal(image_with_extents({{8192, "abcd"}, {4096, "wxyz"}}), 16384).find("not in order at byte 4096"),
            std::string::npos);
  EXPECT_NE(holes_refusal(image_with_extents({{4096, "abcd"}, {4098, "wxyz"}}), 16384).find("not in order"),
            std::string::npos);
  EXPECT_NE(holes_refusal(image_with_extents({{16382, "abcd"}}), 16384).find("not in order at byte 16382 (of 16384)"),
            std::string::npos);
  EXPECT_EQ(holes_refusal(image_with_extents({{16380, "abcd"}}), 16384), "");
}

}  // namespace
}  // namespace stasis::image
