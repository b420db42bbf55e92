/* slurm_task: one task of a Slurm job step, with deterministic output that names the task.
 * usage: slurm_task [STEPS=100] [DELAY_MS=50] [env]
 * The task number comes from SLURM_PROCID (0 without one) and seeds the values, so two tasks
 * print different lines: "task R step N value V" per step, "task R done checksum 0x..." at the
 * end. A restarted task keeps the number it read at start. Exits with status R. With "env", the
 * last step is followed by "task R env host=H SLURM_JOB_ID=... SLURM_STEP_ID=...
 * SLURM_JOB_NODELIST=... SLURMD_NODENAME=...": its host name and the job step its environment
 * names at that moment (after a restart: the new one's). */
#include "target_common.h" /* first: defines _GNU_SOURCE */

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 100);
  long delay = arg_long(argc, argv, 2, 50);
  const char *procid = getenv("SLURM_PROCID");
  int task = procid ? atoi(procid) : 0;

  uint64_t seed = 1000 + (uint64_t)task, checksum = FNV_INIT;
  uint64_t *heap = calloc(1024, sizeof(uint64_t));
  CHECK(heap != NULL);
  for (long step = 1; step <= steps; step++) {
    uint64_t v = splitmix64(&seed);
    heap[step % 1024] ^= v;
    checksum = fnv1a(checksum, &v, sizeof v);
    printf("task %d step %ld value %llu\n", task, step, (unsigned long long)(v % 1000000007ULL));
    sleep_ms(delay);
  }
  if (argc > 3 && strcmp(argv[3], "env") == 0) {
    char host[256] = "";
    CHECK(gethostname(host, sizeof host - 1) == 0);
    const char *names[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NODELIST", "SLURMD_NODENAME"};
    printf("task %d env host=%s", task, host);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      printf(" %s=%s", names[i], getenv(names[i]) ? getenv(names[i]) : "");
    printf("\n");
  }
  checksum = fnv1a(checksum, heap, 1024 * sizeof(uint64_t));
  printf("task %d done checksum 0x%016llx\n", task, (unsigned long long)checksum);
  free(heap);
  return task;
}
