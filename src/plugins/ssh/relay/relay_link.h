// The connection between the two halves of an ssh relay (relay_main.cc): how the remote half
// proves it belongs to the computation (and the local half that it does too), and the frames
// that carry the remote command's standard streams and exit status over it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace stasis::ssh {

constexpr size_t kSecretBytes = 32, kTokenBytes = 16, kNonceBytes = 32;

// The computation's secret, from STASIS_SECRET (every process of the computation has it).
bool read_secret(uint8_t secret[kSecretBytes]);

// The handshake, on a blocking socket (each side gives up after 10 s of silence): the remote
// half sends "STSR", the relay's token and a nonce; the local half answers its own nonce and
// HMAC-SHA256(secret, remote nonce || "stasis-ssh-relay local"); the remote half checks it and
// answers HMAC-SHA256(secret, local nonce || "stasis-ssh-relay remote"). The secret never crosses
// the wire. False, with `why`, for a peer that does not prove it.
bool authenticate_to_local(int fd, const uint8_t secret[kSecretBytes], const uint8_t token[kTokenBytes],
                           std::string& why);
bool authenticate_remote(int fd, const uint8_t secret[kSecretBytes], const uint8_t token[kTokenBytes],
                         std::string& why);

// Frames: a type byte, a 4-byte little-endian length, the payload (at most kMaxFramePayload).
enum FrameType : uint8_t {
  kStdinData = 1,  // local -> remote
  kStdinEnd = 2,   // local -> remote: the remote command's standard input ends
  kStdoutData = 3, // remote -> local
  kStderrData = 4, // remote -> local
  kExitStatus = 5, // remote -> local: 4 bytes, what ssh exits with; the last frame
};
constexpr size_t kFrameHeader = 5, kMaxFramePayload = 64 * 1024;

void put_frame(std::string& out, FrameType type, const void* data, size_t len);
// Takes the first complete frame off `in`. False while incomplete; throws nothing: a malformed
// frame (unknown type, oversize) sets `malformed`.
bool take_frame(std::string& in, FrameType& type, std::string& payload, bool& malformed);

// Bytes waiting to go to a descriptor that poll said is writable: writes what it can without
// blocking (at most a pipe buffer's page on a descriptor shared with the program, which stays
// blocking). False when the descriptor is gone (EPIPE and the like).
bool write_some(int fd, std::string& queue, bool fd_is_nonblocking);

// Appends what a nonblocking socket has to `in` (frames are taken off it with take_frame). False
// at end of stream or on an error.
bool read_available(int fd, std::string& in);

std::string hex(const uint8_t* data, size_t len);

}  // namespace stasis::ssh
