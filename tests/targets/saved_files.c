/* saved_files: named files whose contents `stasis launch --save-files` puts into the image. In DIR:
 *   input.txt     written first, then read sequentially (the test deletes or changes it between
 *                 the kill and the restart: restart must put the saved contents back)
 *   notes.txt     one line rewritten in place at every step (the killed run changes it after the
 *                 checkpoint: restart must bring back the checkpoint's version)
 *   progress.txt  O_APPEND, one line per step (restart cuts it back, it is not "changed")
 * usage: saved_files DIR [STEPS=60] [DELAY_MS=50] */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <fcntl.h>
#include <unistd.h>

#define NOTE 48

int main(int argc, char **argv) {
  line_buffered_stdout();
  if (argc < 2) {
    fprintf(stderr, "usage: saved_files DIR [STEPS] [DELAY_MS]\n");
    return 2;
  }
  CHECK(chdir(argv[1]) == 0);
  long steps = arg_long(argc, argv, 2, 60);
  long delay = arg_long(argc, argv, 3, 50);

  FILE *in = fopen("input.txt", "w");
  CHECK(in != NULL);
  uint64_t seed = 21;
  for (int i = 0; i < 300; i++)
    fprintf(in, "input %04d %016llx\n", i, (unsigned long long)splitmix64(&seed));
  CHECK(fclose(in) == 0);

  int input = open("input.txt", O_RDONLY);
  CHECK(input >= 0);
  int notes = open("notes.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(notes >= 0);
  int progress = open("progress.txt", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  CHECK(progress >= 0);

  uint64_t sum = FNV_INIT;
  for (long step = 1; step <= steps; step++) {
    char buf[64];
    ssize_t got = read(input, buf, 40);
    CHECK(got >= 0);
    sum = fnv1a(sum, buf, (size_t)got);

    char note[96], previous[NOTE] = {0};
    ssize_t had = pread(notes, previous, NOTE, 0);
    CHECK(had == 0 || had == NOTE);
    sum = fnv1a(sum, previous, NOTE);
    snprintf(note, sizeof note, "notes step %06ld sum %016llx%*s\n", step, (unsigned long long)sum, 9, "");
    CHECK(pwrite(notes, note, NOTE, 0) == NOTE);

    char line[64];
    int n = snprintf(line, sizeof line, "progress %ld\n", step);
    CHECK(write(progress, line, (size_t)n) == n);

    printf("step %ld read %zd off %lld sum %016llx\n", step, got, (long long)lseek(input, 0, SEEK_CUR),
           (unsigned long long)sum);
    sleep_ms(delay);
  }
  printf("done checksum 0x%016llx\n", (unsigned long long)sum);
  return 0;
}
