#include "runtime/image_writer.h"

#include <errno.h>
#include <fcntl.h>
#include "image/framing.h"
#include "runtime/compressors.h"

namespace stasis::rt {
namespace {
constexpr uint64_t kBufferBytes = 4u << 20;
// Writeback is started every kWritebackWindow bytes and waited for kWindowsInFlight windows
// later, so the disk writes while the image is still being produced (the final fsync finds little
// left) and the image never holds more than those windows of dirty page cache.
constexpr uint64_t kWritebackWindow = 8u << 20;
constexpr uint64_t kWindowsInFlight = 4;
}  // namespace

bool ImageWriter::open(const char* path, uint32_t compression, Arena& arena, LogLine& error) {
  compression_ = compression;
  arena_ = &arena;
  buffer_ = static_cast<char*>(arena.alloc(kBufferBytes));
  if (!buffer_) {
    error << "out of checkpoint scratch memory";
    return false;
  }
  const Compressors* loaded = compressors();
  long fd = STASIS_SYS3(SYS_open, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error << "cannot create " << path << " (errno " << -fd << ")";
    return false;
  }
  fd_ = static_cast<int>(fd);
  // Uncompressed chunks cost a copy and a write each: more threads would only wait on the disk.
  uint32_t threads = compression_ == STASIS_COMPRESS_NONE ? 1 : compression_threads();
  if (!pipeline_.start(threads, compression_, loaded, arena, error)) return false;  // abandon() stops it
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
  header.header_checksum = image::image_header_checksum(header);
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
  bytes_in_file_ += size;
  start_writeback();
  return true;
}

void ImageWriter::start_writeback() {
  while (bytes_in_file_ - writeback_started_ >= kWritebackWindow) {
    // Both calls are hints: an error (a file system without them) leaves the work to fsync.
    STASIS_SYS4(SYS_sync_file_range, fd_, writeback_started_, kWritebackWindow, SYNC_FILE_RANGE_WRITE);
    writeback_started_ += kWritebackWindow;
    const uint64_t behind = kWindowsInFlight * kWritebackWindow;
    if (writeback_started_ > behind)
      STASIS_SYS4(SYS_sync_file_range, fd_, writeback_started_ - behind - kWritebackWindow, kWritebackWindow,
                  SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
  }
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
  const StasisRecordHeader h = image::frame_record(type, compression, arg, payload, stored, raw);
  headers_checksum_ = image::chain_record_header(headers_checksum_, h);
  record_count_++;
  if (type != STASIS_REC_INDEX) note_in_index(h);
  return write_out(&h, sizeof h) && write_out(payload, stored);
}

void ImageWriter::note_in_index(const StasisRecordHeader& header) {
  if (!index_lost_ && !index_) {
    index_capacity_ = 1024;
    index_ = static_cast<StasisIndexEntry*>(arena_->alloc(sizeof(StasisIndexEntry) * index_capacity_));
  }
  if (index_lost_ || !index_ || (index_count_ == index_capacity_ && !arena_->grow(index_, index_capacity_))) {
    index_lost_ = true;
    return;
  }
  index_[index_count_++] = {file_offset_, header};
}

bool ImageWriter::add_record(uint32_t type, uint64_t arg, const void* payload, uint64_t size) {
  if (pipeline_.empty() || size > kChunkBytes) {
    return drain() && put_record(type, STASIS_COMPRESS_NONE, arg, payload, size, size);
  }
  // Queued behind the chunks still being compressed, so the file keeps the order of the calls.
  CompressJob* job = next_job();
  if (!job) return false;
  job->kind = JobKind::kRecord;
  job->record_type = type;
  job->arg = arg;
  job->len = size;
  __builtin_memcpy(job->input, payload, size);
  pipeline_.submit();
  return true;
}

CompressJob* ImageWriter::next_job() {
  while (!pipeline_.has_room())
    if (!write_oldest()) return nullptr;
  return &pipeline_.to_fill();
}

bool ImageWriter::drain() {
  while (!pipeline_.empty())
    if (!write_oldest()) return false;
  return failure_ == nullptr;
}

bool ImageWriter::write_oldest() {
  CompressJob& job = pipeline_.oldest();
  bool ok = true;
  switch (job.kind) {
    case JobKind::kRecord:
      ok = put_record(job.record_type, STASIS_COMPRESS_NONE, job.arg, job.input, job.len, job.len);
      break;
    case JobKind::kFdData: {
      const JobPiece& piece = job.pieces[0];
      uint64_t header = sizeof job.fd_header;
      ok = put_record(STASIS_REC_FD_DATA, piece.compression,
                      static_cast<uint64_t>(job.fd_header.fd), job.output,
                      header + (piece.stored ? piece.stored : piece.len), header + piece.len);
      break;
    }
    case JobKind::kPages:
      for (uint32_t i = 0; ok && i < job.piece_count; i++) {
        const JobPiece& piece = job.pieces[i];
        ok = piece.stored ? put_record(STASIS_REC_PAGES, piece.compression, job.arg + piece.offset,
                                       job.output + piece.out_offset, piece.stored, piece.len)
                          : write_raw_pages(job.arg + piece.offset, job.input + piece.offset, piece.len);
      }
      break;
  }
  pipeline_.retire_oldest();
  return ok;
}

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
    CompressJob* job = next_job();
    if (!job) return false;
    // Every chunk is first copied, because the checkpoint thread's own stack is among the memory
    // being saved and changes under the compressor (zstd would encode matches against bytes that
    // no longer hold): the copy is one consistent snapshot, checksummed and compressed as is.
    if (via_proc_mem) {
      long got = STASIS_SYS4(SYS_pread64, proc_mem_fd_, job->input, n, addr + off);
      if (got != static_cast<long>(n)) {
        failure_ = "reading an unreadable region through /proc/self/mem failed";
        return false;
      }
    } else {
      __builtin_memcpy(job->input, (source ? source : reinterpret_cast<const char*>(addr)) + off, n);
    }
    memory_bytes_ += n;
    job->kind = JobKind::kPages;
    job->arg = addr + off;
    job->len = n;
    job->skip_zero_pages = skip_zero_pages;
    pipeline_.submit();
  }
  return true;
}

// A PAGES record of bytes stored as they are.
bool ImageWriter::write_raw_pages(uint64_t addr, const char* src, uint64_t n) {
  // Start the payload on a page boundary so restart can map it from the file.
  uint64_t payload_at = file_offset_ + 2 * sizeof(StasisRecordHeader);
  if ((file_offset_ + sizeof(StasisRecordHeader)) % 4096 != 0 && n % 4096 == 0 &&
      n >= STASIS_MIN_MAPPED_CHUNK) {
    static const char kZeros[4096] = {};
    uint64_t pad = (4096 - payload_at % 4096) % 4096;
    if (!put_record(STASIS_REC_PAD, STASIS_COMPRESS_NONE, 0, kZeros, pad, pad)) return false;
  }
  return put_record(STASIS_REC_PAGES, STASIS_COMPRESS_NONE, addr, src, n, n);
}

bool ImageWriter::add_fd_data(int fd, uint32_t tag, const void* bytes, uint64_t len, int source_fd,
                              uint64_t offset) {
  for (uint64_t off = 0; off < len; off += kChunkBytes) {
    uint64_t n = len - off < kChunkBytes ? len - off : kChunkBytes;
    CompressJob* job = next_job();
    if (!job) return false;
    if (source_fd >= 0) {
      for (uint64_t got = 0; got < n;) {
        long r = STASIS_SYS4(SYS_pread64, source_fd, job->input + got, n - got, offset + off + got);
        if (r == -EINTR) continue;
        if (r <= 0) {
          failure_ = "reading a descriptor's contents for the image failed";
          return false;
        }
        got += static_cast<uint64_t>(r);
      }
    } else {
      __builtin_memcpy(job->input, static_cast<const char*>(bytes) + off, n);
    }
    job->kind = JobKind::kFdData;
    job->fd_header = {fd, tag, offset + off};
    job->len = n;
    pipeline_.submit();
  }
  return true;
}

bool ImageWriter::finish() {
  if (!drain()) {
    abandon();
    return false;
  }
  uint64_t index_offset = file_offset_;
  if (index_lost_ || !put_record(STASIS_REC_INDEX, STASIS_COMPRESS_NONE, 0, index_,
                                 sizeof(StasisIndexEntry) * index_count_, sizeof(StasisIndexEntry) * index_count_))
    index_offset = 0;
  if (failure_) {
    abandon();
    return false;
  }
  StasisEndRecord end = {record_count_, headers_checksum_, memory_bytes_, index_offset};
  const StasisRecordHeader h =
      image::frame_record(STASIS_REC_END, STASIS_COMPRESS_NONE, 0, &end, sizeof end, sizeof end);
  bool ok = write_out(&h, sizeof h) && write_out(&end, sizeof end) && flush();
  if (ok && STASIS_SYS1(SYS_fsync, fd_) != 0) {
    failure_ = "fsync of the image failed";
    ok = false;
  }
  abandon();
  return ok;
}

void ImageWriter::abandon() {
  pipeline_.stop();
  if (fd_ >= 0) STASIS_SYS1(SYS_close, fd_);
  if (proc_mem_fd_ >= 0) STASIS_SYS1(SYS_close, proc_mem_fd_);
  fd_ = proc_mem_fd_ = -1;
}

}  // namespace stasis::rt
