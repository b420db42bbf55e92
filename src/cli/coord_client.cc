// Finding, starting and talking to a coordinator from the `stasis` commands.
// (CoordAddress, secret_path and find_secret live in src/coordinator/coord_address.cc.)
#include "cli/coord_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "cli/command.h"
#include "common/error.h"
#include "restart/hosts.h"
#include "restart/slurm_allocation.h"
#include "common/hmac.h"
#include "protocol/wire.h"

extern char** environ;

namespace stasis {
namespace {

constexpr size_t kSecretBytes = 32;

// Runs argv, waits for it, and returns its exit status and the first line of its stderr.
int run_capturing_stderr(const std::vector<std::string>& argv, std::string& first_line) {
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(err[1]);
  if (rc != 0) {
    close(err[0]);
    throw Error(fmt::format("cannot run {}: {}", argv[0], strerror(rc)));
  }
  std::string output;
  char buffer[512];
  for (;;) {
    ssize_t n = read(err[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  first_line = output.substr(0, output.find('\n'));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string existing_secret(const CoordAddress& addr) {
  // A coordinator starting at this moment listens a little before its secret file is written.
  std::string secret = find_secret(addr);
  for (int tries = 0; secret.empty() && tries < 40; tries++) {
    usleep(50 * 1000);
    secret = find_secret(addr);
  }
  if (secret.empty()) {
    throw Error(
        fmt::format("a coordinator answers at {} but its secret is not readable at {} "
                    "(run as the user who started it, or set STASIS_SECRET)",
                    addr.str(), secret_path(addr)));
  }
  return secret;
}

}  // namespace

CoordAddress coordinator_address(const std::string& option) {
  return coord_address_from(option.empty() ? restart::default_coord_in_allocation() : option);
}

bool coordinator_answers(const CoordAddress& addr) {
  int fd = stasis_connect_tcp(addr.host.c_str(), addr.port);
  if (fd < 0) return false;
  close(fd);
  return true;
}

std::string ensure_coordinator(const CoordAddress& addr, const CoordinatorOptions& options) {
  if (coordinator_answers(addr)) return existing_secret(addr);
  // Another host's address: the coordinator is started there (by the launch of the same job step
  // on that node, `srun -N 2 stasis launch`), maybe a moment from now; it cannot be started here.
  if (addr.host != "0.0.0.0" && !restart::is_local_address(addr.host)) {
    for (int tries = 0; tries < 600 && !coordinator_answers(addr); tries++) usleep(50 * 1000);
    if (!coordinator_answers(addr))
      throw Error(fmt::format("no coordinator answers at {} after 30 s, and it is not an address of this host, "
                              "where one could be started",
                              addr.str()));
    return existing_secret(addr);
  }
  std::vector<std::string> argv = {cli::self_executable(),
                                   "coordinator",
                                   "--port",
                                   std::to_string(addr.port),
                                   "--host",
                                   addr.host,
                                   "--daemon",
                                   "--exit-when-idle"};
  if (!options.ckpt_dir.empty()) argv.insert(argv.end(), {"--ckpt-dir", options.ckpt_dir});
  if (!options.compress.empty()) argv.insert(argv.end(), {"--compress", options.compress});
  if (options.interval > 0)
    argv.insert(argv.end(), {"--interval", fmt::format("{}", options.interval)});
  std::string error;
  if (run_capturing_stderr(argv, error) != 0) {
    // Another launch may have started one at the same moment: theirs is as good as ours.
    if (coordinator_answers(addr)) return existing_secret(addr);
    const std::string prefix = "stasis coordinator: ";
    if (error.starts_with(prefix)) error.erase(0, prefix.size());
    throw Error(fmt::format("could not start a coordinator at {}: {}", addr.str(),
                            error.empty() ? "it exited with an error" : error));
  }
  return existing_secret(addr);
}

std::string ensure_coordinator_expecting(const CoordAddress& addr, const CoordinatorOptions& options,
                                         uint32_t announcement) {
  StasisCommand expect{};
  expect.verb = announcement;
  for (int attempt = 0;; attempt++) {
    std::string secret = ensure_coordinator(addr, options);
    try {
      CoordConnection coordinator(addr);
      bool ok = false;
      coordinator.command(expect, ok);  // an older coordinator refuses the verb: nothing worse than before
      return secret;
    } catch (const Error&) {
      if (attempt == 1) throw;
    }
  }
}

CoordConnection::CoordConnection(const CoordAddress& addr) {
  fd_ = stasis_connect_tcp(addr.host.c_str(), addr.port);
  if (fd_ < 0) {
    if (errno == EINVAL) {
      throw Error(
          fmt::format("the coordinator address {} is not a numeric IP address", addr.str()));
    }
    throw Error(fmt::format(
        "no coordinator answers at {} (is the computation running? set STASIS_COORD or --coord)",
        addr.str()));
  }
  // A constructor that throws runs no destructor: close the socket before every error.
  auto give_up = [this](const std::string& message) {
    close(fd_);
    fd_ = -1;
    throw Error(message);
  };
  std::string hex = find_secret(addr);
  if (hex.empty()) {
    give_up(
        fmt::format("a coordinator answers at {} but there is no secret for it: {} does "
                    "not exist (run as the user who started it, or set STASIS_SECRET)",
                    addr.str(), secret_path(addr)));
  }
  uint8_t secret[kSecretBytes];
  if (hex.size() != 2 * kSecretBytes || stasis_hex_decode(hex.c_str(), secret, kSecretBytes) != 0) {
    give_up(
        fmt::format("the secret for the coordinator at {} is not 64 hex digits (check "
                    "STASIS_SECRET or {})",
                    addr.str(), secret_path(addr)));
  }
  char reason[STASIS_MESSAGE_MAX];
  if (stasis_client_handshake(fd_, secret, sizeof secret, STASIS_ROLE_COMMAND, nullptr, nullptr,
                              reason, sizeof reason) != 0) {
    if (errno == EACCES) {
      give_up(
          fmt::format("the coordinator at {} refused this command: {} (run as the user "
                      "who started it, or set STASIS_SECRET)",
                      addr.str(), reason));
    }
    give_up(fmt::format("cannot talk to the coordinator at {}: {}", addr.str(), reason));
  }
}

CoordConnection::~CoordConnection() {
  if (fd_ >= 0) close(fd_);
}

std::string CoordConnection::command(const StasisCommand& cmd, bool& ok) {
  const std::string lost =
      "the coordinator closed the connection before answering (did it exit? see its log)";
  if (stasis_send_msg(fd_, STASIS_MSG_COMMAND, 0, &cmd, sizeof cmd) != 0) throw Error(lost);
  for (;;) {
    StasisMsgHeader header;
    if (stasis_recv_header(fd_, &header) != 0) throw Error(lost);
    if (header.type != STASIS_MSG_COMMAND_REPLY) {
      if (stasis_discard(fd_, header.payload_len) != 0) throw Error(lost);
      continue;
    }
    std::string text(header.payload_len, '\0');
    if (stasis_recv_exact(fd_, text.data(), text.size()) != 0) throw Error(lost);
    ok = header.arg == 0;
    return text;
  }
}

void CoordConnection::publish(const std::string& key, const std::string& value) {
  std::string payload = key + '\0' + value;
  if (stasis_send_msg(fd_, STASIS_MSG_NS_PUBLISH, 0, payload.data(), static_cast<uint32_t>(payload.size())) != 0)
    throw Error("the coordinator closed the connection (name service publish)");
}

std::optional<std::string> CoordConnection::lookup(const std::string& key) {
  const std::string lost = "the coordinator closed the connection (name service lookup)";
  if (stasis_send_msg(fd_, STASIS_MSG_NS_LOOKUP, 0, key.data(), static_cast<uint32_t>(key.size())) != 0)
    throw Error(lost);
  for (;;) {
    StasisMsgHeader header;
    if (stasis_recv_header(fd_, &header) != 0) throw Error(lost);
    std::string value(header.payload_len, '\0');
    if (stasis_recv_exact(fd_, value.data(), value.size()) != 0) throw Error(lost);
    if (header.type != STASIS_MSG_NS_REPLY) continue;
    if (header.reserved != 0) return std::nullopt;
    return value;
  }
}

}  // namespace stasis
