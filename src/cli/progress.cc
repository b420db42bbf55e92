#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "coordinator/command_environment.h"

namespace stasis::cli {
std::string human_bytes(double bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", bytes / (1ull << 30));
  return fmt::format("{:.1f} MiB", bytes / (1ull << 20));
}

namespace {

std::chrono::milliseconds first_draw_delay() {
  const std::string text = CommandEnvironment::read().progress_delay_ms;
  return std::chrono::milliseconds(!text.empty() ? std::atol(text.c_str()) : 500);
}

}  // namespace

Progress::Progress(std::string what) : what_(std::move(what)), enabled_(isatty(STDERR_FILENO) == 1) {
  start_ = std::chrono::steady_clock::now();
  next_draw_ = start_ + first_draw_delay();
}

std::string Progress::line(uint64_t bytes, const std::string& detail) const {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return fmt::format("{}: {}{}, {}/s, {:.1f} s", what_, human_bytes(static_cast<double>(bytes)),
                     detail.empty() ? "" : " " + detail,
                     human_bytes(seconds > 0 ? static_cast<double>(bytes) / seconds : 0), seconds);
}

void Progress::update(uint64_t bytes, const std::string& detail) {
  last_bytes_ = bytes;
  last_detail_ = detail;
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (now < next_draw_) return;
  next_draw_ = now + std::chrono::milliseconds(250);
  // Carriage return and erase-to-end: each line replaces the previous one.
  fmt::print(stderr, "\r{}\x1b[K", line(bytes, detail));
  fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (shown_) {
    fmt::print(stderr, "\r{}, done\x1b[K\n", line(last_bytes_, last_detail_));
    fflush(stderr);
  }
}

ProgressSampler::ProgressSampler(std::string what, std::function<uint64_t()> bytes_done)
    : progress_(std::move(what)), bytes_done_(std::move(bytes_done)) {
  if (!progress_.enabled()) return;
  uint64_t base = bytes_done_();
  thread_ = std::thread([this, base] {
    while (!stopping_.load()) {
      progress_.update(std::max(bytes_done_(), base) - base);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    progress_.update(std::max(bytes_done_(), base) - base);
  });
}

void ProgressSampler::stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
  progress_.finish();
}

}  // namespace stasis::cli
