// X11 connections (checkpoint side): a socket connected to an X server that is not part of the
// computation is refused, naming the display. The program's windows, its X resource ids and its
// GL contexts live in that server; the sockets kind would restore the connection as closed by its
// peer, and the program would die at its next request (Xlib's "fatal IO error") after a restart
// that looked complete. An X server started inside the computation (Xvfb under `stasis launch`)
// is an ordinary peer and is checkpointed with it.
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "plugins/memory/mappings.h"
#include "plugins/pids/pids.h"
#include "plugins/x11/x11.h"
#include "runtime/settings.h"

namespace stasis::rt {

namespace {
constexpr char kX11SocketDir[] = "/tmp/.X11-unix/X";

// The display number when `fd` is a Unix stream socket connected to an X server's socket
// (/tmp/.X11-unix/XN, or its abstract twin "@/tmp/.X11-unix/XN"), else -1.
long x11_display_of(int fd) {
  struct sockaddr_un peer = {};
  socklen_t len = sizeof peer;
  int type = 0;
  socklen_t type_len = sizeof type;
  if (STASIS_SYS3(SYS_getpeername, fd, &peer, &len) != 0 || peer.sun_family != AF_UNIX ||
      STASIS_SYS5(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM)
    return -1;
  const size_t path_len = len > offsetof(struct sockaddr_un, sun_path) ? len - offsetof(struct sockaddr_un, sun_path) : 0;
  char path[sizeof peer.sun_path + 1] = {};
  __builtin_memcpy(path, peer.sun_path, path_len < sizeof peer.sun_path ? path_len : sizeof peer.sun_path);
  const char* name = path[0] == 0 ? path + 1 : path;  // abstract: a leading NUL
  if (!str_starts(name, kX11SocketDir)) return -1;
  long display = 0;
  const char* digits = name + sizeof kX11SocketDir - 1;
  if (!*digits) return -1;
  for (const char* p = digits; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    display = display * 10 + (*p - '0');
  }
  return display;
}

// Whether the process `pid` (this pid namespace) descends from the computation's first process
// on this host: the launched one, or after a restart the restarted one that took its place.
bool in_computation(long pid) {
  long launched = 0;
  for (const char* p = g_settings.launch_pid.text; *p >= '0' && *p <= '9'; p++) launched = launched * 10 + (*p - '0');
  const long first = launched > 0 ? real_pid_of(launched) : 0;
  for (int depth = 0; depth < 64 && pid > 1; depth++) {
    if (pid == first) return true;
    char stat[512];
    const char* after = read_proc_stat(pid, stat, sizeof stat);
    if (!after) return false;
    pid = static_cast<long>(proc_stat_field(after, 4));
  }
  return false;
}
}  // namespace

int capture_x11_fd(const FdProbe& probe, StasisFdRecord&, FdDataList&, LogLine& error) {
  if (!S_ISSOCK(probe.st.st_mode)) return 0;
  const long display = x11_display_of(probe.fd);
  if (display < 0) return 0;
  // The X proxy's own connections to the real server: after a restart it finds each with its
  // peer closed (the sockets kind) and connects to the restart's display instead.
  if (g_settings.x11_proxy.text[0] == '1') return 0;
  struct ucred server = {};
  socklen_t len = sizeof server;
  if (STASIS_SYS5(SYS_getsockopt, probe.fd, SOL_SOCKET, SO_PEERCRED, &server, &len) == 0 && server.pid > 0 &&
      in_computation(server.pid))
    return 0;  // the X server is part of the computation: an ordinary Unix socket pair
  error << "descriptor " << probe.fd << " (" << probe.link << ") is a connection to the X server of display :"
        << static_cast<unsigned long>(display) << " (" << kX11SocketDir << static_cast<unsigned long>(display)
        << "), which is not part of the computation: Stasis cannot yet re-create the windows and GL state a "
           "program keeps in an X server; not checkpointing (launch it with `stasis launch --x11`, which relays "
           "its X connections and gives them to the restart's DISPLAY; an X server started inside the "
           "computation, e.g. Xvfb under the same `stasis launch`, is checkpointed with it)";
  return -1;
}

// A GPU's device node: DRM (/dev/dri/card*, renderD*: character major 226), NVIDIA's
// (/dev/nvidia*, major 195 and dynamic ones for nvidia-uvm), AMD's compute node /dev/kfd. The
// files kind would save it as a plain device and the restart would hand the program a new open
// with none of its contexts, buffers or shaders.
int capture_gpu_device_fd(const FdProbe& probe, StasisFdRecord&, FdDataList&, LogLine& error) {
  if (!S_ISCHR(probe.st.st_mode)) return 0;
  if (major(probe.st.st_rdev) != 226 && major(probe.st.st_rdev) != 195 && !str_starts(probe.link, "/dev/nvidia") &&
      !str_starts(probe.link, "/dev/dri/") && !str_starts(probe.link, "/dev/kfd"))
    return 0;
  error << "descriptor " << probe.fd << " (" << probe.link
        << ") is a GPU device node: the state a program keeps in a GPU driver (OpenGL or Vulkan contexts, "
           "buffers, textures, compute kernels) cannot be saved yet; not checkpointing (an OpenGL program "
           "rendered by Mesa in the program, LIBGL_ALWAYS_SOFTWARE=1, under `stasis launch --x11` can be)";
  return -1;
}

// Vulkan: the loader in the process means a Vulkan program, whose instances and devices live in
// its driver (even Mesa's lavapipe keeps them behind handles the loader hands out).
bool capture_vulkan_refusal(const ProcessCapture& capture, LogLine& error) {
  for (uint32_t i = 0; i < capture.map_count; i++) {
    const char* path = capture.maps[i].path;
    const char* name = path;
    for (const char* p = path; *p; p++)
      if (*p == '/') name = p + 1;
    if (!str_starts(name, "libvulkan.so")) continue;
    error << "the program has loaded the Vulkan loader (" << path
          << "): Stasis cannot save Vulkan instances and devices yet; not checkpointing";
    return false;
  }
  return true;
}

}  // namespace stasis::rt
