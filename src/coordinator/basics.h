// What every part of the coordinator uses: the protocol's fixed-size text fields
// (protocol/protocol.h) to and from std::string, the clock, errno as text.
#pragma once
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

namespace stasis::coordinator {

using Clock = std::chrono::steady_clock;

// A field from the wire: trusted only up to its size, terminated or not.
inline std::string bounded(const char* text, size_t max) {
  return std::string(text, strnlen(text, max));
}

template <size_t N>
void copy_field(char (&field)[N], const std::string& value) {
  size_t n = std::min(N - 1, value.size());
  memcpy(field, value.data(), n);
  field[n] = '\0';
}

inline Clock::time_point after_seconds(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds as the replies and MANIFEST.json show them: to the millisecond.
inline double round_ms(double seconds) { return std::round(seconds * 1000) / 1000; }

inline std::string errno_text() { return strerror(errno); }

}  // namespace stasis::coordinator
