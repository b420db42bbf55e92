/* wipe_on_fork: memory marked MADV_WIPEONFORK (zeroed in a forked child) and MADV_DONTFORK
 * (absent from it). A forked image writer would save zeros or nothing for them; the contents are
 * checked at every step.
 * With "children", every step also forks a child that says what it sees of both (wiped: zero;
 * kept out: not mapped), and the program prints the marks /proc/self/smaps shows for them and for
 * a third mapping marked MADV_DONTDUMP: a restart must set every mark again, or the children of
 * the restarted program see the parent's secrets.
 * With "raw", a fourth mapping is made at step 15 and marked MADV_WIPEONFORK through syscall(),
 * which no madvise() wrapper sees, and its contents count in the checksum from then on.
 * usage: wipe_on_fork [STEPS=40] [DELAY_MS=50] [children|raw] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The marks among dc (DONTFORK), wf (WIPEONFORK), dd (DONTDUMP) of the mapping starting at addr. */
static void print_marks(const char *name, void *addr) {
  char key[32];
  snprintf(key, sizeof key, "%lx-", (unsigned long)addr);
  FILE *f = fopen("/proc/self/smaps", "r");
  CHECK(f != NULL);
  char line[1024];
  int inside = 0;
  char marks[16] = "";
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) == 0) inside = 1;
    else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      if (strstr(line, " dc")) strcat(marks, "dc ");
      if (strstr(line, " wf")) strcat(marks, "wf ");
      if (strstr(line, " dd")) strcat(marks, "dd ");
      break;
    }
  }
  fclose(f);
  printf(" %s[%s]", name, marks);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  int children = argc > 3 && strcmp(argv[3], "children") == 0;
  int raw = argc > 3 && strcmp(argv[3], "raw") == 0;
  unsigned char *late = NULL;
  size_t size = 1 << 20;
  unsigned char *wipe = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *keep = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *nodump = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(wipe != MAP_FAILED && keep != MAP_FAILED && nodump != MAP_FAILED);
  memset(wipe, 0x5a, size);
  memset(keep, 0xa5, size);
  memset(nodump, 0x3c, size);
  CHECK(madvise(wipe, size, MADV_WIPEONFORK) == 0);
  CHECK(madvise(keep, size, MADV_DONTFORK) == 0);
  CHECK(madvise(nodump, size, MADV_DONTDUMP) == 0);
  for (long step = 1; step <= steps; step++) {
    wipe[step * 4096] = (unsigned char)step;
    keep[step * 4096] = (unsigned char)(step + 1);
    if (raw && step == 15) {
      late = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      CHECK(late != MAP_FAILED);
      memset(late, 0x77, size);
      CHECK(syscall(SYS_madvise, late, size, MADV_WIPEONFORK) == 0);
      printf("step %ld raw marked\n", step);
    }
    uint64_t h = fnv1a(fnv1a(FNV_INIT, wipe, size), keep, size);
    if (late) h = fnv1a(h, late, size);
    printf("step %ld wipe %02x keep %02x checksum %016llx\n", step, wipe[size - 1], keep[size - 1],
           (unsigned long long)h);
    if (children) {
      printf("step %ld marks", step);
      print_marks("wipe", wipe);
      print_marks("keep", keep);
      print_marks("nodump", nodump);
      printf("\n");
      pid_t child = fork();
      CHECK(child >= 0);
      if (child == 0) {
        /* madvise answers ENOMEM for a range that is not mapped: no fault needed to find out. */
        int keep_mapped = madvise(keep, size, MADV_NORMAL) == 0;
        printf("step %ld child sees wipe %02x keep %s\n", step, wipe[step * 4096],
               keep_mapped ? "mapped" : "absent");
        fflush(stdout);
        _exit(0);
      }
      int status;
      CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    sleep_ms(delay);
  }
  printf("done\n");
  return 0;
}
