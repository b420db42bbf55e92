/* epoll_ops: epoll interest lists survive a checkpoint: targets, event masks, 64-bit data,
 * EPOLLET, EPOLLONESHOT (armed and fired), EPOLLEXCLUSIVE, and an epoll inside another.
 * usage: epoll_ops [STEPS=60] [DELAY_MS=50] [stale]
 * `outer` watches: eventfd `level` (level-triggered), eventfd `edge` (EPOLLET), eventfd `shared`
 * (EPOLLEXCLUSIVE), the write end of a pipe (EPOLLOUT|EPOLLONESHOT: fires once, re-armed every
 * 10th step) and `inner`, an epoll watching the pipe's read end. Each step makes some of them
 * ready following a fixed pattern, waits, and prints what was reported (sorted by data), then
 * consumes part of it, so readiness is pending whenever the checkpoint lands. Wrong masks, data,
 * targets, or a lost nesting change the output.
 * `stale`: an interest whose descriptor was closed after a dup (epoll keeps the file): the
 * checkpoint must be refused. */
#include "target_common.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum { LEVEL = 1, EDGE, SHARED, PIPE_OUT, INNER, PIPE_IN };
static const uint64_t kTag = 0xfeedf00d00000000ULL; /* data values use all 64 bits */

static void add(int epfd, int fd, uint32_t events, uint64_t data) {
  struct epoll_event ev = {.events = events, .data.u64 = kTag | data};
  CHECK(epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0);
}

static void bump(int fd) {
  uint64_t one = 1;
  CHECK(write(fd, &one, sizeof one) == sizeof one);
}

static void drain(int fd) {
  uint64_t v;
  CHECK(read(fd, &v, sizeof v) == sizeof v);
}

static int compare(const void *a, const void *b) {
  uint64_t x = ((const struct epoll_event *)a)->data.u64, y = ((const struct epoll_event *)b)->data.u64;
  return x < y ? -1 : x > y;
}

/* Waits on epfd and prints the reported events sorted by data; returns a bitmask of tags. */
static unsigned report(const char *name, int epfd) {
  struct epoll_event ev[8];
  int n = epoll_wait(epfd, ev, 8, 0);
  CHECK(n >= 0);
  qsort(ev, (size_t)n, sizeof ev[0], compare);
  unsigned seen = 0;
  printf(" %s[", name);
  for (int i = 0; i < n; i++) {
    CHECK((ev[i].data.u64 & ~0xffULL) == kTag);
    unsigned tag = (unsigned)(ev[i].data.u64 & 0xff);
    seen |= 1u << tag;
    printf("%s%u:%x", i ? " " : "", tag, ev[i].events);
  }
  printf("]");
  return seen;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int stale = argc > 3 && strcmp(argv[3], "stale") == 0;
  int pipe_ends[2];
  CHECK(pipe(pipe_ends) == 0);
  int inner = epoll_create1(0);
  int level = eventfd(0, EFD_NONBLOCK), edge = eventfd(0, EFD_NONBLOCK), shared = eventfd(0, EFD_NONBLOCK);
  int outer = epoll_create1(EPOLL_CLOEXEC);
  CHECK(inner >= 0 && outer >= 0 && level >= 0 && edge >= 0 && shared >= 0);
  add(inner, pipe_ends[0], EPOLLIN, PIPE_IN);
  add(outer, level, EPOLLIN, LEVEL);
  add(outer, edge, EPOLLIN | EPOLLET, EDGE);
  add(outer, shared, EPOLLIN | EPOLLEXCLUSIVE, SHARED);
  add(outer, pipe_ends[1], EPOLLOUT | EPOLLONESHOT, PIPE_OUT);
  add(outer, inner, EPOLLIN, INNER);
  if (stale) { /* the interest stays (the file lives on as `kept`), its number does not */
    int victim = eventfd(0, 0), kept = dup(victim);
    CHECK(victim >= 0 && kept >= 0);
    add(outer, victim, EPOLLIN, 99);
    close(victim);
  }
  for (long step = 1; step <= steps; step++) {
    if (step % 3 == 0) bump(level);
    if (step % 5 == 1) bump(edge);
    if (step % 7 == 2) bump(shared);
    if (step % 4 == 3) CHECK(write(pipe_ends[1], "x", 1) == 1);
    if (step % 10 == 0) { /* re-arm the one-shot */
      struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT, .data.u64 = kTag | PIPE_OUT};
      CHECK(epoll_ctl(outer, EPOLL_CTL_MOD, pipe_ends[1], &ev) == 0);
    }
    printf("step %ld", step);
    unsigned seen = report("outer", outer);
    /* Edge-triggered: a second wait must not report `edge` again while nothing new arrived. */
    unsigned again = report("again", outer);
    if (seen & (1u << INNER)) {
      unsigned in = report("inner", inner);
      if ((in & (1u << PIPE_IN)) && step % 2 == 0) { /* consume one byte every other step */
        char c;
        CHECK(read(pipe_ends[0], &c, 1) == 1);
      }
    }
    if ((seen & (1u << LEVEL)) && step % 6 == 0) drain(level);
    if (seen & (1u << EDGE)) drain(edge);
    if ((seen | again) & (1u << SHARED)) drain(shared);
    /* EPOLLEXCLUSIVE interests cannot be modified: proves the flag came back. */
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = kTag | SHARED};
    int mod = epoll_ctl(outer, EPOLL_CTL_MOD, shared, &ev);
    printf(" exclusive %s\n", mod == -1 && errno == EINVAL ? "yes" : "NO");
    sleep_ms(delay);
  }
  printf("done\n");
  return 0;
}
