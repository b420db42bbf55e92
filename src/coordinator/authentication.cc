// See authentication.h.
#include "coordinator/authentication.h"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/hmac.h"
#include "coordinator/basics.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/command_environment.h"
#include "protocol/wire.h"

namespace stasis::coordinator {

Secret load_or_make_secret() {
  Secret secret;
  const std::string env_secret = CommandEnvironment::read().secret;
  if (!env_secret.empty()) {
    if (env_secret.size() != 2 * kSecretBytes ||
        stasis_hex_decode(env_secret.c_str(), secret.bytes, kSecretBytes) != 0) {
      throw Error("STASIS_SECRET must be 64 hex digits (32 bytes)");
    }
  } else {
    fill_random(secret.bytes, kSecretBytes);
  }
  return secret;
}

void fill_random(uint8_t* out, size_t len) {
  while (len > 0) {
    ssize_t n = getrandom(out, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(fmt::format("getrandom failed: {}", errno_text()));
    out += n;
    len -= static_cast<size_t>(n);
  }
}

SecretFile::SecretFile(std::string path, const Secret& secret) : path_(std::move(path)) {
  make_private_dirs(std::filesystem::path(path_).parent_path().string());
  char hex[2 * kSecretBytes + 1];
  stasis_hex_encode(secret.bytes, kSecretBytes, hex);
  write_file_durably(path_, std::string(hex) + "\n");
}

SecretFile::~SecretFile() { unlink(path_.c_str()); }

StasisHello make_hello(uint8_t nonce[STASIS_NONCE_BYTES]) {
  fill_random(nonce, STASIS_NONCE_BYTES);
  StasisHello hello{};
  memcpy(hello.nonce, nonce, sizeof hello.nonce);
  hello.coordinator_pid = static_cast<uint32_t>(getpid());
  return hello;
}

std::string check_auth(const Secret& secret, const uint8_t nonce[STASIS_NONCE_BYTES],
                       const StasisAuth& auth) {
  if (auth.role != STASIS_ROLE_PROCESS && auth.role != STASIS_ROLE_COMMAND &&
      auth.role != STASIS_ROLE_RELAY) {
    return fmt::format("protocol error: unknown role {}", auth.role);
  }
  uint8_t expected[STASIS_MAC_BYTES];
  stasis_auth_mac(secret.bytes, sizeof secret.bytes, nonce, auth.role, expected);
  if (!stasis_mac_equal(expected, auth.mac, sizeof expected)) return "bad secret";
  return "";
}

}  // namespace stasis::coordinator
