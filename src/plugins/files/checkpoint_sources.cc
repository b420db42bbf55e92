// Descriptors opened to read what goes into the image (checkpoint_sources.h).
#include "plugins/files/checkpoint_sources.h"

#include <stdint.h>

#include "runtime/rt.h"
#include "stasis/plugin.h"

namespace stasis::rt {
namespace {
constexpr uint32_t kMaxSources = 512;
int g_sources[kMaxSources];
uint32_t g_source_count = 0;

int on_event(stasis_event_t event, const stasis_event_data_t*, void*) {
  if (event == STASIS_EVENT_RESUME) close_checkpoint_sources();
  if (event == STASIS_EVENT_RESTART) g_source_count = 0;  // numbers from before: not ours here
  return 0;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "checkpoint-sources", on_event, nullptr, nullptr};
__attribute__((constructor)) void register_checkpoint_sources_plugin() { stasis_register_plugin(&g_plugin); }
}  // namespace

bool hold_checkpoint_source(int fd) {
  if (g_source_count == kMaxSources) return false;
  g_sources[g_source_count++] = fd;
  return true;
}

bool is_checkpoint_source(int fd) {
  for (uint32_t i = 0; i < g_source_count; i++)
    if (g_sources[i] == fd) return true;
  return false;
}

void close_checkpoint_sources() {
  for (uint32_t i = 0; i < g_source_count; i++) STASIS_SYS1(SYS_close, g_sources[i]);
  g_source_count = 0;
}
}  // namespace stasis::rt
