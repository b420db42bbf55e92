// stasis-ssh-relay: see local_relay.cc (the half a program's `ssh` becomes) and remote_relay.cc
// (the half on the other host). Not meant to be run by hand: the runtime writes its command line.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "plugins/ssh/relay/relay.h"

namespace {

bool parse(int argc, char** argv, stasis::ssh::Options& options) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return false;
  options.self.assign(self, static_cast<size_t>(n));
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; i++) {
    std::string name = argv[i];
    if (name == "--serve") {
      options.serve = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    if (name == "--coord") options.coord = value;
    else if (name == "--stasis") options.stasis = value;
    else if (name == "--ssh" && options.serve) options.launcher_words.push_back(value);
    else if (name == "--ssh") options.ssh_program = value;
    else if (name == "--back") options.back_port = atoi(value.c_str());
    else if (name == "--token") options.token = value;
    else if (name == "--address") options.address = value;
    else return false;
  }
  if (i >= argc) return false;
  for (i++; i < argc; i++) options.ssh_argv.push_back(argv[i]);
  if (options.serve) {
    if (options.ssh_argv.size() != 1 || options.back_port <= 0) return false;
    options.command = options.ssh_argv.front();
    options.ssh_argv.clear();
    return true;
  }
  return !options.coord.empty() && !options.stasis.empty() && !options.ssh_program.empty() &&
         !options.ssh_argv.empty();
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a reader gone shows as EPIPE
  stasis::ssh::Options options;
  if (!parse(argc, argv, options)) {
    fprintf(stderr,
            "usage: stasis-ssh-relay --coord ADDR:PORT --stasis STASIS --ssh PROGRAM -- SSH_ARGV...\n"
            "       stasis-ssh-relay --serve --back PORT --token HEX [--address ADDR] [--ssh WORD]... -- COMMAND\n"
            "(run by the Stasis runtime in place of ssh; see src/plugins/ssh/README.md)\n");
    return 255;
  }
  return options.serve ? stasis::ssh::run_remote_relay(options) : stasis::ssh::run_local_relay(options);
}
