// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104). Everything lives on the stack: this file is
// linked into the preloaded runtime and may run while the application is suspended mid-malloc.
#include "common/hmac.h"

#include <string.h>

typedef struct {
  uint32_t state[8];
  uint64_t total_bytes;
  uint8_t block[64];
  size_t block_used;
} Sha256;

static const uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void sha256_init(Sha256* s) {
  static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->state, initial, sizeof initial);
  s->total_bytes = 0;
  s->block_used = 0;
}

static void sha256_compress(uint32_t state[8], const uint8_t block[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++) {
    w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
           (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
  }
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                  kRoundConstants[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

static void sha256_update(Sha256* s, const uint8_t* data, size_t len) {
  s->total_bytes += len;
  while (len > 0) {
    size_t take = 64 - s->block_used;
    if (take > len) take = len;
    memcpy(s->block + s->block_used, data, take);
    s->block_used += take;
    data += take;
    len -= take;
    if (s->block_used == 64) {
      sha256_compress(s->state, s->block);
      s->block_used = 0;
    }
  }
}

static void sha256_final(Sha256* s, uint8_t out[32]) {
  uint64_t total_bits = s->total_bytes * 8;
  uint8_t pad = 0x80;
  sha256_update(s, &pad, 1);
  uint8_t zero = 0;
  while (s->block_used != 56) sha256_update(s, &zero, 1);
  uint8_t length_be[8];
  for (int i = 0; i < 8; i++) length_be[i] = (uint8_t)(total_bits >> (56 - 8 * i));
  sha256_update(s, length_be, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(s->state[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s->state[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s->state[i] >> 8);
    out[4 * i + 3] = (uint8_t)s->state[i];
  }
}

void stasis_sha256(const uint8_t* data, size_t len, uint8_t out[32]) {
  Sha256 s;
  sha256_init(&s);
  sha256_update(&s, data, len);
  sha256_final(&s, out);
}

void stasis_hmac_sha256(const uint8_t* key, size_t key_len, const uint8_t* msg, size_t msg_len,
                        uint8_t out[32]) {
  uint8_t key_block[64] = {0};
  if (key_len > sizeof key_block) {
    stasis_sha256(key, key_len, key_block);
  } else if (key_len > 0) {
    memcpy(key_block, key, key_len);
  }
  uint8_t pad[64];
  for (int i = 0; i < 64; i++) pad[i] = key_block[i] ^ 0x36;
  uint8_t inner[32];
  Sha256 s;
  sha256_init(&s);
  sha256_update(&s, pad, sizeof pad);
  sha256_update(&s, msg, msg_len);
  sha256_final(&s, inner);

  for (int i = 0; i < 64; i++) pad[i] = key_block[i] ^ 0x5c;
  sha256_init(&s);
  sha256_update(&s, pad, sizeof pad);
  sha256_update(&s, inner, sizeof inner);
  sha256_final(&s, out);
}

static int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int stasis_hex_decode(const char* hex, uint8_t* out, size_t out_len) {
  if (hex == NULL) return -1;
  for (size_t i = 0; i < out_len; i++) {
    // Checking each digit before the next keeps us from reading past an early NUL.
    int high = hex_digit_value(hex[2 * i]);
    if (high < 0) return -1;
    int low = hex_digit_value(hex[2 * i + 1]);
    if (low < 0) return -1;
    out[i] = (uint8_t)(high << 4 | low);
  }
  return 0;
}

void stasis_hex_encode(const uint8_t* data, size_t len, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 0xf];
  }
  out[2 * len] = '\0';
}

int stasis_mac_equal(const uint8_t* a, const uint8_t* b, size_t len) {
  // Accumulate every difference so the time taken does not reveal where the first mismatch is.
  volatile uint8_t difference = 0;
  for (size_t i = 0; i < len; i++) difference |= a[i] ^ b[i];
  return difference == 0;
}
