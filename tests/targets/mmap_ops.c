/* mmap_ops: memory-mapping operations whose results must survive a checkpoint, verified at every
 * step against a model of what each region should contain:
 *   A  anonymous private RW region, one page rewritten per step
 *   B  anonymous region grown with mremap(MAYMOVE), later moved with mremap(MREMAP_FIXED) and
 *      shrunk; pages that appear by growing must read as zero until written
 *   C  read-only region (mprotect PROT_READ), briefly made writable every 5 steps; writing to
 *      it must fault
 *   D  three pages with a PROT_NONE guard page in the middle: reading the guard must fault
 *   E  MAP_SHARED|MAP_ANONYMOUS region
 *   F  private (copy-on-write) mapping of a file this program wrote; pages modified in memory
 *      only; the file on disk must stay as written
 *   G  read-only shared mapping of the same file
 * usage: mmap_ops DIR [STEPS=60] [DELAY_MS=50]   (DIR: where to create mmap_ops.data) */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t PG;

static void fill(unsigned char *p, size_t len, uint64_t key) {
  uint64_t s = key;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = splitmix64(&s);
    memcpy(p + i, &v, 8);
  }
}
static int same(const unsigned char *p, size_t len, uint64_t key) {
  uint64_t s = key;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = splitmix64(&s);
    if (memcmp(p + i, &v, 8) != 0) return 0;
  }
  return 1;
}
static int all_zero(const unsigned char *p, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (p[i]) return 0;
  return 1;
}
static uint64_t key_of(int region, long page, long gen) {
  return ((uint64_t)region << 48) ^ ((uint64_t)page << 24) ^ (uint64_t)gen;
}

static sigjmp_buf g_jb;
static volatile sig_atomic_t g_probing;
static void on_segv(int sig) {
  if (g_probing) siglongjmp(g_jb, 1);
  signal(sig, SIG_DFL);
  raise(sig);
}
static int faults_on_write(volatile unsigned char *p) {
  if (sigsetjmp(g_jb, 1) == 0) {
    g_probing = 1;
    *p = *p;
    g_probing = 0;
    return 0;
  }
  g_probing = 0;
  return 1;
}
static int faults_on_read(volatile unsigned char *p) {
  if (sigsetjmp(g_jb, 1) == 0) {
    g_probing = 1;
    (void)*p;
    g_probing = 0;
    return 0;
  }
  g_probing = 0;
  return 1;
}

static int g_errors;
static void expect(int ok, long step, const char *what, long page) {
  if (!ok) {
    printf("step %ld MISMATCH %s page %ld\n", step, what, page);
    g_errors++;
  }
}

#define NA 32
#define NB_MAX 32
#define NC 8
#define NE 8
#define NF 8

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: mmap_ops DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  const char *dir = argv[1];
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);
  PG = (size_t)sysconf(_SC_PAGESIZE);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
  CHECK(sigaction(SIGBUS, &sa, NULL) == 0);

  /* A */
  long genA[NA];
  unsigned char *A = mmap(NULL, NA * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(A != MAP_FAILED);
  for (long p = 0; p < NA; p++) fill(A + p * PG, PG, key_of(1, p, genA[p] = 0));

  /* B: gen -1 = page must be zero (fresh from growing) */
  long nB = 8, genB[NB_MAX];
  unsigned char *B = mmap(NULL, nB * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(B != MAP_FAILED);
  for (long p = 0; p < nB; p++) fill(B + p * PG, PG, key_of(2, p, genB[p] = 0));

  /* C */
  long genC[NC];
  unsigned char *C = mmap(NULL, NC * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(C != MAP_FAILED);
  for (long p = 0; p < NC; p++) fill(C + p * PG, PG, key_of(3, p, genC[p] = 0));
  CHECK(mprotect(C, NC * PG, PROT_READ) == 0);

  /* D */
  unsigned char *D = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(D != MAP_FAILED);
  fill(D, PG, key_of(4, 0, 0));
  fill(D + 2 * PG, PG, key_of(4, 2, 0));
  CHECK(mprotect(D + PG, PG, PROT_NONE) == 0);

  /* E */
  long genE[NE];
  unsigned char *E = mmap(NULL, NE * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(E != MAP_FAILED);
  for (long p = 0; p < NE; p++) fill(E + p * PG, PG, key_of(5, p, genE[p] = 0));

  /* F, G */
  char path[4096];
  snprintf(path, sizeof path, "%s/mmap_ops.data", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  unsigned char *page = malloc(PG);
  CHECK(page != NULL);
  for (long p = 0; p < NF; p++) {
    fill(page, PG, key_of(6, p, 0));
    CHECK(pwrite(fd, page, PG, (off_t)(p * PG)) == (ssize_t)PG);
  }
  CHECK(fsync(fd) == 0);
  long genF[NF];
  unsigned char *F = mmap(NULL, NF * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  CHECK(F != MAP_FAILED);
  for (long p = 0; p < NF; p++) genF[p] = 0;
  unsigned char *G = mmap(NULL, NF * PG, PROT_READ, MAP_SHARED, fd, 0);
  CHECK(G != MAP_FAILED);

  uint64_t sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    /* ---- verify everything ---- */
    for (long p = 0; p < NA; p++) expect(same(A + p * PG, PG, key_of(1, p, genA[p])), step, "A", p);
    for (long p = 0; p < nB; p++)
      expect(genB[p] < 0 ? all_zero(B + p * PG, PG) : same(B + p * PG, PG, key_of(2, p, genB[p])),
             step, "B", p);
    for (long p = 0; p < NC; p++) expect(same(C + p * PG, PG, key_of(3, p, genC[p])), step, "C", p);
    expect(faults_on_write(C + (step % NC) * PG + 8), step, "C-readonly", step % NC);
    expect(same(D, PG, key_of(4, 0, 0)) && same(D + 2 * PG, PG, key_of(4, 2, 0)), step, "D", 0);
    expect(faults_on_read(D + PG + 16), step, "D-guard", 1);
    for (long p = 0; p < NE; p++) expect(same(E + p * PG, PG, key_of(5, p, genE[p])), step, "E", p);
    for (long p = 0; p < NF; p++) {
      expect(same(F + p * PG, PG, key_of(genF[p] ? 7 : 6, p, genF[p])), step, "F", p);
      expect(same(G + p * PG, PG, key_of(6, p, 0)), step, "G", p);
      CHECK(pread(fd, page, PG, (off_t)(p * PG)) == (ssize_t)PG);
      expect(same(page, PG, key_of(6, p, 0)), step, "F-file", p);
    }

    /* ---- modify ---- */
    long pa = (step * 7) % NA;
    fill(A + pa * PG, PG, key_of(1, pa, ++genA[pa]));
    if (step == 10) { /* grow B, maybe moving it */
      unsigned char *nb = mremap(B, nB * PG, NB_MAX * PG, MREMAP_MAYMOVE);
      CHECK(nb != MAP_FAILED);
      B = nb;
      for (long p = nB; p < NB_MAX; p++) genB[p] = -1;
      nB = NB_MAX;
    } else if (step == 20) { /* move B to a fresh address */
      unsigned char *target = mmap(NULL, nB * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      CHECK(target != MAP_FAILED);
      unsigned char *nb = mremap(B, nB * PG, nB * PG, MREMAP_MAYMOVE | MREMAP_FIXED, target);
      CHECK(nb == target);
      B = nb;
    } else if (step == 35) { /* shrink B */
      unsigned char *nb = mremap(B, nB * PG, 16 * PG, 0);
      CHECK(nb == B);
      nB = 16;
    }
    long pb = (step * 5) % nB;
    if (step % 3 == 0) fill(B + pb * PG, PG, key_of(2, pb, genB[pb] = (genB[pb] < 0 ? 1 : genB[pb] + 1)));
    if (step % 5 == 0) {
      long pc = (step / 5) % NC;
      CHECK(mprotect(C, NC * PG, PROT_READ | PROT_WRITE) == 0);
      fill(C + pc * PG, PG, key_of(3, pc, ++genC[pc]));
      CHECK(mprotect(C, NC * PG, PROT_READ) == 0);
    }
    long pe = step % NE;
    fill(E + pe * PG, PG, key_of(5, pe, ++genE[pe]));
    if (step % 4 == 0) {
      long pf = (step / 4) % NF;
      fill(F + pf * PG, PG, key_of(7, pf, ++genF[pf]));
    }

    uint64_t sa_ = fnv1a(FNV_INIT, A, NA * PG);
    uint64_t sb = fnv1a(FNV_INIT, B, nB * PG);
    uint64_t sf = fnv1a(FNV_INIT, F, NF * PG);
    sum = fnv1a(sum, &sa_, 8);
    sum = fnv1a(sum, &sb, 8);
    sum = fnv1a(sum, &sf, 8);
    printf("step %ld B_pages %ld A %016llx B %016llx F %016llx errors %d\n", step, nB,
           (unsigned long long)sa_, (unsigned long long)sb, (unsigned long long)sf, g_errors);
    sleep_ms(delay);
  }
  printf("done errors %d checksum 0x%016llx\n", g_errors, (unsigned long long)sum);
  return g_errors ? 3 : 0;
}
