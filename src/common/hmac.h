// SHA-256 and HMAC-SHA256, used to authenticate every connection to the coordinator.
// Pure computation: no allocation, no locks, callable from the in-process runtime's checkpoint
// path. Kept here (not libcrypto) because the preloaded runtime must stay small and self-contained.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void stasis_sha256(const uint8_t* data, size_t len, uint8_t out[32]);
void stasis_hmac_sha256(const uint8_t* key, size_t key_len, const uint8_t* msg, size_t msg_len,
                        uint8_t out[32]);
// Decodes exactly out_len bytes from 2*out_len hex digits; returns 0 on success, -1 otherwise.
int stasis_hex_decode(const char* hex, uint8_t* out, size_t out_len);
// Writes 2*len hex digits and a terminating NUL into out.
void stasis_hex_encode(const uint8_t* data, size_t len, char* out);
// Constant-time comparison; returns 1 when equal.
int stasis_mac_equal(const uint8_t* a, const uint8_t* b, size_t len);

#ifdef __cplusplus
}
#endif
