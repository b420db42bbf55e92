// Joining through this host's relay (src/relay/README.md) when STASIS_RELAY=1: the process's
// connection is a Unix socket to the relay, which answers the same HMAC handshake and speaks for
// the host's processes to the coordinator. No relay yet: the process joins the coordinator
// directly and its checkpoint thread starts one (`stasis relay --daemon`), which the host's
// later processes join; of relays started at once, the first to bind the name stays.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common/fixed_text.h"
#include "protocol/wire.h"
#include "runtime/rt.h"
#include "runtime/settings.h"

extern char** environ;

namespace stasis::rt {
namespace {

// Only the process `stasis launch` started (the first of its computation on its host, one per
// launch, `--join` on other hosts included) starts a relay: the others join directly when there
// is none, so a relay that cannot start is not tried again by every process of a busy host.
bool g_may_start_relay = false;
bool g_relay_missing = false;  // connect found no relay: the checkpoint thread starts one

// "stasis-relay-UID-HOST-PORT" (in the abstract namespace), as relay::socket_name() names it.
void relay_name(char* name, size_t size) {
  __builtin_memset(name, 0, size);
  FixedText(name, size) << "stasis-relay-" << static_cast<unsigned long>(STASIS_SYS0(SYS_getuid)) << "-"
                        << g_config.coord_host << "-" << static_cast<unsigned>(g_config.coord_port);
}

bool starts_with(const char* text, const char* prefix) {
  return __builtin_strncmp(text, prefix, __builtin_strlen(prefix)) == 0;
}

}  // namespace

bool relay_wanted() {
  return g_settings.relay.set && g_settings.relay.text[0] == '1' && g_settings.exe.set;
}

void may_start_host_relay(bool launched) { g_may_start_relay = launched; }

int connect_to_host_relay() {
  if (!relay_wanted()) return -1;
  char name[108];
  relay_name(name, sizeof name);
  int fd = stasis_connect_abstract(name);
  if (fd < 0 && errno == ECONNREFUSED && g_may_start_relay) g_relay_missing = true;  // EAGAIN: busy
  return fd;
}

void start_host_relay_if_missing() {
  if (!g_relay_missing) return;
  g_relay_missing = false;
  char coord[96] = {};
  FixedText(coord, sizeof coord) << g_config.coord_host << ":" << static_cast<unsigned>(g_config.coord_port);
  // exit signal 0: the program gets no SIGCHLD and its wait() never sees this child, which
  // ends as soon as `stasis relay --daemon` has detached the relay (reaped below).
  long pid = STASIS_SYS5(SYS_clone, 0, 0, 0, 0, 0);
  if (pid == 0) {
    // This copy's environment, without what would make the relay a process of the computation,
    // and with the secret this process joined with ($STASIS_SECRET is the launch's, which a
    // restart's coordinator may not share).
    static char secret[sizeof "STASIS_SECRET=" + sizeof g_config.secret_hex] = {};
    FixedText(secret, sizeof secret) << "STASIS_SECRET=" << g_config.secret_hex;
    char** kept = environ;
    for (char** entry = environ; *entry; entry++) {
      if (starts_with(*entry, "LD_PRELOAD=") || starts_with(*entry, "STASIS_LAUNCH_PID=")) continue;
      *kept++ = starts_with(*entry, "STASIS_SECRET=") ? secret : *entry;
    }
    *kept = nullptr;
    const char* argv[] = {"stasis", "relay", "--daemon", "--coord", coord, nullptr};
    STASIS_SYS3(SYS_execve, g_settings.exe.text, argv, environ);
    STASIS_SYS1(SYS_exit_group, 127);
  }
  if (pid > 0) STASIS_SYS4(SYS_wait4, pid, nullptr, __WALL, nullptr);
}

}  // namespace stasis::rt
