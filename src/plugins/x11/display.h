// (restore_display.cc) Where an X display listens on this host: DISPLAY=":N", "unix:N" or ":N.S" is the Unix socket
// /tmp/.X11-unix/XN, tried first under its abstract name as Xlib and xcb do. Shared by the X proxy
// (its new connection after a restart) and `stasis restart` (which refuses to restart an X
// program when DISPLAY names no display that answers).
#pragma once
#include <string>

namespace stasis::x11 {

// The display number of DISPLAY value `display`, or -1 with `why` set (TCP displays
// "host:N" are not local sockets).
long display_number(const std::string& display, std::string& why);

// A connected socket (close-on-exec) to that display's server, or -1 with `why` set.
int connect_display(const std::string& display, std::string& why);

}  // namespace stasis::x11
