/* eventfd_ops: eventfd counters, semaphore mode and O_NONBLOCK survive a checkpoint.
 * usage: eventfd_ops [STEPS=60] [DELAY_MS=50]
 * Three eventfds: `counter` gains 3 per step and is read (emptied) every 4th step, so it usually
 * holds a value; `semaphore` (EFD_SEMAPHORE) gains 2 per step and gives back 1 per read, so its
 * count grows; `wide` starts above 2^32 (eventfd() itself only takes 32 bits) and loses 1 per step.
 * Each step prints what the reads returned; the counter and semaphore are nonblocking and an
 * empty read must fail with EAGAIN, the semaphore's count is drained and printed at the end. */
#include "target_common.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

static uint64_t read_count(int fd) {
  uint64_t v = 0;
  ssize_t n = read(fd, &v, sizeof v);
  if (n < 0 && errno == EAGAIN) return 0;
  CHECK(n == sizeof v);
  return v;
}

static void add(int fd, uint64_t v) { CHECK(write(fd, &v, sizeof v) == sizeof v); }

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 60);
  long delay = arg_long(argc, argv, 2, 50);
  int counter = eventfd(0, EFD_NONBLOCK);
  int semaphore = eventfd(5, EFD_SEMAPHORE | EFD_NONBLOCK);
  int wide = eventfd(0, 0);
  CHECK(counter >= 0 && semaphore >= 0 && wide >= 0);
  add(wide, 0x5000000000ULL);
  uint64_t wide_expected = 0x5000000000ULL;
  for (long step = 1; step <= steps; step++) {
    add(counter, 3);
    add(semaphore, 2);
    uint64_t got_counter = step % 4 == 0 ? read_count(counter) : 0;
    uint64_t got_semaphore = read_count(semaphore);
    uint64_t wide_value = read_count(wide); /* blocking: must hold a value */
    CHECK(wide_value == wide_expected);
    add(wide, --wide_expected);
    int empty_errno = 0;
    if (step % 4 == 0) { /* just emptied: nonblocking read must say so */
      uint64_t v;
      empty_errno = read(counter, &v, sizeof v) < 0 ? errno : 0;
    }
    printf("step %ld counter %llu semaphore %llu wide %llx empty %s nonblock %d/%d/%d\n", step,
           (unsigned long long)got_counter, (unsigned long long)got_semaphore,
           (unsigned long long)wide_value,
           step % 4 ? "-" : (empty_errno == EAGAIN ? "EAGAIN" : "WRONG"),
           !!(fcntl(counter, F_GETFL) & O_NONBLOCK), !!(fcntl(semaphore, F_GETFL) & O_NONBLOCK),
           !!(fcntl(wide, F_GETFL) & O_NONBLOCK));
    sleep_ms(delay);
  }
  uint64_t left = 0;
  while (read_count(semaphore) == 1) left++;
  printf("done semaphore held %llu, counter %llu\n", (unsigned long long)left,
         (unsigned long long)read_count(counter));
  return 0;
}
