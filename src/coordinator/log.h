// The coordinator's log: one line per event.
#pragma once
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace stasis::coordinator {

// One line per event, prefixed with the local time, written with a single write() so lines
// from a daemon and its log readers never interleave.
class Log {
 public:
  explicit Log(int fd) : fd_(fd) {}
  ~Log() { flush_suppressed(); }

  // A line that strangers can cause again and again (refused or dropped connections): at most
  // kLimitedLines per kLimitedWindow for each `kind` (a fixed string), then one line saying how
  // many were left out once the window ends, so that no one can fill the disk through the log.
  void limited(const char* kind, const std::string& text) const {
    auto now = std::chrono::steady_clock::now();
    Limited& limit = limited_[kind];
    if (now - limit.window_start >= kLimitedWindow) {
      report_suppressed(kind, limit);
      limit = Limited{now, 0, 0};
    }
    if (limit.lines < kLimitedLines) {
      limit.lines++;
      line(text);
    } else {
      limit.suppressed++;
    }
  }
  // Says how many lines limited() left out in the windows not yet reported.
  void flush_suppressed() const {
    for (auto& [kind, limit] : limited_) report_suppressed(kind.c_str(), limit);
  }

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
  static constexpr unsigned kLimitedLines = 10;
  static constexpr std::chrono::seconds kLimitedWindow{10};
  struct Limited {
    std::chrono::steady_clock::time_point window_start{};
    unsigned lines = 0;
    uint64_t suppressed = 0;
  };
  void report_suppressed(const char* kind, Limited& limit) const {
    if (limit.suppressed == 0) return;
    line(fmt::format("({} more \"{}\" lines left out: at most {} every {} s)", limit.suppressed,
                     kind, kLimitedLines, kLimitedWindow.count()));
    limit.suppressed = 0;
  }

  int fd_;
  mutable std::unordered_map<std::string, Limited> limited_;
};

}  // namespace stasis::coordinator
