/* inotify_ops: inotify watches keep their paths, masks and watch descriptor numbers across a
 * checkpoint, and the next watch added gets the number it would have had.
 * usage: inotify_ops DIR [STEPS=60] [DELAY_MS=50] [unread|moved]
 * In DIR: watch 1 = "watched" (relative path, IN_ONLYDIR), 2 = "other" (removed at once),
 * 3 = "watched/log" (absolute path), 4 = "other/keep" (IN_ATTRIB|IN_ONESHOT), 5 = "other"
 * (removed at once): so the next watch is 6, and 2 and 5 must stay unused. Each step moves a new
 * file into "watched", appends to the log every 3rd step, moves in and deletes a file every 5th,
 * touches "other/keep" at step 40 (its one-shot watch then ends), and at step 25 adds watch 6 on
 * "other" and moves a file there. It prints every event it reads (wd, mask, name). File
 * operations are repeatable (a killed run may have done them already) and each step's operations
 * and reads form one critical section, so a checkpoint never sees unread events.
 * unread: stops reading events at step 3 (the checkpoint must be refused: events would be lost).
 * moved: renames "other/keep" at step 2 (its watch no longer matches its path: refused). */
#include "target_common.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stasis/stasis.h"

static void touch_and_move(const char *to) {
  int fd = open("incoming.tmp", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  close(fd);
  CHECK(rename("incoming.tmp", to) == 0);
}

static int read_events(int in) {
  int count = 0;
  struct pollfd p = {in, POLLIN, 0};
  while (poll(&p, 1, 0) == 1) {
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n = read(in, buf, sizeof buf);
    CHECK(n > 0);
    for (char *at = buf; at < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)at;
      printf(" %d:%x:%s", ev->wd, ev->mask, ev->len ? ev->name : "-");
      at += sizeof *ev + ev->len;
      count++;
    }
  }
  return count;
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  CHECK(argc > 1);
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);
  const char *mode = argc > 4 ? argv[4] : "";
  CHECK(chdir(argv[1]) == 0);
  CHECK((mkdir("watched", 0755) == 0 || errno == EEXIST) && (mkdir("other", 0755) == 0 || errno == EEXIST));
  int fd = open("watched/log", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  close(fd);
  touch_and_move("other/keep");
  char log_path[4096];
  CHECK(getcwd(log_path, sizeof log_path - 16) != NULL);
  strcat(log_path, "/watched/log");

  int in = inotify_init1(IN_CLOEXEC);
  CHECK(in >= 0);
  int wd_dir = inotify_add_watch(in, "watched", IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_ONLYDIR);
  int wd_gap = inotify_add_watch(in, "other", IN_CREATE);
  CHECK(inotify_rm_watch(in, wd_gap) == 0);
  int wd_log = inotify_add_watch(in, log_path, IN_MODIFY | IN_EXCL_UNLINK);
  int wd_keep = inotify_add_watch(in, "other/keep", IN_ATTRIB | IN_ONESHOT);
  int wd_gap2 = inotify_add_watch(in, "other", IN_DELETE);
  CHECK(inotify_rm_watch(in, wd_gap2) == 0);
  printf("watches %d %d %d %d %d; ignored:", wd_dir, wd_gap, wd_log, wd_keep, wd_gap2);
  read_events(in);
  printf("\n");

  int reading = 1, unread = 0;
  for (long step = 1; step <= steps; step++) {
    char name[64];
    stasis_delay_checkpoints();
    if (step == 2 && strcmp(mode, "moved") == 0) CHECK(rename("other/keep", "other/keep.moved") == 0);
    if (step == 3 && strcmp(mode, "unread") == 0) reading = 0;
    snprintf(name, sizeof name, "watched/f%ld", step);
    touch_and_move(name);
    if (step % 3 == 0) {
      fd = open("watched/log", O_WRONLY | O_APPEND);
      CHECK(fd >= 0 && write(fd, "x", 1) == 1);
      close(fd);
    }
    if (step % 5 == 0) {
      snprintf(name, sizeof name, "watched/d%ld", step);
      touch_and_move(name);
      CHECK(unlink(name) == 0);
    }
    if (step == 40) CHECK(chmod("other/keep", 0600) == 0);
    printf("step %ld", step);
    if (step == 25) {
      int wd_new = inotify_add_watch(in, "other", IN_MOVED_TO);
      printf(" new watch %d", wd_new);
      touch_and_move("other/n25");
    }
    if (reading) read_events(in);
    else unread++;
    printf("\n");
    stasis_allow_checkpoints();
    sleep_ms(delay);
  }
  printf("done, %d events left\n", read_events(in));
  return 0;
}
