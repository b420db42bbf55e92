// The one text builder for code that runs while the program is stopped (the runtime and the
// plugins loaded into the program), where snprintf may take locks a stopped thread holds: text
// into a fixed-size buffer, without allocation, locale or stdio, truncated when it does not fit.
#pragma once
#include <cstddef>

namespace stasis {

// Appends to the NUL-terminated text already in `out` (capacity `cap`, which keeps room for the
// NUL): FixedText(path, sizeof path) << dir << "/." << kind << "-" << number;
class FixedText {
 public:
  FixedText(char* out, size_t cap) : out_(out), cap_(cap) {
    while (len_ < cap_ && out_[len_]) len_++;
  }
  FixedText& operator<<(const char* text) {
    while (text && *text && len_ < cap_ && cap_ - len_ > 1) out_[len_++] = *text++;
    if (len_ < cap_) out_[len_] = 0;
    return *this;
  }
  FixedText& operator<<(unsigned long long v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    return put_reversed(digits, n);
  }
  FixedText& operator<<(long long v) {
    if (v < 0) *this << "-";
    return *this << (v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v));
  }
  FixedText& operator<<(unsigned long v) { return *this << static_cast<unsigned long long>(v); }
  FixedText& operator<<(unsigned v) { return *this << static_cast<unsigned long long>(v); }
  FixedText& operator<<(long v) { return *this << static_cast<long long>(v); }
  FixedText& operator<<(int v) { return *this << static_cast<long long>(v); }
  // 0x and lower-case hexadecimal digits.
  FixedText& hex(unsigned long long v) {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v);
    return (*this << "0x").put_reversed(digits, n);
  }
  size_t size() const { return len_; }

 private:
  FixedText& put_reversed(const char* digits, int n) {
    char text[25];
    for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
    text[n] = 0;
    return *this << text;
  }
  char* out_;
  size_t cap_;
  size_t len_ = 0;
};

}  // namespace stasis
