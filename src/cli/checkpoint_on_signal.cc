#include "cli/checkpoint_on_signal.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/coord_client.h"
#include "common/error.h"

namespace stasis::cli {

namespace {

constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};

// One `stasis checkpoint --kill`: true once written (the processes are then being stopped).
bool checkpoint_and_stop(const CoordAddress& coord, std::string& error) {
  try {
    CoordConnection connection(coord);
    StasisCommand command{};
    command.verb = STASIS_CMD_CHECKPOINT;
    command.kill_after = 1;
    bool ok = false;
    nlohmann::json reply = nlohmann::json::parse(connection.command(command, ok), nullptr, false);
    if (ok && reply.is_object()) {
      fmt::print(stderr, "stasis: checkpoint on signal written to {}; the computation is stopped\n",
                 reply.value("dir", "?"));
      return true;
    }
    error = reply.is_object() ? reply.value("error", "the checkpoint failed") : "the checkpoint failed";
  } catch (const Error& e) {
    error = e.what();
  }
  return false;
}

int status_of(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

}  // namespace

int signal_from_name(const std::string& name) {
  std::string bare = name.starts_with("SIG") ? name.substr(3) : name;
  char* end = nullptr;
  long number = strtol(bare.c_str(), &end, 10);
  if (!bare.empty() && !*end && number > 0 && number < NSIG) return static_cast<int>(number);
  for (int sig = 1; sig < NSIG; sig++)
    if (const char* abbrev = sigabbrev_np(sig); abbrev && bare == abbrev) return sig;
  throw Error(fmt::format("--checkpoint-on-signal {}: not a signal (e.g. USR1, SIGTERM, 10)", name));
}

CheckpointOnSignal::CheckpointOnSignal(const std::string& name) : sig_(signal_from_name(name)) {
  if (sig_ == SIGKILL || sig_ == SIGSTOP || sig_ == SIGCHLD)
    throw Error(fmt::format("--checkpoint-on-signal: SIG{} cannot be caught or is the child's", sigabbrev_np(sig_)));
  sigemptyset(&waited_);
  sigaddset(&waited_, SIGCHLD);
  sigaddset(&waited_, sig_);
  for (int s : kPassedOn) sigaddset(&waited_, s);
  sigprocmask(SIG_BLOCK, &waited_, &original_);
}

void CheckpointOnSignal::fork_watcher(const CoordAddress& coord) {
  pid_t child = fork();
  if (child < 0) throw Error(fmt::format("--checkpoint-on-signal: cannot fork: {}", std::strerror(errno)));
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &original_, nullptr);
    return;
  }
  signal(SIGCHLD, SIG_DFL);  // an ignored SIGCHLD would reap the child before its status is read
  bool checkpointed = false, pending = false;
  time_t pending_since = 0;
  std::string error;
  for (;;) {
    struct timespec retry = {0, 500 * 1000 * 1000};
    siginfo_t info;
    int got = pending ? sigtimedwait(&waited_, &info, &retry) : sigwaitinfo(&waited_, &info);
    if (got == SIGCHLD || (got < 0 && pending)) {
      int status;
      if (waitpid(child, &status, WNOHANG) == child) {
        if (pending)
          fmt::print(stderr, "stasis: the computation ended before a checkpoint on SIG{} could be written: {}\n",
                     sigabbrev_np(sig_), error);
        _exit(checkpointed ? 128 + sig_ : status_of(status));
      }
    }
    if (got == sig_ && !checkpointed) {
      if (!pending) pending_since = time(nullptr);
      pending = true;
    } else if (got > 0 && got != SIGCHLD) {
      kill(child, got);
    }
    // Until the computation has joined (a warning right at the job's start: no coordinator or no
    // process yet), the checkpoint is retried every half second for up to a minute; once
    // written, the processes stop and the child ends.
    if (pending && !checkpointed) {
      checkpointed = checkpoint_and_stop(coord, error);
      pending = !checkpointed;
      if (pending && time(nullptr) - pending_since > 60) {
        fmt::print(stderr, "stasis: checkpoint on SIG{} failed: {}\n", sigabbrev_np(sig_), error);
        pending = false;
      }
    }
  }
}

}  // namespace stasis::cli
