// Writes one image file on the checkpoint path: buffered, checksummed records, PAGES compressed
// with zstd or lz4 (allocating only from the checkpoint Arena) or stored as is. Chunks are
// compressed by a CompressPipeline on several cores while earlier ones are written; records
// reach the file in the order they were added.
#pragma once
#include "runtime/compress_workers.h"
#include "runtime/rt.h"

namespace stasis::rt {

class ImageWriter {
 public:
  ImageWriter() = default;
  ImageWriter(const ImageWriter&) = delete;
  ImageWriter& operator=(const ImageWriter&) = delete;
  ~ImageWriter() { abandon(); }  // no compression thread may outlive the writer it points into
  // Opens `path` (created 0600, truncated). Returns false with `error` set.
  bool open(const char* path, uint32_t compression, Arena& arena, LogLine& error);
  bool add_record(uint32_t type, uint64_t arg, const void* payload, uint64_t size);
  // Writes [addr, addr+len) of this process's memory as PAGES records (split into chunks).
  // `via_proc_mem`: read through /proc/self/mem (for regions without PROT_READ).
  // `skip_zero_pages`: leave out pages that are all zero (only where restart maps zero-filled
  // memory: not over a file, whose content would show through).
  // `source`: where the bytes are read instead (a copy of that memory taken earlier).
  bool add_pages(uint64_t addr, uint64_t len, bool via_proc_mem, bool skip_zero_pages,
                 const char* source = nullptr);
  // Writes a descriptor's variable-length state as FD_DATA records (compressed like pages):
  // `len` bytes from `bytes`, or, with source_fd >= 0, `len` bytes of that file from `offset`;
  // recorded at `offset` of the descriptor's data.
  bool add_fd_data(int fd, uint32_t tag, const void* bytes, uint64_t len, int source_fd, uint64_t offset);
  // Writes END, fsyncs and closes. The caller renames the file into place.
  bool finish();
  // Stops the compression threads and closes (also after a failure).
  void abandon();
  uint64_t bytes_written() const { return file_offset_; }
  uint64_t memory_bytes() const { return memory_bytes_; }
  uint64_t header_checksum() const { return header_checksum_; }
  // After finish(): END's chain of every record header before it, which stands for the whole
  // file (each header carries its payload's checksum).
  uint64_t image_checksum() const { return headers_checksum_; }
  const char* failure() const { return failure_; }

 private:
  CompressJob* next_job();  // writes the oldest queued jobs while the ring is full
  bool write_oldest();
  bool drain();
  bool write_raw_pages(uint64_t addr, const char* src, uint64_t n);
  bool write_out(const void* data, uint64_t size);
  bool write_all(const char* data, uint64_t size);
  void start_writeback();  // overlaps the disk's work with producing the rest of the image
  bool flush();
  bool put_record(uint32_t type, uint32_t compression, uint64_t arg, const void* payload,
                  uint64_t stored, uint64_t raw);

  int fd_ = -1;
  int proc_mem_fd_ = -1;
  uint32_t compression_ = STASIS_COMPRESS_NONE;
  char* buffer_ = nullptr;
  uint64_t buffer_used_ = 0;
  CompressPipeline pipeline_;
  uint64_t file_offset_ = 0;     // bytes of the image so far, buffered ones included
  uint64_t bytes_in_file_ = 0;   // bytes handed to write()
  uint64_t writeback_started_ = 0;
  uint64_t record_count_ = 0;
  uint64_t headers_checksum_ = 0;
  uint64_t memory_bytes_ = 0;
  uint64_t header_checksum_ = 0;
  const char* failure_ = nullptr;
  // Every record's header and offset, written as the INDEX record by finish(). Should the arena
  // run out, the image is written without an index (readers then scan its headers).
  void note_in_index(const StasisRecordHeader& header);
  Arena* arena_ = nullptr;
  StasisIndexEntry* index_ = nullptr;
  uint32_t index_count_ = 0, index_capacity_ = 0;
  bool index_lost_ = false;
};

}  // namespace stasis::rt
