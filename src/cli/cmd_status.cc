// `stasis status`: what the coordinator and its processes are doing.
#include <fmt/format.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/coord_client.h"
#include "common/error.h"

namespace stasis::cli {
namespace {

std::string local_time(int64_t unix_time) {
  time_t t = static_cast<time_t>(unix_time);
  tm local;
  localtime_r(&t, &local);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

void print_human(const nlohmann::json& status) {
  const auto& coordinator = status.at("coordinator");
  fmt::print("coordinator {}:{} (pid {}): {}\n", coordinator.value("host", "?"),
             coordinator.value("port", 0), coordinator.value("pid", 0), status.value("state", "?"));
  fmt::print("checkpoint directory: {}\n", coordinator.value("ckpt_dir", "?"));
  double interval = coordinator.value("interval", 0.0);
  if (interval > 0) fmt::print("checkpoint interval: {} s\n", interval);

  const auto& last = status.at("last_checkpoint");
  if (last.is_object()) {
    fmt::print("last checkpoint: generation {} at {} ({:.3f} s): {}\n", last.value("generation", 0),
               local_time(last.value("unix_time", int64_t{0})), last.value("seconds", 0.0),
               last.value("dir", "?"));
  } else {
    fmt::print("last checkpoint: none\n");
  }
  fmt::print("checkpoints done by this coordinator: {}\n", status.value("checkpoints_done", 0));

  const auto& processes = status.at("processes");
  size_t count = status.value("process_count", processes.size());
  fmt::print("{} process{}{}\n", count, count == 1 ? "" : "es",
             count > processes.size() ? fmt::format(" (the first {} listed)", processes.size()) : "");
  if (processes.empty()) return;
  fmt::print("  {:>5} {:>8} {:>8}  {:<16} {:<20} {}\n", "ID", "PID", "ORIG", "HOST", "PROGRAM",
             "STATE");
  for (const auto& p : processes) {
    fmt::print("  {:>5} {:>8} {:>8}  {:<16} {:<20} {}{}\n", p.value("id", 0), p.value("pid", 0),
               p.value("original_pid", 0), p.value("host", ""), p.value("program", ""),
               p.value("state", ""), p.value("restarted", false) ? " (restarted)" : "");
  }
}

class StatusCommand : public Command {
 public:
  const char* name() const override { return "status"; }
  const char* summary() const override {
    return "Show the coordinator, its processes and the last checkpoint";
  }

  void configure(CLI::App& app) override {
    app.add_option("--coord", coord_,
                   "Coordinator HOST:PORT (default: $STASIS_COORD, in a Slurm allocation its first node:7781, else 127.0.0.1:7781)");
    app.add_flag("--json", json_, "Print the coordinator's JSON as it is");
  }

  int run() override {
    CoordConnection connection(coordinator_address(coord_));
    StasisCommand command{};
    command.verb = STASIS_CMD_STATUS;
    bool ok = false;
    std::string text = connection.command(command, ok);
    nlohmann::json status = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!status.is_object())
      throw Error(fmt::format("unexpected answer from the coordinator: {}", text));
    if (!ok) throw Error(status.value("error", "status failed"));
    if (json_) {
      fmt::print("{}\n", text);
    } else {
      try {
        print_human(status);
      } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("unexpected status from the coordinator: {}", e.what()));
      }
    }
    return 0;
  }

 private:
  std::string coord_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_status_command() { return std::make_unique<StatusCommand>(); }

}  // namespace stasis::cli
