// The local half of an ssh relay: what a process of the computation runs in place of `ssh HOST
// COMMAND` (the runtime's exec wrappers rewrite it, ../../launchers/remote_launch.cc). It starts
// the real ssh outside the computation, with a remote command that runs the remote half
// (remote_relay.cc) under `stasis launch --join`; the remote half connects back, both prove they
// know the computation's secret, the real ssh ends, and from then on the two halves and their
// TCP connection are ordinary processes and state of the computation, checkpointed and restarted
// (on other hosts too) like any other. The program keeps the descriptors it gave ssh; this
// process exits with what ssh would have: the remote command's status, 255 when the session
// fails.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "plugins/launchers/forwarded_variables.h"
#include "plugins/ssh/relay/relay.h"
#include "plugins/ssh/relay/relay_link.h"
#include "plugins/ssh/relay/ssh_command_line.h"
#include "stasis/stasis.h"

extern char** environ;

namespace stasis::ssh {

namespace {

constexpr int kSessionFailed = 255;  // ssh's status when the session cannot be had

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// This host's address toward `host` (the source address of a route to it), or "" when the name
// does not resolve here (an alias of the ssh configuration: the remote half then uses the
// client address sshd tells it).
std::string address_toward(const std::string& host) {
  struct addrinfo hints = {};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  struct addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found) return "";
  std::string address;
  int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in local = {};
  socklen_t len = sizeof local;
  char text[INET_ADDRSTRLEN];
  if (probe >= 0 && connect(probe, found->ai_addr, found->ai_addrlen) == 0 &&
      getsockname(probe, reinterpret_cast<struct sockaddr*>(&local), &len) == 0 &&
      inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
    address = text;
  if (probe >= 0) close(probe);
  freeaddrinfo(found);
  return address;
}

// The command the real ssh runs on the other host: the remote half, joined to this computation.
std::string remote_command(const Options& options, const SshCommandLine& ssh, int port, const std::string& address,
                           const std::string& token) {
  std::string text = "exec env STASIS_COORD=" + quoted(options.coord);
  for (const char* name : kForwardedVariables)
    if (const char* value = getenv(name)) text += std::string(" ") + name + "=" + quoted(value);
  text += " " + quoted(options.stasis) + " launch --join -- " + quoted(options.self) + " --serve --back " +
          std::to_string(port) + " --token " + token;
  if (!address.empty()) text += " --address " + address;
  for (const auto& word : ssh.launcher_words()) text += " --ssh " + quoted(word);
  return text + " -- " + quoted(ssh.command_text());
}

// The environment of the real ssh: this one without the runtime, so that it stays outside.
std::vector<std::string> outside_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; *entry; entry++) {
    std::string text = *entry;
    if (text.rfind("STASIS_", 0) == 0) continue;
    if (text.rfind("LD_PRELOAD=", 0) == 0) {
      std::string kept;
      for (size_t at = 11; at <= text.size();) {
        size_t end = text.find_first_of(": ", at);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(at, end - at);
        if (!item.empty() && item.find("libstasis") == std::string::npos) kept += (kept.empty() ? "" : ":") + item;
        at = end + 1;
      }
      if (kept.empty()) continue;
      text = "LD_PRELOAD=" + kept;
    }
    out.push_back(text);
  }
  return out;
}

// Starts the real ssh in a grandchild that nobody of the computation waits for (so no process of
// it has a child outside it at a checkpoint); a shell there reports ssh's status on `status_fd`.
void start_outside_ssh(const Options& options, const SshCommandLine& ssh, const std::string& command, int status_fd) {
  std::vector<std::string> words = {"/bin/sh", "-c", "\"$@\" 3>&-; echo $? >&3 2>/dev/null", "stasis-ssh", options.ssh_program};
  words.insert(words.end(), options.ssh_argv.begin() + 1, options.ssh_argv.end() - static_cast<long>(ssh.command.size()));
  words.push_back(command);
  std::vector<std::string> environment = outside_environment();
  std::vector<char*> argv, envp;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t middle = fork();
  if (middle < 0) {
    perror("stasis-ssh-relay: fork");
    exit(kSessionFailed);
  }
  if (middle == 0) {
    // No setsid: like the ssh it stands for, it keeps the program's terminal (a password or
    // passphrase prompt reads /dev/tty) and its process group (^C reaches it).
    if (fork() == 0) {
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);  // the remote half prints nothing; a login script's chatter goes nowhere
      dup2(status_fd, 3);
      close_range(4, ~0u, 0);
      signal(SIGPIPE, SIG_DFL);  // the relay ignores it; ssh and the shell expect the default
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    _exit(0);
  }
  while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Waits on the listener for the remote half to prove itself, or for ssh to end without it (then
// exits with ssh's status). Returns the connection.
int await_remote_half(int listener, int status_fd, const uint8_t secret[kSecretBytes],
                      const uint8_t token[kTokenBytes], const std::string& host) {
  std::string status_text;
  for (;;) {
    struct pollfd waiting[2] = {{listener, POLLIN, 0}, {status_fd, POLLIN, 0}};
    if (poll(waiting, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("stasis-ssh-relay: poll");
      exit(kSessionFailed);
    }
    if (waiting[0].revents & POLLIN) {
      int connection = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) continue;
      std::string why;
      if (authenticate_remote(connection, secret, token, why)) return connection;
      fprintf(stderr, "stasis-ssh-relay: refused a connection for the session to %s: %s\n", host.c_str(), why.c_str());
      close(connection);
    } else if (waiting[1].revents) {
      char buffer[32];
      ssize_t n = read(status_fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        status_text.append(buffer, static_cast<size_t>(n));
        continue;
      }
      // ssh ended before its remote command called back: its status, as ssh's own would be.
      int status = status_text.empty() ? kSessionFailed : atoi(status_text.c_str());
      if (status == 0) {
        fprintf(stderr, "stasis-ssh-relay: the session to %s ended before its command started\n", host.c_str());
        status = kSessionFailed;
      }
      exit(status);
    }
  }
}

// The data phase: standard input to the remote command, its output to this process's standard
// output and error, until its exit status comes.
int relay_streams(int connection, bool read_stdin, const std::string& host) {
  fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK);
  std::string to_remote, from_remote, to_stdout, to_stderr, payload;
  bool stdin_open = true;
  if (!read_stdin) {
    put_frame(to_remote, kStdinEnd, nullptr, 0);
    stdin_open = false;
  }
  constexpr size_t kHighWater = 1 << 20;
  for (;;) {
    struct pollfd fds[4] = {{connection, POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
    if (!to_remote.empty()) fds[0].events |= POLLOUT;
    if (to_stdout.size() + to_stderr.size() > kHighWater) fds[0].events &= ~POLLIN;
    if (stdin_open && to_remote.size() < kHighWater) fds[1] = {0, POLLIN, 0};
    if (!to_stdout.empty()) fds[2] = {1, POLLOUT, 0};
    if (!to_stderr.empty()) fds[3] = {2, POLLOUT, 0};
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      return kSessionFailed;
    }
    if (fds[1].revents) {
      char buffer[16384];
      ssize_t n = read(0, buffer, sizeof buffer);
      if (n > 0) {
        put_frame(to_remote, kStdinData, buffer, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        put_frame(to_remote, kStdinEnd, nullptr, 0);
        stdin_open = false;
      }
    }
    if (fds[2].revents && !write_some(1, to_stdout, false)) to_stdout.clear();  // nobody reads it
    if (fds[3].revents && !write_some(2, to_stderr, false)) to_stderr.clear();
    if ((fds[0].revents & POLLOUT) && !write_some(connection, to_remote, true)) to_remote.clear();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      bool open = read_available(connection, from_remote);
      FrameType type;
      bool malformed = false;
      while (take_frame(from_remote, type, payload, malformed)) {
        if (type == kStdoutData) to_stdout += payload;
        else if (type == kStderrData) to_stderr += payload;
        else if (type == kExitStatus && payload.size() == 4) {
          while (write_some(1, to_stdout, false) && !to_stdout.empty()) {
          }
          while (write_some(2, to_stderr, false) && !to_stderr.empty()) {
          }
          return static_cast<uint8_t>(payload[0]);
        }
      }
      if (malformed || !open) {
        write_some(1, to_stdout, false);
        fprintf(stderr, "stasis-ssh-relay: the session to %s was cut%s\n", host.c_str(),
                malformed ? " (a malformed frame)" : "");
        return kSessionFailed;
      }
    }
  }
}

}  // namespace

int run_local_relay(const Options& options) {
  SshCommandLine ssh;
  std::string refused = parse_ssh_command_line(options.ssh_argv, ssh);
  if (!refused.empty()) {
    fprintf(stderr, "stasis: ssh %s cannot run under Stasis: a session the relay can checkpoint needs a remote "
                    "command and no pseudo-terminal or forwarding\n", refused.c_str());
    return kSessionFailed;
  }
  uint8_t secret[kSecretBytes], token[kTokenBytes];
  if (!read_secret(secret) || getrandom(token, sizeof token, 0) != sizeof token) {
    fprintf(stderr, "stasis-ssh-relay: not in a computation (no STASIS_SECRET)\n");
    return kSessionFailed;
  }
  // No checkpoint while ssh, outside the computation, is starting the remote half: the
  // listener and ssh's status pipe are not state to restore.
  stasis_delay_checkpoints();
  // The listener takes connections only on the address the remote half is told to use (this
  // host's toward the ssh host); on any address only when the host name does not resolve here
  // (an ssh alias: the remote half then uses the client address sshd reports). Whoever connects
  // must still prove it holds the computation's secret.
  const std::string address = address_toward(ssh.host);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in any = {};
  any.sin_family = AF_INET;
  if (!address.empty()) inet_pton(AF_INET, address.c_str(), &any.sin_addr);
  socklen_t len = sizeof any;
  int status_pipe[2];
  if (listener < 0 || bind(listener, reinterpret_cast<struct sockaddr*>(&any), sizeof any) != 0 ||
      listen(listener, 8) != 0 || getsockname(listener, reinterpret_cast<struct sockaddr*>(&any), &len) != 0 ||
      pipe2(status_pipe, O_CLOEXEC) != 0) {
    perror("stasis-ssh-relay: cannot listen for the remote half");
    return kSessionFailed;
  }
  std::string command = remote_command(options, ssh, ntohs(any.sin_port), address, hex(token, sizeof token));
  start_outside_ssh(options, ssh, command, status_pipe[1]);
  close(status_pipe[1]);
  int connection = await_remote_half(listener, status_pipe[0], secret, token, ssh.host);
  close(listener);
  close(status_pipe[0]);
  stasis_allow_checkpoints();
  int status = relay_streams(connection, !ssh.no_stdin, ssh.host);
  close(connection);
  return status;
}

}  // namespace stasis::ssh
