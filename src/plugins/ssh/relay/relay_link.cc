#include "plugins/ssh/relay/relay_link.h"

#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/hmac.h"

namespace stasis::ssh {

namespace {

constexpr char kMagic[4] = {'S', 'T', 'S', 'R'};
constexpr int kHandshakeMs = 10000;

bool exchange(int fd, void* data, size_t len, bool sending) {
  auto* p = static_cast<uint8_t*>(data);
  while (len > 0) {
    struct pollfd waiting = {fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    int ready = poll(&waiting, 1, kHandshakeMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    ssize_t n = sending ? write(fd, p, len) : read(fd, p, len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

void mac_of(const uint8_t secret[kSecretBytes], const uint8_t nonce[kNonceBytes], const char* role,
            uint8_t out[32]) {
  uint8_t message[kNonceBytes + 32];
  size_t role_len = std::strlen(role);
  std::memcpy(message, nonce, kNonceBytes);
  std::memcpy(message + kNonceBytes, role, role_len);
  stasis_hmac_sha256(secret, kSecretBytes, message, kNonceBytes + role_len, out);
}

bool fill_random(uint8_t* out, size_t len) {
  while (len > 0) {
    ssize_t n = getrandom(out, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool read_secret(uint8_t secret[kSecretBytes]) {
  const char* text = getenv("STASIS_SECRET");
  return text && std::strlen(text) == 2 * kSecretBytes && stasis_hex_decode(text, secret, kSecretBytes) == 0;
}

bool authenticate_to_local(int fd, const uint8_t secret[kSecretBytes], const uint8_t token[kTokenBytes],
                           std::string& why) {
  uint8_t hello[sizeof kMagic + kTokenBytes + kNonceBytes];
  std::memcpy(hello, kMagic, sizeof kMagic);
  std::memcpy(hello + sizeof kMagic, token, kTokenBytes);
  uint8_t* nonce = hello + sizeof kMagic + kTokenBytes;
  if (!fill_random(nonce, kNonceBytes)) return why = "no random numbers", false;
  uint8_t answer[kNonceBytes + 32], expected[32];
  if (!exchange(fd, hello, sizeof hello, true) || !exchange(fd, answer, sizeof answer, false))
    return why = "the local relay did not answer", false;
  mac_of(secret, nonce, "stasis-ssh-relay local", expected);
  if (!stasis_mac_equal(answer + kNonceBytes, expected, 32))
    return why = "the local relay does not know the computation's secret", false;
  uint8_t proof[32];
  mac_of(secret, answer, "stasis-ssh-relay remote", proof);
  if (!exchange(fd, proof, sizeof proof, true)) return why = "the local relay went away", false;
  return true;
}

bool authenticate_remote(int fd, const uint8_t secret[kSecretBytes], const uint8_t token[kTokenBytes],
                         std::string& why) {
  uint8_t hello[sizeof kMagic + kTokenBytes + kNonceBytes];
  if (!exchange(fd, hello, sizeof hello, false)) return why = "no greeting", false;
  if (std::memcmp(hello, kMagic, sizeof kMagic) != 0) return why = "not an ssh relay", false;
  if (!stasis_mac_equal(hello + sizeof kMagic, token, kTokenBytes)) return why = "another relay's token", false;
  uint8_t answer[kNonceBytes + 32];
  if (!fill_random(answer, kNonceBytes)) return why = "no random numbers", false;
  mac_of(secret, hello + sizeof kMagic + kTokenBytes, "stasis-ssh-relay local", answer + kNonceBytes);
  uint8_t proof[32], expected[32];
  if (!exchange(fd, answer, sizeof answer, true) || !exchange(fd, proof, sizeof proof, false))
    return why = "no proof of the secret", false;
  mac_of(secret, answer, "stasis-ssh-relay remote", expected);
  if (!stasis_mac_equal(proof, expected, 32)) return why = "a wrong proof of the secret", false;
  return true;
}

void put_frame(std::string& out, FrameType type, const void* data, size_t len) {
  uint8_t header[kFrameHeader] = {type, static_cast<uint8_t>(len), static_cast<uint8_t>(len >> 8),
                                  static_cast<uint8_t>(len >> 16), static_cast<uint8_t>(len >> 24)};
  out.append(reinterpret_cast<const char*>(header), kFrameHeader);
  out.append(static_cast<const char*>(data), len);
}

bool take_frame(std::string& in, FrameType& type, std::string& payload, bool& malformed) {
  malformed = false;
  if (in.size() < kFrameHeader) return false;
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(in[i])); };
  uint32_t len = byte(1) | byte(2) << 8 | byte(3) << 16 | byte(4) << 24;
  if (byte(0) < kStdinData || byte(0) > kExitStatus || len > kMaxFramePayload) return malformed = true, false;
  if (in.size() < kFrameHeader + len) return false;
  type = static_cast<FrameType>(byte(0));
  payload.assign(in, kFrameHeader, len);
  in.erase(0, kFrameHeader + len);
  return true;
}

bool write_some(int fd, std::string& queue, bool fd_is_nonblocking) {
  while (!queue.empty()) {
    size_t len = fd_is_nonblocking ? queue.size() : std::min<size_t>(queue.size(), 4096);
    ssize_t n = write(fd, queue.data(), len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    queue.erase(0, static_cast<size_t>(n));
    if (!fd_is_nonblocking) return true;  // poll again before the next page
  }
  return true;
}

bool read_available(int fd, std::string& in) {
  char buffer[16384];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    in.append(buffer, static_cast<size_t>(n));
    if (static_cast<size_t>(n) < sizeof buffer) return true;
  }
}

std::string hex(const uint8_t* data, size_t len) {
  std::string text(2 * len + 1, '\0');
  stasis_hex_encode(data, len, text.data());
  text.pop_back();
  return text;
}

}  // namespace stasis::ssh
