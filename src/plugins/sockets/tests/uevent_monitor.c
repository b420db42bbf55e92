/* uevent_monitor: a device-event socket as libudev's monitor opens it (NETLINK_KOBJECT_UEVENT,
 * udevd's group 2, SO_PASSCRED, a classic BPF filter that passes only messages starting with
 * "libudev"), then STEPS steps. Each step prints what the socket is: its family and protocol,
 * the groups it is bound to, SO_PASSCRED, the filter's length and the verdict the filter gives two
 * messages sent to the socket itself (a program that lost its filter at restart would print
 * "kept" for both). The output is the same in every run.
 * usage: uevent_monitor [STEPS=40] [DELAY_MS=40] */
#include "target_common.h"

#include <linux/filter.h>
#include <linux/netlink.h>
#include <sys/socket.h>

/* Keep a message whose first word is "libu" (big-endian load of bytes 0..3), drop the others. */
static struct sock_filter g_filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x6c696275, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
    BPF_STMT(BPF_RET | BPF_K, 0),
};

/* Sends `text` to the socket itself and says whether it arrived (the filter kept it). */
static const char *verdict(int fd, const char *text) {
  struct sockaddr_nl self;
  socklen_t len = sizeof self;
  CHECK(getsockname(fd, (struct sockaddr *)&self, &len) == 0);
  struct sockaddr_nl to = {.nl_family = AF_NETLINK, .nl_pid = self.nl_pid};
  CHECK(sendto(fd, text, strlen(text), 0, (struct sockaddr *)&to, sizeof to) == (ssize_t)strlen(text));
  char buf[64];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  return n == (ssize_t)strlen(text) ? "kept" : "dropped";
}

int main(int argc, char **argv) {
  line_buffered_stdout();
  long steps = arg_long(argc, argv, 1, 40), delay = arg_long(argc, argv, 2, 40);
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
  CHECK(fd >= 0);
  int on = 1;
  CHECK(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) == 0);
  struct sock_fprog program = {sizeof g_filter / sizeof g_filter[0], g_filter};
  CHECK(setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) == 0);
  struct sockaddr_nl groups = {.nl_family = AF_NETLINK, .nl_groups = 2};
  CHECK(bind(fd, (struct sockaddr *)&groups, sizeof groups) == 0);
  for (long step = 0; step < steps; step++) {
    int domain = 0, protocol = 0, passcred = 0;
    socklen_t len = sizeof domain;
    CHECK(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0);
    len = sizeof protocol;
    CHECK(getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) == 0);
    len = sizeof passcred;
    CHECK(getsockopt(fd, SOL_SOCKET, SO_PASSCRED, &passcred, &len) == 0);
    socklen_t instructions = 0;
    CHECK(getsockopt(fd, SOL_SOCKET, SO_GET_FILTER, NULL, &instructions) == 0);
    struct sockaddr_nl self;
    len = sizeof self;
    CHECK(getsockname(fd, (struct sockaddr *)&self, &len) == 0);
    printf("step %ld netlink=%d uevent=%d groups=%u passcred=%d filter=%u libudev:%s other:%s\n", step,
           domain == AF_NETLINK, protocol == NETLINK_KOBJECT_UEVENT, self.nl_groups, passcred,
           (unsigned)instructions, verdict(fd, "libudev-test"), verdict(fd, "other-test"));
    sleep_ms(delay);
  }
  printf("done\n");
  return 0;
}
