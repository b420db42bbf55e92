#include "plugins/x11/restore_x11.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/x11/display.h"

namespace stasis::restore {

void check_x11_display(const image::Image& img) {
  const char* exe = img.process().exe;
  const char* slash = std::strrchr(exe, '/');
  if (std::strcmp(slash ? slash + 1 : exe, "stasis-x11-proxy") != 0) return;
  const char* display = getenv("DISPLAY");
  if (!display || !*display)
    throw Error(fmt::format("{}: the program was launched with --x11 and its windows need an X server, but "
                            "DISPLAY is not set: set DISPLAY to the X server to restart it on",
                            img.path()));
  std::string why;
  const int fd = x11::connect_display(display, why);
  if (fd < 0) throw Error(fmt::format("{}: the program was launched with --x11: {}", img.path(), why));
  close(fd);
}

}  // namespace stasis::restore
