// stasis-ssh-relay: the two halves of an ssh session of the computation (README.md one folder up).
#pragma once
#include <string>
#include <vector>

namespace stasis::ssh {

struct Options {
  std::string self;                  // this program (the remote half runs it too)
  // Local half: `--coord ADDR:PORT --stasis STASIS --ssh PROGRAM -- SSH_ARGV...`
  std::string coord, stasis, ssh_program;
  std::vector<std::string> ssh_argv;
  // Remote half: `--serve --back PORT --token HEX [--address ADDR] [--ssh WORD]... -- COMMAND`
  // (the --ssh words: how the session was started, read back by `stasis restart`).
  bool serve = false;
  int back_port = 0;
  std::string token, address, command;
  std::vector<std::string> launcher_words;
};

int run_local_relay(const Options& options);
int run_remote_relay(const Options& options);

}  // namespace stasis::ssh
