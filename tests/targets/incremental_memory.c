/* incremental_memory: a large working set of which each step changes a few percent, for
 * incremental checkpoints. Besides the scattered writes it punches holes (MADV_DONTNEED: pages
 * that had data are zero again), zeroes pages by writing, replaces a mapping (munmap + mmap) and
 * grows the heap in place (sbrk), so an increment meets every way memory can differ from its
 * parent.
 * usage: incremental_memory [MIB=64] [STEPS=40] [DELAY_MS=100] [PERCENT=3] [HOLES_UNTIL=STEPS]
 * Holes are punched at steps 2, 7, 12... up to HOLES_UNTIL: a test keeps them before the step it
 * restarts from, because after a restart that mapped memory straight from an uncompressed image,
 * MADV_DONTNEED reads back the image's bytes rather than zeros (a limit of mapped restart).
 * Prints "step N sum S" (a hash of all of that memory) per step, "done sum S" at the end. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ul

static uint64_t hash_words(uint64_t h, const uint64_t *words, size_t count) {
  for (size_t i = 0; i < count; i++) h = (h ^ words[i]) * 0x100000001b3ULL + (h >> 29);
  return h;
}

static uint64_t *map_filled(size_t bytes, uint64_t *seed) {
  uint64_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(p != MAP_FAILED);
  for (size_t i = 0; i < bytes / 8; i++) p[i] = splitmix64(seed);
  return p;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  size_t big_bytes = (size_t)arg_long(argc, argv, 1, 64) << 20;
  long steps = arg_long(argc, argv, 2, 40);
  long delay = arg_long(argc, argv, 3, 100);
  long percent = arg_long(argc, argv, 4, 3);
  long holes_until = arg_long(argc, argv, 5, steps);
  size_t big_pages = big_bytes / PAGE;

  uint64_t seed = 7;
  uint64_t *big = map_filled(big_bytes, &seed);  /* random: compression does not hide sizes */
  size_t side_bytes = 2ul << 20;
  uint64_t *side = map_filled(side_bytes, &seed);
  uint64_t *heap = malloc(1 << 20);
  CHECK(heap != NULL);
  for (size_t i = 0; i < (1 << 20) / 8; i++) heap[i] = splitmix64(&seed);

  uint64_t *brk_words[64];
  int brk_count = 0;
  /* 256 KiB that had data read back as zero: punched at steps 2, 7, 12..., then neither read nor
   * written until the next one, so every checkpoint in between finds no page there (the hash
   * counts them as the zeros they are). */
  size_t hole = 0, hole_words = 0;
  for (long step = 1; step <= steps && brk_count < 64; step++) {
    size_t changes = big_pages * (size_t)percent / 100;
    for (size_t c = 0; c < changes; c++) {
      size_t word = splitmix64(&seed) % big_pages * (PAGE / 8) + splitmix64(&seed) % (PAGE / 8);
      uint64_t value = splitmix64(&seed);
      if (word < hole || word >= hole + hole_words) big[word] = value;
    }
    heap[splitmix64(&seed) % ((1 << 20) / 8)] ^= (uint64_t)step;
    if (step % 5 == 2 && step <= holes_until) {
      hole = splitmix64(&seed) % (big_pages - 64) * (PAGE / 8);
      hole_words = 64 * PAGE / 8;
      CHECK(madvise(big + hole, 64 * PAGE, MADV_DONTNEED) == 0);
    }
    if (step % 7 == 0) { /* a page that had data written to zero (a hole stays a hole) */
      size_t word = splitmix64(&seed) % big_pages * (PAGE / 8);
      if (word < hole || word >= hole + hole_words) memset(big + word, 0, PAGE);
    }
    if (step % 9 == 0) { /* a new mapping, perhaps at the old one's address */
      CHECK(munmap(side, side_bytes) == 0);
      side = map_filled(side_bytes, &seed);
    }
    if (step % 11 == 0) { /* the heap grows in place: a tracked mapping gets longer */
      uint64_t *grown = sbrk(1 << 20);
      CHECK(grown != (void *)-1);
      for (size_t i = 0; i < (1 << 20) / 8; i += 1024) grown[i] = (uint64_t)step;
      brk_words[brk_count++] = grown;
    }
    uint64_t sum = hash_words(FNV_INIT, big, hole);
    static const uint64_t zeros[64 * PAGE / 8];
    sum = hash_words(sum, zeros, hole_words);
    sum = hash_words(sum, big + hole + hole_words, big_bytes / 8 - hole - hole_words);
    sum = hash_words(sum, side, side_bytes / 8);
    sum = hash_words(sum, heap, (1 << 20) / 8);
    for (int b = 0; b < brk_count; b++) sum = hash_words(sum, brk_words[b], (1 << 20) / 8);
    printf("step %ld sum %016llx\n", step, (unsigned long long)sum);
    sleep_ms(delay);
  }
  uint64_t sum = hash_words(FNV_INIT, big, big_bytes / 8);
  sum = hash_words(sum, side, side_bytes / 8);
  printf("done sum %016llx\n", (unsigned long long)sum);
  return 0;
}
