// libFuzzer target for the image reader (src/image/reader.cc): any bytes given as an image file
// must be refused with a stasis::Error, never crash, hang or allocate without bound.
//
// Input: one mode byte, then the file. Mode bit 0 re-frames the file before reading it (every
// record's checksums, the END record's chain and count, the record index recomputed) so that
// mutations reach the code behind the checksums; bit 1 verifies every payload (what restart and
// inspect do), else only the metadata is read (restart --lazy).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "image/framing.h"
#include "image/reader.h"

namespace {

using namespace stasis::image;

// Recomputes what a writer would have: the checksums of the header and of every record (a
// record that runs past the end: its header's), the index's copies of the headers before it,
// and END's count, chain and index offset (when there is an index).
void reframe(std::string& file) {
  if (file.size() < sizeof(StasisImageHeader)) return;
  StasisImageHeader header;
  std::memcpy(&header, file.data(), sizeof header);
  header.header_checksum = image_header_checksum(header);
  std::memcpy(file.data(), &header, sizeof header);
  std::vector<StasisIndexEntry> seen;
  uint64_t chain = 0, index_offset = 0;
  for (uint64_t offset = sizeof header; file.size() - offset >= sizeof(StasisRecordHeader);) {
    StasisRecordHeader h;
    std::memcpy(&h, file.data() + offset, sizeof h);
    char* payload = file.data() + offset + sizeof h;
    if (h.stored_size > file.size() - offset - sizeof h) {  // its header still gets past its checksum
      h.header_checksum = XXH3_64bits(&h, offsetof(StasisRecordHeader, header_checksum));
      std::memcpy(file.data() + offset, &h, sizeof h);
      break;
    }
    if (h.type == STASIS_REC_INDEX) {
      index_offset = offset;
      size_t entries = std::min<size_t>(h.stored_size / sizeof(StasisIndexEntry), seen.size());
      if (entries) std::memcpy(payload, seen.data(), entries * sizeof(StasisIndexEntry));
    }
    if (h.type == STASIS_REC_END && h.stored_size >= STASIS_END_RECORD_SIZE_V2) {
      StasisEndRecord end = {};
      std::memcpy(&end, payload, std::min<uint64_t>(h.stored_size, sizeof end));
      end.record_count = seen.size();
      end.headers_checksum = chain;
      if (index_offset) end.index_offset = index_offset;  // else as it is: the reader must refuse any
      std::memcpy(payload, &end, std::min<uint64_t>(h.stored_size, sizeof end));
    }
    h = frame_record(h.type, h.compression, h.arg, payload, h.stored_size, h.raw_size);
    std::memcpy(file.data() + offset, &h, sizeof h);
    if (h.type == STASIS_REC_END) break;
    seen.push_back({offset, h});
    chain = chain_record_header(chain, h);
    offset += sizeof h + h.stored_size;
  }
}

// What restart and inspect do with an opened image.
void use(const Image& image) {
  std::vector<char> scratch, out;
  for (const Region& region : image.regions()) {
    region_pieces(image, {}, region);
    for (const PagesRef& pages : region.pages) {
      if (pages.raw_size > (64u << 20)) continue;  // restart streams it; the bound is checked at open
      out.resize(pages.raw_size);
      try {
        image.read_pages(pages, out.data(), scratch);
      } catch (const stasis::Error&) {
      }
    }
  }
  for (const FdDataRef& ref : image.fd_data_records()) {
    try {
      image.fd_data(ref.fd, ref.tag);
    } catch (const stasis::Error&) {
    }
  }
  for (const StasisFdRecord& fd : image.fds()) (void)std::strlen(fd_kind_name(fd.kind)), (void)std::strlen(fd.path);
  (void)std::strlen(image.process().exe);
  (void)std::strlen(image.header().producer);
}

}  // namespace

// STASIS_FUZZ_VERBOSE=1: say what became of each input (to check that seeds get past the checks).
static bool verbose() {
  static const bool on = std::getenv("STASIS_FUZZ_VERBOSE") != nullptr;
  return on;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (mode & 1) reframe(file);
  int fd = memfd_create("stasis-fuzz-image", MFD_CLOEXEC);
  if (fd < 0) __builtin_trap();
  if (!file.empty() && write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) __builtin_trap();
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    Image image = Image::open(path, /*verify_payloads=*/(mode & 2) != 0);
    use(image);
    if (verbose()) std::fprintf(stderr, "read: %zu threads, %zu regions, %zu descriptors\n", image.threads().size(),
                                image.regions().size(), image.fds().size());
  } catch (const stasis::Error& e) {
    if (verbose()) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  close(fd);
  return 0;
}
