// stasis-x11-proxy PROGRAM [ARGS...]: what `stasis launch --x11` runs (../README.md). It listens
// as a display of its own, runs PROGRAM with DISPLAY set to it and relays each of the program's X
// connections to the real display (DISPLAY), so that the program's X connections end inside the
// computation and the proxy, which knows what they built in the server, can build it again in
// another server after a restart. Exits as PROGRAM does.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "plugins/x11/display.h"
#include "plugins/x11/proxy/client_connection.h"

namespace {

// Display numbers the proxy takes: far above the ones X servers usually take, and below 32768.
constexpr long kFirstProxyDisplay = 1024, kProxyDisplays = 31 * 1024;

// Listens on the abstract socket of a free display number (Xlib and xcb try the abstract name
// first, and an abstract name leaves no file behind). The search starts at a random number: a
// restart must bind its proxy's number again, and the first free number from a fixed start was
// taken in between by the next computation launched on the machine (seen in 4 of 25 runs of the
// GL tests beside each other), which failed the restart.
int listen_as_display(long& number) {
  uint32_t start = 0;
  if (getrandom(&start, sizeof start, 0) != sizeof start) start = static_cast<uint32_t>(getpid());
  for (long tried = 0; tried < 4096; tried++) {
    number = kFirstProxyDisplay + (static_cast<long>(start % kProxyDisplays) + tried) % kProxyDisplays;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    const std::string path = "/tmp/.X11-unix/X" + std::to_string(number);
    struct sockaddr_un address = {};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path + 1, path.data(), path.size());
    const socklen_t len = static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + 1 + path.size());
    if (bind(fd, reinterpret_cast<struct sockaddr*>(&address), len) == 0 && listen(fd, 64) == 0) return fd;
    close(fd);
  }
  return -1;
}

pid_t g_program = 0;
void forward_signal(int signal) {
  if (g_program > 0) kill(g_program, signal);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: stasis-x11-proxy PROGRAM [ARGS...] (what `stasis launch --x11` runs)\n");
    return 2;
  }
  const char* display = getenv("DISPLAY");
  std::string why;
  if (!display || !*display || stasis::x11::display_number(display, why) < 0) {
    fprintf(stderr, "stasis launch --x11: %s\n",
            display && *display ? why.c_str() : "DISPLAY is not set: which X server should the program use?");
    return 2;
  }
  const std::string real_display = display;
  long number = 0;
  int listener = listen_as_display(number);
  if (listener < 0) {
    fprintf(stderr, "stasis launch --x11: no free display number to listen as: %s\n", std::strerror(errno));
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  g_program = fork();
  if (g_program < 0) {
    perror("stasis launch --x11: fork");
    return 2;
  }
  if (g_program == 0) {
    setenv("DISPLAY", (":" + std::to_string(number)).c_str(), 1);
    unsetenv("STASIS_X11_PROXY");  // the program's X connections are the proxy's to keep
    execvp(argv[1], argv + 1);
    fprintf(stderr, "stasis launch --x11: cannot execute %s: %s\n", argv[1], std::strerror(errno));
    _exit(127);
  }
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) signal(s, forward_signal);

  std::vector<std::unique_ptr<stasis::x11::ClientConnection>> connections;
  for (;;) {
    int status = 0;
    if (waitpid(g_program, &status, WNOHANG) == g_program) {
      if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
      }
      return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    std::vector<struct pollfd> fds = {{listener, POLLIN, 0}};
    for (const auto& c : connections) {
      fds.push_back({c->client_fd(), static_cast<short>(POLLIN | (c->has_output_for_client() ? POLLOUT : 0)), 0});
      fds.push_back({c->server_fd(), static_cast<short>(POLLIN | (c->has_output_for_server() ? POLLOUT : 0)), 0});
    }
    // The timeout only bounds how late the program's end is noticed.
    if (poll(fds.data(), fds.size(), 200) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      struct ucred peer = {};
      socklen_t len = sizeof peer;
      if (fd >= 0 && (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != getuid())) {
        // An abstract socket has no permissions: only this user's programs may use it.
        fprintf(stderr, "stasis-x11-proxy: refused a connection from uid %u (pid %d)\n", peer.uid, peer.pid);
        close(fd);
      } else if (fd >= 0) {
        // After a restart, new connections go to the restart's display too.
        const char* restart_display = getenv("STASIS_X11_DISPLAY");
        connections.push_back(std::make_unique<stasis::x11::ClientConnection>(
            fd, restart_display && *restart_display ? restart_display : real_display));
      }
    }
    for (size_t i = 0; i < connections.size(); i++) {
      auto& c = *connections[i];
      const short client = fds[1 + 2 * i].revents, server = fds[2 + 2 * i].revents;
      const int server_fd = c.server_fd();
      bool alive = true;
      if (client & (POLLIN | POLLHUP | POLLERR)) alive = c.read_client();
      if (alive && server_fd >= 0 && server_fd == c.server_fd() && (server & (POLLIN | POLLHUP | POLLERR)))
        alive = c.read_server();
      if (alive && c.has_output_for_server()) alive = c.write_server();
      if (alive && c.has_output_for_client()) alive = c.write_client();
      if (!alive) connections[i].reset();
    }
    std::erase_if(connections, [](const auto& c) { return !c; });
  }
}
