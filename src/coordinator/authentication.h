// The coordinator's side of the HMAC handshake (protocol/protocol.h): every connection gets a
// fresh nonce in HELLO and proves it knows the secret with HMAC-SHA256(secret, nonce || role).
// The secret is $STASIS_SECRET or random, and sits in an owner-only file while the coordinator
// listens (coord_address.h says where), for the `stasis` commands to read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/protocol.h"

namespace stasis::coordinator {

constexpr size_t kSecretBytes = 32;

struct Secret {
  uint8_t bytes[kSecretBytes] = {};
};

// $STASIS_SECRET (64 hex digits) if set, else fresh random bytes. Throws stasis::Error.
Secret load_or_make_secret();

// Random bytes from the kernel. Throws stasis::Error.
void fill_random(uint8_t* out, size_t len);

// The secret's file exists exactly as long as the coordinator listens.
class SecretFile {
 public:
  SecretFile(std::string path, const Secret& secret);
  ~SecretFile();
  SecretFile(const SecretFile&) = delete;
  SecretFile& operator=(const SecretFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A new connection's HELLO, with a fresh nonce (kept to check the AUTH that answers it).
StasisHello make_hello(uint8_t nonce[STASIS_NONCE_BYTES]);

// "" when `auth` answers `nonce` with the secret as a known role; else why it is refused.
std::string check_auth(const Secret& secret, const uint8_t nonce[STASIS_NONCE_BYTES],
                       const StasisAuth& auth);

}  // namespace stasis::coordinator
