// Text into fixed-size buffers without allocation, locale or stdio: for code that runs while the
// program is stopped (the runtime and plugins loaded into the program), where snprintf may take
// locks a stopped thread holds.
#pragma once
#include <cstddef>

namespace stasis {

// Appends `text` to the NUL-terminated `out` (capacity `cap`), truncating.
inline void append_text(char* out, size_t cap, const char* text) {
  size_t n = 0;
  while (n < cap && out[n]) n++;
  while (*text && n + 1 < cap) out[n++] = *text++;
  if (n < cap) out[n] = 0;
}

// Appends the decimal digits of `v`.
inline void append_uint(char* out, size_t cap, unsigned long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  char text[24];
  for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
  text[n] = 0;
  append_text(out, cap, text);
}

}  // namespace stasis
