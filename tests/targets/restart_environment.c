/* restart_environment: what `stasis restart --setenv NAME=VALUE` changes in a restarted program.
 * usage: restart_environment [STEPS=40] [DELAY_MS=50]
 * Sets STASIS_TEST_REPLACED=before and STASIS_TEST_KEPT=kept with setenv (so environ is glibc's
 * own array) and removes STASIS_TEST_ADDED. Each step prints "step N kept=..." on stdout (the same
 * with or without a restart) and the variables a restart may change on stderr. At the end it sets
 * one more variable (glibc's setenv on whatever environ is now), reports all of them on stderr, and
 * a child shell reports what it inherited. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/wait.h>

static const char *value_of(const char *name) {
  const char *value = getenv(name);
  return value ? value : "(unset)";
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  CHECK(setenv("STASIS_TEST_REPLACED", "before", 1) == 0);
  CHECK(setenv("STASIS_TEST_KEPT", "kept", 1) == 0);
  CHECK(unsetenv("STASIS_TEST_ADDED") == 0);

  for (long step = 1; step <= steps; step++) {
    printf("step %ld kept=%s\n", step, value_of("STASIS_TEST_KEPT"));
    fprintf(stderr, "env at step %ld: replaced=%s added=%s\n", step, value_of("STASIS_TEST_REPLACED"),
            value_of("STASIS_TEST_ADDED"));
    sleep_ms(delay);
  }
  CHECK(setenv("STASIS_TEST_LATER", "later", 1) == 0);
  fprintf(stderr, "env at end: replaced=%s added=%s later=%s kept=%s\n", value_of("STASIS_TEST_REPLACED"),
          value_of("STASIS_TEST_ADDED"), value_of("STASIS_TEST_LATER"), value_of("STASIS_TEST_KEPT"));
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    execl("/bin/sh", "sh", "-c",
          "echo \"env in child: replaced=${STASIS_TEST_REPLACED-(unset)} added=${STASIS_TEST_ADDED-(unset)} "
          "later=$STASIS_TEST_LATER kept=$STASIS_TEST_KEPT\" >&2",
          (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  printf("done kept=%s child exit %d\n", value_of("STASIS_TEST_KEPT"), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
