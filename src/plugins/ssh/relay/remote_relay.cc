// The remote half of an ssh relay (local_relay.cc says what the pair is): started by the real
// ssh under `stasis launch --join`, it connects back to the local half, proves it knows the
// computation's secret, leaves the ssh session (so that ssh ends: the session is not state that
// could come back), runs the remote command with its standard streams relayed over the
// connection, and sends its exit status last, as sshd does.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/hmac.h"
#include "plugins/ssh/relay/relay.h"
#include "plugins/ssh/relay/relay_link.h"
#include "stasis/stasis.h"

namespace stasis::ssh {

namespace {

constexpr int kSessionFailed = 255;

// The local half's address: the client's as sshd saw it (SSH_CONNECTION), else the one the
// local half found toward this host.
std::string local_half_address(const Options& options) {
  if (const char* connection = getenv("SSH_CONNECTION")) {
    std::string text = connection;
    std::string first = text.substr(0, text.find(' '));
    struct in_addr parsed;
    if (inet_pton(AF_INET, first.c_str(), &parsed) == 1) return first;
  }
  return options.address;
}

int connect_back(const std::string& address, int port) {
  struct sockaddr_in to = {};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &to.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  while (fd >= 0 && connect(fd, reinterpret_cast<struct sockaddr*>(&to), sizeof to) != 0) {
    if (errno == EINTR) continue;
    close(fd);
    return -1;
  }
  return fd;
}

// The remote command, as sshd runs it: the user's shell with -c, its standard streams pipes of
// this process.
pid_t start_command(const std::string& command, int& to_stdin, int& from_stdout, int& from_stderr) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    signal(SIGPIPE, SIG_DFL);
    const char* shell = getenv("SHELL");
    if (!shell || !*shell) shell = "/bin/sh";
    execl(shell, shell, "-c", command.c_str(), static_cast<char*>(nullptr));
    fprintf(stderr, "%s: %s\n", shell, strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  to_stdin = in[1], from_stdout = out[0], from_stderr = err[0];
  for (int fd : {to_stdin, from_stdout, from_stderr}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return child;
}

// Relays until the command has ended and closed its output, then sends the status for ssh to
// exit with (255 for a command ended by a signal, as ssh reports one).
void relay_streams(int connection, pid_t child, int to_stdin, int from_stdout, int from_stderr) {
  fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK);
  std::string to_local, from_local, to_command, payload;
  bool stdin_ends = false;
  constexpr size_t kHighWater = 1 << 20;
  while (from_stdout >= 0 || from_stderr >= 0 || !to_local.empty()) {
    struct pollfd fds[4] = {{connection, POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
    if (!to_local.empty()) fds[0].events |= POLLOUT;
    if (to_command.size() > kHighWater) fds[0].events &= ~POLLIN;
    if (to_stdin >= 0 && !to_command.empty()) fds[1] = {to_stdin, POLLOUT, 0};
    if (to_local.size() < kHighWater) {
      if (from_stdout >= 0) fds[2] = {from_stdout, POLLIN, 0};
      if (from_stderr >= 0) fds[3] = {from_stderr, POLLIN, 0};
    }
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int stream = 2; stream <= 3; stream++) {
      int& fd = stream == 2 ? from_stdout : from_stderr;
      if (!fds[stream].revents) continue;
      char buffer[16384];
      ssize_t n = read(fd, buffer, sizeof buffer);
      if (n > 0) {
        put_frame(to_local, stream == 2 ? kStdoutData : kStderrData, buffer, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fd);
        fd = -1;
      }
    }
    if (fds[1].revents && !write_some(to_stdin, to_command, true)) to_command.clear();
    if (to_stdin >= 0 && stdin_ends && to_command.empty()) {
      close(to_stdin);
      to_stdin = -1;
    }
    if ((fds[0].revents & POLLOUT) && !write_some(connection, to_local, true)) return;  // the local half is gone
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      bool open = read_available(connection, from_local);
      FrameType type;
      bool malformed = false;
      while (take_frame(from_local, type, payload, malformed)) {
        if (type == kStdinData) to_command += payload;
        else if (type == kStdinEnd) stdin_ends = true;
      }
      if (stdin_ends && to_stdin >= 0 && to_command.empty()) {
        close(to_stdin);
        to_stdin = -1;
      }
      if (malformed || !open) {
        kill(child, SIGHUP);  // as sshd does when the client goes away
        return;
      }
    }
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  uint32_t code = WIFEXITED(status) ? static_cast<uint32_t>(WEXITSTATUS(status)) : kSessionFailed;
  uint8_t bytes[4] = {static_cast<uint8_t>(code), 0, 0, 0};
  put_frame(to_local, kExitStatus, bytes, sizeof bytes);
  fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) & ~O_NONBLOCK);
  while (!to_local.empty() && write_some(connection, to_local, true)) {
  }
  shutdown(connection, SHUT_WR);
  char drain[256];
  while (read(connection, drain, sizeof drain) > 0) {
  }
}

}  // namespace

int run_remote_relay(const Options& options) {
  uint8_t secret[kSecretBytes], token[kTokenBytes];
  if (!read_secret(secret) || options.token.size() != 2 * kTokenBytes ||
      stasis_hex_decode(options.token.c_str(), token, kTokenBytes) != 0) {
    fprintf(stderr, "stasis-ssh-relay: no secret or no token to connect back with\n");
    return kSessionFailed;
  }
  stasis_delay_checkpoints();
  std::string address = local_half_address(options);
  int connection = address.empty() ? -1 : connect_back(address, options.back_port);
  if (connection < 0) {
    fprintf(stderr, "stasis-ssh-relay: cannot connect back to %s port %d: %s\n",
            address.empty() ? "(no address: no SSH_CONNECTION)" : address.c_str(), options.back_port, strerror(errno));
    return kSessionFailed;
  }
  std::string why;
  if (!authenticate_to_local(connection, secret, token, why)) {
    fprintf(stderr, "stasis-ssh-relay: %s\n", why.c_str());
    return kSessionFailed;
  }
  // Leave the ssh session: this process's parent (sshd) sees it end, ssh exits, and the relay
  // goes on in a child with no terminal and none of the session's descriptors.
  pid_t relay = fork();
  if (relay < 0) return kSessionFailed;
  if (relay > 0) {
    stasis_allow_checkpoints();
    _exit(0);
  }
  setsid();
  int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; fd++) dup2(null, fd);
  if (null > 2) close(null);
  int to_stdin, from_stdout, from_stderr;
  pid_t child = start_command(options.command, to_stdin, from_stdout, from_stderr);
  stasis_allow_checkpoints();
  if (child < 0) {
    uint8_t failed[4] = {kSessionFailed, 0, 0, 0};
    std::string frame;
    put_frame(frame, kExitStatus, failed, sizeof failed);
    write_some(connection, frame, true);
    return kSessionFailed;
  }
  relay_streams(connection, child, to_stdin, from_stdout, from_stderr);
  return 0;
}

}  // namespace stasis::ssh
