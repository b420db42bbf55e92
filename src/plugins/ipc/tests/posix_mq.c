/* posix_mq: POSIX message queues across a checkpoint.
 * usage: posix_mq [STEPS=40] [DELAY_MS=50] [NAME=/stasis-test-mq]
 * A named queue (8 messages of 64 bytes) is open twice: a read-write descriptor (and a dup of
 * it) that sends, and a non-blocking read-only one that receives. A second queue is unlinked
 * right after it is opened and used through its descriptor only. Every step sends messages of
 * several priorities and receives one, so the queues hold messages of mixed priorities at any
 * time; each step prints what it got and the attributes. At the end both are drained. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <mqueue.h>
#include <unistd.h>

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  const char *name = argc > 3 ? argv[3] : "/stasis-test-mq";

  struct mq_attr attr = {0, 8, 64, 0};
  mqd_t sender = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0640, &attr);
  CHECK(sender >= 0);
  mqd_t receiver = mq_open(name, O_RDONLY | O_NONBLOCK);
  CHECK(receiver >= 0);
  int dup_sender = dup(sender);
  CHECK(dup_sender >= 0);
  char hidden_name[64];
  snprintf(hidden_name, sizeof hidden_name, "%s-unlinked", name);
  struct mq_attr small = {0, 4, 32, 0};
  mqd_t hidden = mq_open(hidden_name, O_CREAT | O_EXCL | O_RDWR | O_NONBLOCK, 0600, &small);
  CHECK(hidden >= 0);
  CHECK(mq_unlink(hidden_name) == 0);

  for (int i = 0; i < 4; i++) { /* queued all along: the checkpoint finds mixed priorities */
    char text[16];
    int n = snprintf(text, sizeof text, "initial %d", i);
    CHECK(mq_send(sender, text, (size_t)n, (unsigned)(i * 3 % 4)) == 0);
  }
  for (long step = 1; step <= steps; step++) {
    char text[64];
    int n = snprintf(text, sizeof text, "step %ld low", step);
    CHECK(mq_send(sender, text, (size_t)n, (unsigned)(step % 3)) == 0);
    if (step % 2) {
      n = snprintf(text, sizeof text, "step %ld high", step);
      CHECK(mq_send(dup_sender, text, (size_t)n, 5 + (unsigned)(step % 4)) == 0);
    }
    n = snprintf(text, sizeof text, "hidden %ld", step);
    if (mq_send(hidden, text, (size_t)n, (unsigned)(step % 2)) != 0) CHECK(errno == EAGAIN);
    char got[65] = "", got_hidden[33] = "";
    unsigned prio = 0, prio_hidden = 0;
    ssize_t r = mq_receive(receiver, got, 64, &prio);
    if (r >= 0) got[r] = 0;
    char extra[65] = "-"; /* as many out as in: the queue never fills */
    unsigned prio_extra = 0;
    if (step % 2 && (r = mq_receive(receiver, extra, 64, &prio_extra)) >= 0) extra[r] = 0;
    if (step % 3 == 0) {
      r = mq_receive(hidden, got_hidden, 32, &prio_hidden);
      if (r >= 0) got_hidden[r] = 0;
    }
    struct mq_attr now, rx;
    CHECK(mq_getattr(sender, &now) == 0 && mq_getattr(receiver, &rx) == 0);
    printf("step %ld got '%s' prio %u, '%s' prio %u hidden '%s' queued %ld (max %ld size %ld, receiver flags %lx)\n",
           step, got, prio, extra, prio_extra, got_hidden, now.mq_curmsgs, now.mq_maxmsg, now.mq_msgsize,
           rx.mq_flags);
    sleep_ms(delay);
  }
  char got[65];
  unsigned prio;
  ssize_t r;
  while ((r = mq_receive(receiver, got, 64, &prio)) >= 0) printf("left: '%.*s' prio %u\n", (int)r, got, prio);
  while ((r = mq_receive(hidden, got, 32, &prio)) >= 0) printf("left hidden: '%.*s' prio %u\n", (int)r, got, prio);
  CHECK(mq_unlink(name) == 0);
  printf("done\n");
  return 0;
}
