// Descriptors a plugin leaves out of the image (left_out_fds.h). They hold for the checkpoint
// under way: a built-in plugin forgets them at RESUME and at RESTART.
#include "plugins/files/left_out_fds.h"

#include <stdint.h>

#include "stasis/plugin.h"

namespace stasis::rt {
namespace {
constexpr uint32_t kMaxLeftOutFds = 4096;
int g_left_out_fds[kMaxLeftOutFds];
uint32_t g_left_out_fd_count = 0;

int forget_left_out_fds(stasis_event_t event, const stasis_event_data_t*, void*) {
  if (event == STASIS_EVENT_RESUME || event == STASIS_EVENT_RESTART) g_left_out_fd_count = 0;
  return 0;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "left-out-fds", forget_left_out_fds, nullptr, nullptr};

__attribute__((constructor)) void register_left_out_fds() { stasis_register_plugin(&g_plugin); }
}  // namespace

bool is_left_out_fd(int fd) {
  for (uint32_t i = 0; i < g_left_out_fd_count; i++)
    if (g_left_out_fds[i] == fd) return true;
  return false;
}
}  // namespace stasis::rt

extern "C" __attribute__((visibility("default"))) int stasis_plugin_leave_out_fds(const int* fds, uint32_t count) {
  using namespace stasis::rt;
  g_left_out_fd_count = 0;
  if (count > kMaxLeftOutFds) return -1;
  for (uint32_t i = 0; i < count; i++) {
    if (fds[i] < 0) return -1;
    g_left_out_fds[i] = fds[i];
  }
  g_left_out_fd_count = count;
  return 0;
}
