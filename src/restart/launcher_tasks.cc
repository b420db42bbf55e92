#include "restart/launcher_tasks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace stasis::restart {

std::vector<size_t> launcher_tasks(const std::vector<int>& parents, const std::vector<pid_t>& saved_ppids,
                                   size_t root) {
  std::vector<size_t> tasks;
  if (parents[root] >= 0 || saved_ppids[root] == 1) return tasks;
  for (size_t i = 0; i < parents.size(); i++)
    if (parents[i] < 0 && saved_ppids[i] == saved_ppids[root]) tasks.push_back(i);
  if (tasks.size() < 2) tasks.clear();
  return tasks;
}

void stand_in_for_launcher(const std::vector<pid_t>& tasks) {
  // What this restart still holds for the tasks (shared descriptions, the pid table) must not
  // outlive them here: a pipe end kept open would keep a task's reader from its end of file.
  close_range(3, ~0U, 0);
  constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGCHLD);
  for (int sig : kPassedOn) sigaddset(&waited, sig);
  sigprocmask(SIG_BLOCK, &waited, nullptr);
  signal(SIGCHLD, SIG_DFL);  // ignored, it would reap the tasks before their status is read
  std::vector<pid_t> running = tasks;
  int worst = 0;
  auto reap = [&] {
    int status;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
      auto it = std::find(running.begin(), running.end(), pid);
      if (it == running.end()) continue;  // an orphan's intermediate, not a task
      running.erase(it);
      worst = std::max(worst, WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
    }
  };
  reap();  // a task that ended before the signals were blocked
  while (!running.empty()) {
    int sig = sigwaitinfo(&waited, nullptr);
    if (sig == SIGCHLD) reap();
    else if (sig > 0)
      for (pid_t task : running) kill(task, sig);
  }
  _exit(worst);
}

}  // namespace stasis::restart
