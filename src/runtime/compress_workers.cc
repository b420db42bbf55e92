#include "runtime/compress_workers.h"

#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>

#include "runtime/compressors.h"

// Starts a thread of this process on `stack_top` (16-byte aligned) running entry(arg), then
// exit(0). The kernel stores the thread's id in *tid and clears it (waking futex waiters) when
// the thread has exited. Returns the id, or -errno. The thread keeps the caller's TLS pointer.
extern "C" long stasis_clone_thread(unsigned long flags, void* stack_top, std::atomic<uint32_t>* tid,
                                    void (*entry)(void*), void* arg);
__asm__(R"(
  .text
  .globl stasis_clone_thread
  .hidden stasis_clone_thread
  .type stasis_clone_thread, @function
stasis_clone_thread:
  sub $16, %rsi          # entry and arg travel on the new stack: registers are not ours to keep
  mov %rcx, (%rsi)
  mov %r8, 8(%rsi)
  mov %rdx, %r10         # child_tid = parent_tid = tid
  xor %r8d, %r8d         # no new TLS
  mov $56, %eax          # SYS_clone
  syscall
  test %rax, %rax
  jnz 1f
  xor %ebp, %ebp
  pop %rax
  pop %rdi
  call *%rax
  mov $60, %eax          # SYS_exit: this thread only
  xor %edi, %edi
  syscall
  hlt
1:
  ret
  .size stasis_clone_thread, .-stasis_clone_thread
)");

namespace stasis::rt {
namespace {
constexpr uint32_t kStopping = 1u << 31;  // in published_: workers exit
constexpr uint32_t kMaxThreads = 16;
constexpr uint32_t kDefaultMaxThreads = 8;
constexpr uint64_t kWorkerStackBytes = 256u << 10;
constexpr uint64_t kContextScratchBytes = 8u << 20;  // zstd level 1 on 1 MiB needs ~0.6 MiB

// STASIS_COMPRESS_THREADS (settings.h), at most kMaxThreads; 0 if unset or not a number.
uint32_t threads_override() {
  if (!g_settings.compress_threads.set) return 0;
  uint32_t n = 0;
  for (const char* p = g_settings.compress_threads.text; *p >= '0' && *p <= '9' && n <= kMaxThreads; p++)
    n = n * 10 + (*p - '0');
  return n < kMaxThreads ? n : kMaxThreads;
}

void* scratch_alloc(void* opaque, size_t size) {
  auto* s = static_cast<ContextScratch*>(opaque);
  uint64_t start = (s->used + 63) & ~uint64_t(63);
  if (start + size > s->cap) return nullptr;
  s->newest = start;
  s->used = start + size;
  return s->base + start;
}

void scratch_free(void* opaque, void* block) {
  auto* s = static_cast<ContextScratch*>(opaque);
  if (block == s->base + s->newest) s->used = s->newest;  // older blocks stay until the arena goes
}

void futex_wake_one(std::atomic<uint32_t>* word) {
  STASIS_SYS3(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1);
}

bool page_is_zero(const char* page) {
  const uint64_t* words = reinterpret_cast<const uint64_t*>(page);
  uint64_t any = 0;
  for (size_t i = 0; i < 4096 / 8; i++) any |= words[i];
  return any == 0;
}

uint64_t output_bytes_needed() {
  uint64_t bound = ZSTD_COMPRESSBOUND(kChunkBytes);
  if (static_cast<uint64_t>(LZ4_COMPRESSBOUND(kChunkBytes)) > bound) bound = LZ4_COMPRESSBOUND(kChunkBytes);
  // Pieces are compressed one after another: each small one may cost its own margin (zstd adds
  // up to ~80 bytes on a 4 KiB input); and FD_DATA payloads carry their header in front.
  constexpr uint64_t kPieces = sizeof(CompressJob::pieces) / sizeof(JobPiece);
  return bound + kPieces * 128 + sizeof(StasisFdDataHeader);
}
}  // namespace

uint32_t compression_threads() {
  if (const uint32_t wanted = threads_override()) return wanted;
  uint64_t mask[16] = {};
  long bytes = STASIS_SYS3(SYS_sched_getaffinity, 0, sizeof mask, mask);
  uint32_t cpus = 0;
  for (long i = 0; i < bytes / 8; i++) cpus += static_cast<uint32_t>(__builtin_popcountll(mask[i]));
  if (cpus == 0) return 1;
  return cpus < kDefaultMaxThreads ? cpus : kDefaultMaxThreads;
}

bool CompressionContext::init(uint32_t chosen, const Compressors* loaded, Arena& arena, LogLine& error) {
  compression = chosen;
  compressors = loaded;
  if (compression == STASIS_COMPRESS_ZSTD) {
    scratch.base = static_cast<char*>(arena.alloc(kContextScratchBytes));
    scratch.cap = scratch.base ? kContextScratchBytes : 0;
    ZSTD_customMem mem = {scratch_alloc, scratch_free, &scratch};
    zstd = scratch.base ? compressors->zstd_create_cctx_advanced(mem) : nullptr;
    if (!zstd) {
      error << "cannot create a zstd context in checkpoint scratch memory";
      return false;
    }
    compressors->zstd_cctx_set_parameter(zstd, ZSTD_c_compressionLevel, 1);
    compressors->zstd_cctx_set_parameter(zstd, ZSTD_c_checksumFlag, 0);
    lanes_out_cap = ZSTD_COMPRESSBOUND(kChunkBytes);
    lanes = static_cast<char*>(arena.alloc(kChunkBytes));
    lanes_out = static_cast<char*>(arena.alloc(lanes_out_cap));
    if (!lanes || !lanes_out) lanes = lanes_out = nullptr;  // plain zstd only
  } else if (compression == STASIS_COMPRESS_LZ4) {
    lz4_state = arena.alloc(static_cast<size_t>(compressors->lz4_sizeof_state()));
    if (!lz4_state) {
      error << "out of checkpoint scratch memory for lz4";
      return false;
    }
  }
  return true;
}

uint64_t CompressionContext::compress(const char* src, uint64_t n, char* out, uint64_t cap) {
  if (compression == STASIS_COMPRESS_ZSTD) {
    size_t compressed = compressors->zstd_compress2(zstd, out, cap, src, n);
    return compressors->zstd_is_error(compressed) ? 0 : compressed;
  }
  if (compression == STASIS_COMPRESS_LZ4) {
    int c = compressors->lz4_compress_fast_ext_state(lz4_state, src, out, static_cast<int>(n),
                                                     static_cast<int>(cap), 1);
    return c > 0 ? static_cast<uint64_t>(c) : 0;
  }
  return 0;
}

namespace {
constexpr uint64_t kLanesSampleBytes = 64u << 10;  // what decides the form of a large piece

// Regroups n bytes (a multiple of 8) into lanes: byte k of word i goes to out[k * (n / 8) + i].
void split_into_lanes(const char* src, uint64_t n, char* out) {
  const uint64_t words = n / 8;
  const uint64_t* in = reinterpret_cast<const uint64_t*>(src);
  for (uint64_t i = 0; i < words; i++) {
    uint64_t w = in[i];
    for (uint64_t lane = 0; lane < 8; lane++, w >>= 8) out[lane * words + i] = static_cast<char>(w);
  }
}
}  // namespace

uint64_t CompressionContext::compress_pages(const char* src, uint64_t n, char* out, uint64_t cap,
                                            uint32_t* used) {
  *used = compression;
  if (compression != STASIS_COMPRESS_ZSTD || !lanes || n % 8 != 0 || n > kChunkBytes)
    return compress(src, n, out, cap);
  if (n >= 4 * kLanesSampleBytes) {
    // A large piece takes the form that compresses its first 64 KiB better (by 1/64 at least:
    // random bytes, which neither form shrinks, are not regrouped for nothing).
    uint64_t plain = compress(src, kLanesSampleBytes, lanes_out, lanes_out_cap);
    split_into_lanes(src, kLanesSampleBytes, lanes);
    uint64_t in_lanes = compress(lanes, kLanesSampleBytes, lanes_out, lanes_out_cap);
    if (plain == 0) plain = kLanesSampleBytes;
    if (in_lanes == 0 || in_lanes >= plain - plain / 64) return compress(src, n, out, cap);
    split_into_lanes(src, n, lanes);
    *used = STASIS_COMPRESS_ZSTD_LANES;
    return compress(lanes, n, out, cap);
  }
  // A small piece: lanes are tried where plain zstd gains under half and over 1/32.
  uint64_t stored = compress(src, n, out, cap);
  if (stored <= n / 2 || stored >= n - n / 32) return stored;
  split_into_lanes(src, n, lanes);
  uint64_t in_lanes = compress(lanes, n, lanes_out, lanes_out_cap);
  if (in_lanes == 0 || in_lanes >= stored || in_lanes > cap) return stored;
  __builtin_memcpy(out, lanes_out, in_lanes);
  *used = STASIS_COMPRESS_ZSTD_LANES;
  return in_lanes;
}

bool CompressPipeline::start(uint32_t threads, uint32_t compression, const Compressors* compressors,
                             Arena& arena, LogLine& error) {
  if (threads < 1) threads = 1;
  if (threads > kMaxThreads) threads = kMaxThreads;
  output_cap_ = output_bytes_needed();
  // Two jobs per thread: one being compressed while the writer fills or writes the other.
  uint32_t wanted = threads == 1 ? 1 : 2 * threads;
  jobs_ = static_cast<CompressJob*>(arena.alloc(sizeof(CompressJob) * wanted));
  if (!jobs_) {
    error << "out of checkpoint scratch memory";
    return false;
  }
  job_count_ = 0;
  for (uint32_t i = 0; i < wanted; i++) {
    CompressJob& job = jobs_[i];
    job.input = static_cast<char*>(arena.alloc(kChunkBytes));
    job.output = static_cast<char*>(arena.alloc(output_cap_));
    if (!job.input || !job.output) break;
    job.prepared.store(0, std::memory_order_relaxed);
    job_count_++;
  }
  if (job_count_ == 0) {
    error << "out of checkpoint scratch memory";
    return false;
  }
  if (!own_context_.init(compression, compressors, arena, error)) return false;
  uint32_t worker_target = job_count_ / 2 > 0 ? job_count_ / 2 - 1 : 0;
  if (worker_target > threads - 1) worker_target = threads - 1;
  if (worker_target == 0) {
    job_count_ = 1;  // the single-thread path: each job is written as soon as it is prepared
    return true;
  }
  workers_ = static_cast<Worker*>(arena.alloc(sizeof(Worker) * worker_target));
  if (!workers_) return true;
  for (uint32_t i = 0; i < worker_target; i++) {
    Worker& w = workers_[i];
    LogLine no_context;
    char* stack = static_cast<char*>(arena.alloc(kWorkerStackBytes));
    if (!stack || !w.context.init(compression, compressors, arena, no_context)) break;
    w.pipeline = this;
    w.tid.store(0, std::memory_order_relaxed);
    // The thread starts with every signal blocked: no handler of the program may run on it.
    uint64_t all = ~0ull, old = 0;
    STASIS_SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
    long tid = stasis_clone_thread(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                       CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
                                   stack + kWorkerStackBytes, &w.tid, &CompressPipeline::worker_main, &w);
    STASIS_SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &old, nullptr, sizeof old);
    if (tid < 0) {
      LogLine line;
      (line << "cannot start a compression thread (errno " << -tid << "); going on with "
            << worker_count_ << " of " << worker_target).emit();
      break;
    }
    worker_count_++;
  }
  if (worker_count_ == 0) job_count_ = 1;
  return true;
}

void CompressPipeline::submit() {
  CompressJob& job = to_fill();
  job.prepared.store(0, std::memory_order_relaxed);
  submitted_++;
  published_.store(submitted_, std::memory_order_release);
  if (worker_count_) futex_wake_one(&published_);
}

CompressJob& CompressPipeline::oldest() {
  CompressJob& job = jobs_[written_ % job_count_];
  while (job.prepared.load(std::memory_order_acquire) == 0) {
    if (prepare_next(own_context_)) continue;  // rather than wait idle
    futex_wait(&job.prepared, 0);
  }
  return job;
}

bool CompressPipeline::prepare_next(CompressionContext& context) {
  for (;;) {
    uint32_t published = published_.load(std::memory_order_acquire) & ~kStopping;
    uint32_t claimed = claimed_.load(std::memory_order_acquire);
    if (claimed >= published) return false;
    if (claimed_.compare_exchange_weak(claimed, claimed + 1, std::memory_order_acq_rel)) {
      CompressJob& job = jobs_[claimed % job_count_];
      prepare(job, context);
      job.prepared.store(1, std::memory_order_release);
      futex_wake_all(&job.prepared);
      return true;
    }
  }
}

void CompressPipeline::worker_main(void* arg) {
  Worker& self = *static_cast<Worker*>(arg);
  CompressPipeline& pipeline = *self.pipeline;
  for (;;) {
    uint32_t published = pipeline.published_.load(std::memory_order_acquire);
    if (published & kStopping) return;
    if (!pipeline.prepare_next(self.context)) futex_wait(&pipeline.published_, published);
  }
}

void CompressPipeline::prepare(CompressJob& job, CompressionContext& context) {
  job.piece_count = 0;
  if (job.kind == JobKind::kFdData) {
    char* payload = job.output;
    __builtin_memcpy(payload, &job.fd_header, sizeof job.fd_header);
    char* data = payload + sizeof job.fd_header;
    uint64_t stored = context.compress(job.input, job.len, data, output_cap_ - sizeof job.fd_header);
    if (stored == 0 || stored >= job.len) {
      __builtin_memcpy(data, job.input, job.len);
      stored = 0;
    }
    job.pieces[job.piece_count++] = {0, job.len, stored, 0, stored ? context.compression : STASIS_COMPRESS_NONE};
    return;
  }
  if (job.kind != JobKind::kPages) return;
  uint64_t out_used = 0;
  auto add_piece = [&](uint64_t offset, uint64_t len) {
    uint32_t used = STASIS_COMPRESS_NONE;
    uint64_t stored =
        context.compress_pages(job.input + offset, len, job.output + out_used, output_cap_ - out_used, &used);
    if (stored >= len) stored = 0;  // incompressible: stored as it is
    job.pieces[job.piece_count++] = {offset, len, stored, out_used, stored ? used : STASIS_COMPRESS_NONE};
    out_used += stored;
  };
  if (!job.skip_zero_pages) {
    add_piece(0, job.len);
    return;
  }
  // All-zero pages are left out: restart maps these regions zero-filled.
  for (uint64_t page = 0; page < job.len;) {
    while (page < job.len && page_is_zero(job.input + page)) page += 4096;
    uint64_t run = page;
    while (page < job.len && !page_is_zero(job.input + page)) page += 4096;
    if (page > run) add_piece(run, page - run);
  }
}

void CompressPipeline::stop() {
  if (worker_count_ == 0) return;
  published_.fetch_or(kStopping, std::memory_order_release);
  futex_wake_all(&published_);
  for (uint32_t i = 0; i < worker_count_; i++) {
    std::atomic<uint32_t>& tid = workers_[i].tid;
    // Not a private futex: the kernel's wake at the thread's exit is a shared one.
    for (uint32_t id; (id = tid.load(std::memory_order_acquire)) != 0;)
      STASIS_SYS4(SYS_futex, &tid, FUTEX_WAIT, id, nullptr);
  }
  worker_count_ = 0;
}

}  // namespace stasis::rt
