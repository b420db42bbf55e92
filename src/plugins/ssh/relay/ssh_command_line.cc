#include "plugins/ssh/relay/ssh_command_line.h"

#include <strings.h>

#include <cstring>

namespace stasis::ssh {

namespace {

// OpenSSH 9's options that take a value.
bool takes_value(char option) { return std::strchr("BbcDEeFIiJLlmOopQRSWw", option) != nullptr; }

// Options whose session the relay cannot carry, with what they are.
const char* refused_flag(char option) {
  switch (option) {
    case 't': return "-t (a pseudo-terminal)";
    case 'N': return "-N (no remote command)";
    case 'f': return "-f (ssh going to the background)";
    case 's': return "-s (a subsystem)";
    case 'G': return "-G (no session)";
    case 'V': return "-V (no session)";
    case 'L': return "-L (port forwarding)";
    case 'R': return "-R (port forwarding)";
    case 'D': return "-D (port forwarding)";
    case 'W': return "-W (standard streams forwarded to a port)";
    case 'O': return "-O (a control command)";
    default: return nullptr;
  }
}

// `-o NAME=VALUE` or `-o "NAME VALUE"`: the configuration options that ask for the same.
std::string refused_config(const std::string& text) {
  size_t name_end = text.find_first_of("= \t");
  std::string name = text.substr(0, name_end);
  size_t value_at = name_end == std::string::npos ? text.size() : text.find_first_not_of("= \t", name_end);
  std::string value = value_at == std::string::npos ? "" : text.substr(value_at);
  for (const char* forward : {"LocalForward", "RemoteForward", "DynamicForward"})
    if (strcasecmp(name.c_str(), forward) == 0) return "-o " + name + " (port forwarding)";
  for (const char* other : {"ForkAfterAuthentication", "SessionType"})
    if (strcasecmp(name.c_str(), other) == 0) return "-o " + name;
  if (strcasecmp(name.c_str(), "RequestTTY") == 0 && strcasecmp(value.c_str(), "no") != 0)
    return "-o RequestTTY=" + value + " (a pseudo-terminal)";
  return "";
}

}  // namespace

std::string parse_ssh_command_line(const std::vector<std::string>& argv, SshCommandLine& out) {
  out = SshCommandLine{};
  if (argv.empty()) return "no program";
  out.program = argv[0];
  size_t i = 1;
  for (; i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-'; i++) {
    out.options.push_back(argv[i]);
    if (argv[i] == "--") {
      out.options.pop_back();
      i++;
      break;
    }
    for (size_t at = 1; at < argv[i].size(); at++) {
      char option = argv[i][at];
      if (const char* why = refused_flag(option)) return why;
      if (option == 'n') out.no_stdin = true;
      if (!takes_value(option)) continue;
      std::string value = argv[i].substr(at + 1);
      if (value.empty()) {
        if (i + 1 >= argv.size()) return std::string("-") + option + " without its value";
        value = argv[++i];
        out.options.push_back(value);
      }
      if (option == 'o') {
        std::string why = refused_config(value);
        if (!why.empty()) return why;
      }
      break;
    }
  }
  if (i >= argv.size()) return "no host";
  out.host = argv[i];
  if (size_t at = out.host.rfind('@'); at != std::string::npos) {
    out.user = out.host.substr(0, at);
    out.host = out.host.substr(at + 1);
  }
  out.command.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
  if (out.command.empty()) return "no remote command (an interactive login)";
  return "";
}

std::vector<std::string> SshCommandLine::launcher_words() const {
  std::vector<std::string> words = {program};
  words.insert(words.end(), options.begin(), options.end());
  if (!user.empty()) words.insert(words.end(), {"-l", user});
  return words;
}

std::string SshCommandLine::command_text() const {
  std::string text;
  for (const auto& word : command) text += (text.empty() ? "" : " ") + word;
  return text;
}

}  // namespace stasis::ssh
