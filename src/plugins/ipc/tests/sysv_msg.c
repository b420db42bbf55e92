/* sysv_msg: System V message queues across a checkpoint.
 * usage: sysv_msg [STEPS=40] [DELAY_MS=50] [KEY=0x5157a003]
 * Every step sends two typed messages to a keyed queue and one to a private queue, and takes one
 * back from each (by type from the keyed one), so messages of several types stay queued; each
 * step prints what it received and the queue's IPC_STAT counts. At the end both are drained. */
#include "target_common.h" /* first: defines _GNU_SOURCE */

#include <sys/msg.h>

struct message {
  long type;
  char text[64];
};

static void send(int q, long type, long step, char tag) {
  struct message m = {type, ""};
  int n = snprintf(m.text, sizeof m.text, "step %ld %c type %ld", step, tag, type);
  CHECK(msgsnd(q, &m, (size_t)n + 1, IPC_NOWAIT) == 0);
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40);
  long delay = arg_long(argc, argv, 2, 50);
  key_t key = (key_t)arg_long(argc, argv, 3, 0x5157a003);

  int keyed = msgget(key, IPC_CREAT | IPC_EXCL | 0620);
  int priv = msgget(IPC_PRIVATE, 0600);
  CHECK(keyed >= 0 && priv >= 0);
  for (long step = 1; step <= steps; step++) {
    send(keyed, 1 + step % 3, step, 'a');
    send(keyed, 1 + (step + 1) % 3, step, 'b');
    send(priv, 1, step, 'p');
    struct message got, got_priv;
    ssize_t n = msgrcv(keyed, &got, sizeof got.text, 1 + (step * 2) % 3, IPC_NOWAIT);
    if (n < 0) strcpy(got.text, "(none of that type)");
    if (step % 2 == 0) CHECK(msgrcv(priv, &got_priv, sizeof got_priv.text, 0, IPC_NOWAIT) > 0);
    else strcpy(got_priv.text, "-");
    struct msqid_ds ds;
    CHECK(msgctl(keyed, IPC_STAT, &ds) == 0);
    CHECK(msgget(key, 0) == keyed);
    printf("step %ld got '%s' private '%s' queued %lu bytes %lu mode %o\n", step, got.text, got_priv.text,
           (unsigned long)ds.msg_qnum, (unsigned long)ds.__msg_cbytes, ds.msg_perm.mode & 0777);
    sleep_ms(delay);
  }
  struct message m;
  while (msgrcv(keyed, &m, sizeof m.text, 0, IPC_NOWAIT) > 0) printf("left: type %ld '%s'\n", m.type, m.text);
  while (msgrcv(priv, &m, sizeof m.text, 0, IPC_NOWAIT) > 0) printf("left private: '%s'\n", m.text);
  CHECK(msgctl(keyed, IPC_RMID, NULL) == 0 && msgctl(priv, IPC_RMID, NULL) == 0);
  printf("done\n");
  return 0;
}
