#include <cstddef>
#include "plugins/x11/display.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stasis::x11 {

long display_number(const std::string& display, std::string& why) {
  std::string rest = display;
  if (rest.rfind("unix:", 0) == 0) rest = rest.substr(4);
  if (rest.empty() || rest[0] != ':') {
    why = "DISPLAY=" + display + " is not a display of this host (\":N\"; X over TCP is not supported)";
    return -1;
  }
  long number = 0;
  size_t i = 1;
  for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9'; i++) number = number * 10 + (rest[i] - '0');
  if (i == 1 || (i < rest.size() && rest[i] != '.') || number > 65535) {
    why = "DISPLAY=" + display + " is not of the form :N or :N.S";
    return -1;
  }
  return number;
}

int connect_display(const std::string& display, std::string& why) {
  const long number = display_number(display, why);
  if (number < 0) return -1;
  const std::string path = "/tmp/.X11-unix/X" + std::to_string(number);
  int error = 0;
  for (bool abstract : {true, false}) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    struct sockaddr_un address = {};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path + (abstract ? 1 : 0), path.data(), path.size());
    const socklen_t len = static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + path.size() + (abstract ? 1 : 0));
    if (connect(fd, reinterpret_cast<struct sockaddr*>(&address), len) == 0) return fd;
    error = errno;
    close(fd);
  }
  why = "no X server answers on DISPLAY=" + display + " (" + path + ": " + std::strerror(error) + ")";
  return -1;
}

}  // namespace stasis::x11
