// How records are framed in an image: the one definition of the checksums that the writer (the
// preloaded runtime: allocation-free, header-only), the reader and the tests share. A record is a
// StasisRecordHeader followed by `stored_size` bytes of payload; the header carries a checksum of
// the payload and of itself; END carries a chain of every header before it (see format.h).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "image/format.h"
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace stasis::image {

// The header of a record holding `stored` bytes at `payload` (`raw` once decompressed).
inline StasisRecordHeader frame_record(uint32_t type, uint32_t compression, uint64_t arg, const void* payload,
                                       uint64_t stored, uint64_t raw) {
  StasisRecordHeader h = {};
  h.type = type;
  h.compression = compression;
  h.stored_size = stored;
  h.raw_size = raw;
  h.arg = arg;
  h.payload_checksum = XXH3_64bits(payload, stored);
  h.header_checksum = XXH3_64bits(&h, offsetof(StasisRecordHeader, header_checksum));
  return h;
}

inline bool record_header_sound(const StasisRecordHeader& h) {
  return XXH3_64bits(&h, offsetof(StasisRecordHeader, header_checksum)) == h.header_checksum;
}

inline bool payload_sound(const StasisRecordHeader& h, const void* payload) {
  return XXH3_64bits(payload, h.stored_size) == h.payload_checksum;
}

// END's headers_checksum: every record header before END, INDEX included, chained in file order.
inline uint64_t chain_record_header(uint64_t chain, const StasisRecordHeader& h) {
  return XXH3_64bits_withSeed(&h, sizeof h, chain);
}

// The image header's checksum covers the header with its checksum field zero.
inline uint64_t image_header_checksum(StasisImageHeader header) {
  header.header_checksum = 0;
  return XXH3_64bits(&header, sizeof header);
}

}  // namespace stasis::image
