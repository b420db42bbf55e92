// Framing and the client side of the handshake for the protocol in protocol.h.
// Used by the `stasis` commands and by the in-process runtime, so: no allocation, no stdio, no
// locks; only socket/read/sendmsg/poll system calls, made directly (never through the runtime's
// wrappers of them), each retried on EINTR. Functions return 0 on
// success and -1 on failure with errno set (ECONNRESET when the peer closed the connection,
// EPROTO for a malformed message, ETIMEDOUT when a deadline passed).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "protocol/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

// How long the client handshake and stasis_connect_tcp wait for the coordinator.
#define STASIS_CLIENT_TIMEOUT_MS 10000

// Sends one message: header (magic, version, type, len, arg) then the payload. Never raises
// SIGPIPE. `len` must be <= STASIS_MAX_PAYLOAD.
int stasis_send_msg(int fd, uint16_t type, uint64_t arg, const void* payload, uint32_t len);

// Reads one header and checks magic, version and payload_len <= STASIS_MAX_PAYLOAD (EPROTO).
int stasis_recv_header(int fd, struct StasisMsgHeader* header);

// Reads exactly len bytes (blocking).
int stasis_recv_exact(int fd, void* buf, size_t len);
// Same, giving up with ETIMEDOUT after timeout_ms milliseconds in total (< 0: wait forever).
int stasis_recv_exact_timeout(int fd, void* buf, size_t len, int timeout_ms);

// Reads and throws away len bytes (the rest of a payload nobody wants).
int stasis_discard(int fd, size_t len);

// The MAC a client proves it knows the secret with: HMAC-SHA256(secret, nonce || role as 4 LE
// bytes). Shared with the coordinator so both sides compute it in one place.
void stasis_auth_mac(const uint8_t* secret, size_t secret_len,
                     const uint8_t nonce[STASIS_NONCE_BYTES], uint32_t role,
                     uint8_t mac[STASIS_MAC_BYTES]);

// HELLO / AUTH / AUTH_OK on a connected socket. `info` describes a process (NULL for commands).
// On success stores the coordinator's id for this connection in *client_id (may be NULL).
// On failure returns -1 and writes a one-line reason into `reason` (NUL-terminated, truncated to
// reason_len): the coordinator's refusal text for AUTH_FAIL, else what went wrong locally.
int stasis_client_handshake(int fd, const uint8_t* secret, size_t secret_len, uint32_t role,
                            const struct StasisProcessInfo* info, uint64_t* client_id, char* reason,
                            size_t reason_len);

// Connects a TCP socket (close-on-exec, TCP_NODELAY, blocking) to a numeric IPv4 or IPv6 address,
// waiting at most STASIS_CLIENT_TIMEOUT_MS. Returns the fd or -1 (EINVAL: not a numeric address).
int stasis_connect_tcp(const char* numeric_host, uint16_t port);
// The same in two steps: a TCP socket (close-on-exec) of numeric_host's family, not connected
// (-1 with errno); then connecting it (0, or -1 with errno), within the same timeout.
int stasis_tcp_socket_for(const char* numeric_host);
int stasis_connect_socket(int fd, const char* numeric_host, uint16_t port);

// Connects a stream socket (close-on-exec, blocking) to `name` in the abstract Unix namespace (no
// leading NUL; a host relay's, say). Never waits: -1 with ECONNREFUSED when nobody listens
// there, EAGAIN when its backlog is full, EACCES when the listener is another user's.
int stasis_connect_abstract(const char* name);

#ifdef __cplusplus
}
#endif
