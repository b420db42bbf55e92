// The coordinator's log: one line per event.
#pragma once
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <string>

namespace stasis::coordinator {

// One line per event, prefixed with the local time, written with a single write() so lines
// from a daemon and its log readers never interleave.
class Log {
 public:
  explicit Log(int fd) : fd_(fd) {}
  void line(const std::string& text) const {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    tm local;
    localtime_r(&now.tv_sec, &local);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
    std::string out = fmt::format("{}.{:03} {}\n", stamp, now.tv_nsec / 1000000, text);
    ssize_t ignored = write(fd_, out.data(), out.size());
    (void)ignored;
  }

 private:
  int fd_;
};

}  // namespace stasis::coordinator
