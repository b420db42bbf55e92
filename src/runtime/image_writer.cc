#include "runtime/image_writer.h"

#include <errno.h>
#include <fcntl.h>
#include "runtime/compressors.h"
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace stasis::rt {
namespace {
constexpr uint64_t kBufferBytes = 4u << 20;
constexpr uint64_t kChunkBytes = 1u << 20;  // raw bytes per PAGES record

Arena* g_zstd_arena = nullptr;
void* arena_zstd_alloc(void*, size_t size) { return g_zstd_arena->alloc(size); }
void arena_zstd_free(void*, void*) {}
}  // namespace

bool ImageWriter::open(const char* path, uint32_t compression, Arena& arena, LogLine& error) {
  compression_ = compression;
  buffer_ = static_cast<char*>(arena.alloc(kBufferBytes));
  chunk_in_ = static_cast<char*>(arena.alloc(kChunkBytes));
  chunk_out_cap_ = ZSTD_COMPRESSBOUND(kChunkBytes);
  if (static_cast<uint64_t>(LZ4_COMPRESSBOUND(kChunkBytes)) > chunk_out_cap_)
    chunk_out_cap_ = static_cast<uint64_t>(LZ4_COMPRESSBOUND(kChunkBytes));
  // Room in front for a StasisFdDataHeader: FD_DATA payloads are built in place.
  chunk_out_ = static_cast<char*>(arena.alloc(chunk_out_cap_ + sizeof(StasisFdDataHeader)));
  if (!buffer_ || !chunk_in_ || !chunk_out_) {
    error << "out of checkpoint scratch memory";
    return false;
  }
  compressors_ = compressors();
  if (compression_ != STASIS_COMPRESS_NONE && !compressors_) {
    error << "the compression libraries (libzstd.so.1, liblz4.so.1) could not be loaded; "
          << "checkpoint with --compress none";
    return false;
  }
  if (compression_ == STASIS_COMPRESS_ZSTD) {
    g_zstd_arena = &arena;
    ZSTD_customMem mem = {arena_zstd_alloc, arena_zstd_free, nullptr};
    zstd_ = compressors_->zstd_create_cctx_advanced(mem);
    if (!zstd_) {
      error << "cannot create a zstd context in checkpoint scratch memory";
      return false;
    }
    compressors_->zstd_cctx_set_parameter(zstd_, ZSTD_c_compressionLevel, 1);
    compressors_->zstd_cctx_set_parameter(zstd_, ZSTD_c_checksumFlag, 0);
  } else if (compression_ == STASIS_COMPRESS_LZ4) {
    lz4_state_ = arena.alloc(static_cast<size_t>(compressors_->lz4_state_size));
    if (!lz4_state_) {
      error << "out of checkpoint scratch memory for lz4";
      return false;
    }
  }
  long fd = STASIS_SYS3(SYS_open, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error << "cannot create " << path << " (errno " << -fd << ")";
    return false;
  }
  fd_ = static_cast<int>(fd);
  StasisImageHeader header = {};
  __builtin_memcpy(header.magic, STASIS_IMAGE_MAGIC, 8);
  header.format_version = STASIS_IMAGE_VERSION;
  header.header_size = sizeof header;
  str_copy(header.producer, "stasis " STASIS_VERSION, sizeof header.producer);
  str_copy(header.arch, "x86_64", sizeof header.arch);
  struct timespec now;
  STASIS_SYS2(SYS_clock_gettime, CLOCK_REALTIME, &now);
  header.created_unix_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000ull + now.tv_nsec;
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  header.xcr0 = (static_cast<uint64_t>(edx) << 32) | eax;
  uint32_t a = 0xd, b, c = 0, d;
  __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
  header.xsave_size = b;
  header.compression = compression_;
  header.header_checksum = XXH3_64bits(&header, sizeof header);
  header_checksum_ = header.header_checksum;
  return write_out(&header, sizeof header);
}

bool ImageWriter::write_all(const char* data, uint64_t size) {
  for (uint64_t done = 0; done < size;) {
    long n = STASIS_SYS3(SYS_write, fd_, data + done, size - done);
    if (n == -EINTR) continue;
    if (n <= 0) {
      failure_ = n == -ENOSPC ? "no space left on the checkpoint device" : "write failed";
      return false;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

bool ImageWriter::flush() {
  if (!write_all(buffer_, buffer_used_)) return false;
  buffer_used_ = 0;
  return true;
}

bool ImageWriter::write_out(const void* data, uint64_t size) {
  if (failure_) return false;
  const char* p = static_cast<const char*>(data);
  if (size >= kChunkBytes) {  // whole chunks go straight to the file
    if (!flush() || !write_all(p, size)) return false;
  } else {
    if (buffer_used_ + size > kBufferBytes && !flush()) return false;
    __builtin_memcpy(buffer_ + buffer_used_, p, size);
    buffer_used_ += size;
  }
  file_offset_ += size;
  return true;
}

bool ImageWriter::put_record(uint32_t type, uint32_t compression, uint64_t arg,
                             const void* payload, uint64_t stored, uint64_t raw) {
  StasisRecordHeader h = {};
  h.type = type;
  h.compression = compression;
  h.stored_size = stored;
  h.raw_size = raw;
  h.arg = arg;
  h.payload_checksum = XXH3_64bits(payload, stored);
  h.header_checksum = XXH3_64bits(&h, offsetof(StasisRecordHeader, header_checksum));
  headers_checksum_ = XXH3_64bits_withSeed(&h, sizeof h, headers_checksum_);
  record_count_++;
  return write_out(&h, sizeof h) && write_out(payload, stored);
}

bool ImageWriter::add_record(uint32_t type, uint64_t arg, const void* payload, uint64_t size) {
  return put_record(type, STASIS_COMPRESS_NONE, arg, payload, size, size);
}

namespace {
bool page_is_zero(const char* page) {
  const uint64_t* words = reinterpret_cast<const uint64_t*>(page);
  uint64_t any = 0;
  for (size_t i = 0; i < 4096 / 8; i++) any |= words[i];
  return any == 0;
}
}  // namespace

bool ImageWriter::add_pages(uint64_t addr, uint64_t len, bool via_proc_mem, bool skip_zero_pages,
                            const char* source) {
  if (source) via_proc_mem = false;
  if (via_proc_mem && proc_mem_fd_ < 0) {
    long fd = STASIS_SYS3(SYS_open, "/proc/self/mem", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
      failure_ = "cannot open /proc/self/mem to save an unreadable region";
      return false;
    }
    proc_mem_fd_ = static_cast<int>(fd);
  }
  for (uint64_t off = 0; off < len; off += kChunkBytes) {
    uint64_t n = len - off < kChunkBytes ? len - off : kChunkBytes;
    // Every chunk is first copied, because the checkpoint thread's own stack is among the memory
    // being saved and changes under the compressor (zstd would encode matches against bytes that
    // no longer hold): the copy is one consistent snapshot, checksummed and compressed as is.
    if (via_proc_mem) {
      long got = STASIS_SYS4(SYS_pread64, proc_mem_fd_, chunk_in_, n, addr + off);
      if (got != static_cast<long>(n)) {
        failure_ = "reading an unreadable region through /proc/self/mem failed";
        return false;
      }
    } else {
      __builtin_memcpy(chunk_in_, (source ? source : reinterpret_cast<const char*>(addr)) + off, n);
    }
    memory_bytes_ += n;
    if (!skip_zero_pages) {
      if (!add_chunk(addr + off, chunk_in_, n)) return false;
      continue;
    }
    // All-zero pages are left out: restart maps these regions zero-filled.
    for (uint64_t page = 0; page < n;) {
      while (page < n && page_is_zero(chunk_in_ + page)) page += 4096;
      uint64_t run = page;
      while (page < n && !page_is_zero(chunk_in_ + page)) page += 4096;
      if (page > run && !add_chunk(addr + off + run, chunk_in_ + run, page - run)) return false;
    }
  }
  return true;
}

// Compressed size in `out` (chunk_out_cap_ bytes of room), or 0: not compressed (none chosen, or
// the compressor failed, and then the bytes are stored as they are).
size_t ImageWriter::compress(const char* src, uint64_t n, char* out) {
  if (compression_ == STASIS_COMPRESS_ZSTD) {
    size_t compressed = compressors_->zstd_compress2(zstd_, out, chunk_out_cap_, src, n);
    return compressors_->zstd_is_error(compressed) ? 0 : compressed;
  }
  if (compression_ == STASIS_COMPRESS_LZ4) {
    int c = compressors_->lz4_compress_fast_ext_state(lz4_state_, src, out, static_cast<int>(n),
                                                      static_cast<int>(chunk_out_cap_), 1);
    return c > 0 ? static_cast<size_t>(c) : 0;
  }
  return 0;
}

bool ImageWriter::add_chunk(uint64_t addr, const char* src, uint64_t n) {
  size_t compressed = compress(src, n, chunk_out_);
  if (compressed > 0 && compressed < n)  // incompressible chunks are stored as they are
    return put_record(STASIS_REC_PAGES, compression_, addr, chunk_out_, compressed, n);
  // Stored as is: start the payload on a page boundary so restart can map it from the file.
  uint64_t payload_at = file_offset_ + 2 * sizeof(StasisRecordHeader);
  if ((file_offset_ + sizeof(StasisRecordHeader)) % 4096 != 0 && n % 4096 == 0 &&
      n >= STASIS_MIN_MAPPED_CHUNK) {
    static const char kZeros[4096] = {};
    uint64_t pad = (4096 - payload_at % 4096) % 4096;
    if (!put_record(STASIS_REC_PAD, STASIS_COMPRESS_NONE, 0, kZeros, pad, pad)) return false;
  }
  return put_record(STASIS_REC_PAGES, STASIS_COMPRESS_NONE, addr, src, n, n);
}

bool ImageWriter::add_fd_data(int fd, uint32_t tag, const void* bytes, uint64_t len, int source_fd) {
  for (uint64_t off = 0; off < len; off += kChunkBytes) {
    uint64_t n = len - off < kChunkBytes ? len - off : kChunkBytes;
    if (source_fd >= 0) {
      for (uint64_t got = 0; got < n;) {
        long r = STASIS_SYS4(SYS_pread64, source_fd, chunk_in_ + got, n - got, off + got);
        if (r == -EINTR) continue;
        if (r <= 0) {
          failure_ = "reading a descriptor's contents for the image failed";
          return false;
        }
        got += static_cast<uint64_t>(r);
      }
    } else {
      __builtin_memcpy(chunk_in_, static_cast<const char*>(bytes) + off, n);
    }
    StasisFdDataHeader header = {fd, tag, off};
    char* payload = chunk_out_;
    __builtin_memcpy(payload, &header, sizeof header);
    size_t compressed = compress(chunk_in_, n, payload + sizeof header);
    uint32_t compression = compressed > 0 && compressed < n ? compression_ : STASIS_COMPRESS_NONE;
    if (compression == STASIS_COMPRESS_NONE) {
      __builtin_memcpy(payload + sizeof header, chunk_in_, n);
      compressed = n;
    }
    if (!put_record(STASIS_REC_FD_DATA, compression, static_cast<uint64_t>(fd), payload,
                    sizeof header + compressed, sizeof header + n))
      return false;
  }
  return true;
}

bool ImageWriter::finish() {
  StasisEndRecord end = {record_count_, headers_checksum_, memory_bytes_};
  StasisRecordHeader h = {};
  h.type = STASIS_REC_END;
  h.stored_size = h.raw_size = sizeof end;
  h.payload_checksum = XXH3_64bits(&end, sizeof end);
  h.header_checksum = XXH3_64bits(&h, offsetof(StasisRecordHeader, header_checksum));
  bool ok = write_out(&h, sizeof h) && write_out(&end, sizeof end) && flush();
  if (ok && STASIS_SYS1(SYS_fsync, fd_) != 0) {
    failure_ = "fsync of the image failed";
    ok = false;
  }
  abandon();
  return ok;
}

void ImageWriter::abandon() {
  if (fd_ >= 0) STASIS_SYS1(SYS_close, fd_);
  if (proc_mem_fd_ >= 0) STASIS_SYS1(SYS_close, proc_mem_fd_);
  fd_ = proc_mem_fd_ = -1;
}

}  // namespace stasis::rt
