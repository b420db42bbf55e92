// The coordinator's name service for plugins (include/stasis/plugin.h, docs/plugin-api.md).
//
// Publishing and withdrawing go over the process's own coordinator connection, so the entries
// belong to the process: the coordinator drops them when it leaves, and a computation killed
// after a checkpoint leaves nothing a restart of that checkpoint could take for its own.
// Lookups need an answer, and the process's connection is read by its checkpoint thread alone
// (barriers come on it): each lookup opens a command connection of its own, with the same HMAC
// handshake, for the length of that one request. No allocation, no stdio: usable from every
// plugin event and from user threads.
#include <errno.h>
#include <poll.h>
#include <time.h>

#include "protocol/wire.h"
#include "runtime/rt.h"

namespace stasis::rt {
namespace {

constexpr size_t kMaxKey = 255;
constexpr size_t kMaxValue = 3840;  // key '\0' value fits one 4 KiB buffer on the stack

long monotonic_ms() { return static_cast<long>(monotonic_ns() / 1000000); }

// An authenticated command connection to the computation's coordinator, or -1.
int open_lookup_connection() {
  int fd = stasis_connect_tcp(g_config.coord_host, g_config.coord_port);
  if (fd < 0) return -1;
  char reason[128];
  if (stasis_client_handshake(fd, g_config.secret, sizeof g_config.secret, STASIS_ROLE_COMMAND, nullptr, nullptr,
                              reason, sizeof reason) != 0) {
    STASIS_SYS1(SYS_close, fd);
    return -1;
  }
  return fd;
}

// Sends one request and reads its NS_REPLY, waiting at most wait_ms (< 0: the client timeout)
// for it. Copies up to `cap` bytes of the value; returns its whole length, or -1.
long ns_request(uint16_t type, const char* key, void* out, uint32_t cap, int wait_ms) {
  size_t key_len = str_len(key);
  if (key_len == 0 || key_len > kMaxKey || g_config.coord_port == 0) return -1;
  int fd = open_lookup_connection();
  if (fd < 0) return -1;
  long result = -1;
  StasisMsgHeader header;
  long deadline = monotonic_ms() + (wait_ms < 0 ? STASIS_CLIENT_TIMEOUT_MS : wait_ms);
  pollfd readable = {fd, POLLIN, 0};
  bool answered = false;
  if (stasis_send_msg(fd, type, 0, key, static_cast<uint32_t>(key_len)) == 0) {
    for (long left; !answered && (left = deadline - monotonic_ms()) > 0;) {
      timespec timeout = {left / 1000, (left % 1000) * 1000000};
      long ready = STASIS_SYS5(SYS_ppoll, &readable, 1, &timeout, nullptr, 0);
      if (ready < 0 && ready != -EINTR) break;
      answered = ready > 0;
    }
  }
  if (answered && stasis_recv_header(fd, &header) == 0 && header.type == STASIS_MSG_NS_REPLY) {
    uint32_t kept = header.payload_len < cap ? header.payload_len : cap;
    if (stasis_recv_exact_timeout(fd, out, kept, STASIS_CLIENT_TIMEOUT_MS) == 0 && header.reserved == 0)
      result = header.payload_len;
  }
  STASIS_SYS1(SYS_close, fd);  // the rest of a truncated value goes with the connection
  return result;
}

}  // namespace
}  // namespace stasis::rt

using namespace stasis::rt;

extern "C" __attribute__((visibility("default"))) int stasis_plugin_ns_publish(const char* key, const void* value,
                                                                                uint32_t len) {
  size_t key_len = str_len(key);
  if (key_len == 0 || key_len > kMaxKey || len > kMaxValue || !coordinator_joined()) return -1;
  char payload[kMaxKey + 1 + kMaxValue];
  __builtin_memcpy(payload, key, key_len + 1);
  if (len) __builtin_memcpy(payload + key_len + 1, value, len);
  return send_to_coordinator(STASIS_MSG_NS_PUBLISH, 0, payload, static_cast<uint32_t>(key_len + 1 + len)) ? 0 : -1;
}

extern "C" __attribute__((visibility("default"))) int stasis_plugin_ns_withdraw(const char* prefix) {
  size_t prefix_len = str_len(prefix);
  if (prefix_len > kMaxKey || !coordinator_joined()) return -1;
  return send_to_coordinator(STASIS_MSG_NS_WITHDRAW, 0, prefix, static_cast<uint32_t>(prefix_len)) ? 0 : -1;
}

extern "C" __attribute__((visibility("default"))) long stasis_plugin_ns_lookup(const char* key, void* value,
                                                                                uint32_t cap, int wait_ms) {
  return ns_request(wait_ms > 0 ? STASIS_MSG_NS_WAIT : STASIS_MSG_NS_LOOKUP, key, value, cap, wait_ms > 0 ? wait_ms : -1);
}

extern "C" __attribute__((visibility("default"))) long stasis_plugin_ns_list(const char* prefix, void* out,
                                                                              uint32_t cap) {
  return ns_request(STASIS_MSG_NS_LIST, prefix, out, cap, -1);
}
