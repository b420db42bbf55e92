// External plugins (include/stasis/plugin.h): loaded from STASIS_PLUGINS at start-up, called at
// every step of the checkpoint and restart sequences, in registration order.
#include <dlfcn.h>
#include <stdlib.h>

#include "runtime/rt.h"

namespace stasis::rt {
namespace {
constexpr int kMaxPlugins = 32;
const stasis_plugin_t* g_plugins[kMaxPlugins];
std::atomic<int> g_plugin_count{0};
// The reason a plugin gave (stasis_plugin_refuse) for failing the event it is handling.
char g_refusal[512];
}  // namespace

void load_plugins_from_env() {
  if (!g_settings.plugins.set) return;
  const char* list = g_settings.plugins.text;
  char path[STASIS_IMAGE_PATH_MAX];
  for (const char* p = list; *p;) {
    size_t n = 0;
    while (p[n] && p[n] != ':') n++;
    if (n > 0 && n < sizeof path) {
      __builtin_memcpy(path, p, n);
      path[n] = 0;
      if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
        LogLine line;
        (line << "cannot load plugin " << path << ": " << dlerror()).emit();
      }
    }
    p += n;
    if (*p == ':') p++;
  }
}

int plugins_event(stasis_event_t event, const stasis_event_data_t* data, LogLine& error) {
  int count = g_plugin_count.load();
  for (int i = 0; i < count; i++) {
    const stasis_plugin_t* plugin = g_plugins[i];
    g_refusal[0] = 0;
    int rc = plugin->event(event, data, plugin->state);
    if (rc != 0) {
      if (g_refusal[0]) error << g_refusal;
      else error << "plugin " << plugin->name << " failed (" << rc << ")";
      return rc;
    }
  }
  return 0;
}

void plugin_barrier_names(char* out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  int count = g_plugin_count.load();
  for (int i = 0; i < count; i++) {
    for (const char* const* b = g_plugins[i]->barriers; b && *b; b++) {
      size_t len = str_len(*b);
      if (len == 0 || len > 31 || n + len + 2 > cap) continue;
      if (n) out[n++] = ',';
      __builtin_memcpy(out + n, *b, len);
      n += len;
      out[n] = 0;
    }
  }
}

}  // namespace stasis::rt

using namespace stasis::rt;

extern "C" __attribute__((visibility("default"))) int stasis_register_plugin(
    const stasis_plugin_t* plugin) {
  if (!plugin || plugin->api_version != STASIS_PLUGIN_API_VERSION || !plugin->event) return -1;
  int index = g_plugin_count.load();
  if (index >= kMaxPlugins) return -1;
  g_plugins[index] = plugin;
  g_plugin_count.store(index + 1);
  return 0;
}

extern "C" __attribute__((visibility("default"))) void stasis_plugin_log(const char* message) {
  LogLine line;
  (line << message).emit();
}

extern "C" __attribute__((visibility("default"))) void stasis_plugin_refuse(const char* message) {
  str_copy(g_refusal, message, sizeof g_refusal);
}
