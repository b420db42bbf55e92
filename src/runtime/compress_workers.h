// Chunks of an image compressed on several cores while the image writer writes earlier ones.
//
// The writer runs where libc cannot be trusted (a forked copy of a multi-threaded process, or
// the checkpoint thread while user threads hold libc's locks), so the workers are raw clone()
// threads: stacks and compression contexts come from the checkpoint Arena, hand-off goes through
// futexes, and they call nothing but the compressors' pure functions and raw system calls. They
// share the creating thread's TLS pointer but never touch TLS (no errno, no libc).
//
// Jobs go through a ring in submission order and come back in that order, so the image holds the
// same records in the same order whatever the number of threads. With no workers the writer
// does each job itself as it submits it: the single-thread path.
#pragma once
#include <atomic>

#include "runtime/rt.h"

struct ZSTD_CCtx_s;

namespace stasis::rt {

struct Compressors;

constexpr uint64_t kChunkBytes = 1u << 20;  // raw bytes per PAGES / FD_DATA record at most

// A bump allocator for one zstd context that takes back its newest block when freed: zstd frees
// and re-allocates its workspace when the chunk sizes change, which would otherwise leak.
struct ContextScratch {
  char* base = nullptr;
  uint64_t cap = 0;
  uint64_t used = 0;
  uint64_t newest = 0;  // offset of the newest live block
};

// One thread's compressor state (zstd context or lz4 state), allocated from the Arena.
struct CompressionContext {
  bool init(uint32_t compression, const Compressors* compressors, Arena& arena, LogLine& error);
  // Compressed size of src[0, n) in `out` (cap bytes of room), or 0: stored as is (none chosen,
  // incompressible, or the compressor failed).
  uint64_t compress(const char* src, uint64_t n, char* out, uint64_t cap);
  // The same for memory pages, in zstd's lanes form (STASIS_COMPRESS_ZSTD_LANES) where that is
  // smaller (judged on a sample of a large piece); sets *used to the compression `out` holds.
  uint64_t compress_pages(const char* src, uint64_t n, char* out, uint64_t cap, uint32_t* used);

  uint32_t compression = STASIS_COMPRESS_NONE;
  const Compressors* compressors = nullptr;
  ZSTD_CCtx_s* zstd = nullptr;
  void* lz4_state = nullptr;
  ContextScratch scratch;
  char* lanes = nullptr;      // zstd: a chunk regrouped into lanes (kChunkBytes)
  char* lanes_out = nullptr;  // zstd: its compressed form (lanes_out_cap bytes)
  uint64_t lanes_out_cap = 0;
};

// A run of bytes of a job that becomes one record.
struct JobPiece {
  uint64_t offset;         // in the job's input
  uint64_t len;            // raw bytes
  uint64_t stored;         // bytes in the job's output at out_offset; 0: stored raw from input
  uint64_t out_offset;
  uint32_t compression;    // of the stored bytes (a StasisCompression)
};

enum class JobKind : uint32_t { kRecord, kPages, kFdData };

struct CompressJob {
  // Filled by the writer before submitting.
  JobKind kind;
  uint32_t record_type;     // kRecord
  uint64_t arg;             // kRecord: the record's arg; kPages: address of input[0]
  uint64_t len;             // bytes in input
  bool skip_zero_pages;     // kPages
  StasisFdDataHeader fd_header;  // kFdData
  char* input;
  // Filled by whoever prepares it.
  char* output;
  uint32_t piece_count;
  JobPiece pieces[kChunkBytes / 4096 / 2 + 1];  // at most every other page is a run
  std::atomic<uint32_t> prepared;  // futex word: 1 once the pieces are ready to write
};

class CompressPipeline {
 public:
  // `threads`: how many threads compress, the writer included (1: no workers). With fewer
  // workers started than asked (no memory, clone refused) it goes on with those it has.
  // False when not even the writer's own job and context fit in the Arena.
  bool start(uint32_t threads, uint32_t compression, const Compressors* compressors, Arena& arena,
             LogLine& error);
  // Submitting: while !has_room(), write and retire oldest(); then fill to_fill() and submit().
  bool has_room() const { return submitted_ - written_ < job_count_; }
  CompressJob& to_fill() { return jobs_[submitted_ % job_count_]; }
  void submit();
  bool empty() const { return submitted_ == written_; }
  // The oldest submitted job, prepared (waits, and compresses queued jobs itself meanwhile).
  CompressJob& oldest();
  void retire_oldest() { written_++; }
  // Stops and joins every worker (idempotent). Queued jobs are dropped.
  void stop();
  uint32_t worker_count() const { return worker_count_; }

 private:
  struct Worker {
    CompressPipeline* pipeline;
    CompressionContext context;
    std::atomic<uint32_t> tid;  // set by clone, cleared (with a futex wake) by the kernel at exit
  };
  static void worker_main(void* worker);
  bool prepare_next(CompressionContext& context);  // false when nothing was queued
  void prepare(CompressJob& job, CompressionContext& context);

  CompressJob* jobs_ = nullptr;
  uint32_t job_count_ = 0;
  uint64_t output_cap_ = 0;
  uint32_t submitted_ = 0;  // writer only
  uint32_t written_ = 0;    // writer only
  // Jobs published to the workers (kStopping once they must exit), and jobs taken by someone.
  std::atomic<uint32_t> published_{0};
  std::atomic<uint32_t> claimed_{0};
  CompressionContext own_context_;  // the writer's
  Worker* workers_ = nullptr;
  uint32_t worker_count_ = 0;
};

// Threads that compress by default: STASIS_COMPRESS_THREADS, else this process's CPUs (at most 8).
uint32_t compression_threads();

}  // namespace stasis::rt
