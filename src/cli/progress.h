// Progress of a long checkpoint or restart on the command's terminal: bytes done and the rate,
// redrawn in place on stderr, only when stderr is a terminal (never in logs, pipes or files).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace stasis::cli {

class Progress {
 public:
  // `what`: the command and the step ("stasis restart: memory"). Nothing is shown before
  // STASIS_PROGRESS_DELAY_MS (default 500) has passed: short operations print nothing.
  explicit Progress(std::string what);
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // Bytes done so far (monotonic); redraws at most every 250 ms.
  void update(uint64_t bytes, const std::string& detail = "");
  // The final line, ended by a newline, if any line was drawn.
  void finish();

 private:
  std::string line(uint64_t bytes, const std::string& detail) const;
  std::string what_;
  bool enabled_ = false;
  bool shown_ = false, finished_ = false;
  uint64_t last_bytes_ = 0;
  std::string last_detail_;
  std::chrono::steady_clock::time_point start_, next_draw_;
};

// Samples `bytes_done` in a thread of its own while an operation that cannot report its own
// progress runs (nothing runs when progress is not shown); stop() (or the destructor) ends it.
class ProgressSampler {
 public:
  ProgressSampler(std::string what, std::function<uint64_t()> bytes_done);
  ~ProgressSampler() { stop(); }
  void stop();

 private:
  Progress progress_;
  std::function<uint64_t()> bytes_done_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// "12.3 MiB", "1.05 GiB".
std::string human_bytes(double bytes);

}  // namespace stasis::cli
