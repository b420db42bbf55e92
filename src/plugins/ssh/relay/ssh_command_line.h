// An OpenSSH client command line (`ssh [OPTIONS] [USER@]HOST COMMAND...`) as the ssh relay needs it:
// the options to start a session again, the host, the remote command, and what the relay cannot
// carry (a pseudo-terminal, port forwarding), which it refuses by name.
#pragma once
#include <string>
#include <vector>

namespace stasis::ssh {

struct SshCommandLine {
  std::string program;               // argv[0]
  std::vector<std::string> options;  // every word before the host, as given
  std::string user;                  // USER of USER@HOST ("" when not given that way)
  std::string host;
  std::vector<std::string> command;  // the remote command's words (ssh joins them with spaces)
  bool no_stdin = false;             // -n: the remote command reads /dev/null

  // What starts a new session to `to_host` as this one was started: the program, the options and
  // the user (as -l), without the host or command.
  std::vector<std::string> launcher_words() const;
  // The remote command as ssh sends it: the words joined with spaces.
  std::string command_text() const;
};

// Parses argv; returns "" or why the relay cannot carry this session ("-t (a pseudo-terminal)",
// "-L (port forwarding)", "no remote command"...).
std::string parse_ssh_command_line(const std::vector<std::string>& argv, SshCommandLine& out);

}  // namespace stasis::ssh
