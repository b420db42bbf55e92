/* An example Stasis plugin: it appends one line per event to the file named by
 * STASIS_EXAMPLE_LOG, with the number of checkpoints it has seen. Its counter lives in ordinary
 * memory, so after a restart it continues from the value saved in the image: the pattern every
 * plugin follows (keep state in memory, re-create kernel state on STASIS_EVENT_RESTART).
 * Event handlers use only open/write/close: no malloc or stdio while threads are stopped. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stasis/plugin.h"

static char g_log_path[512];
static unsigned long g_checkpoints;

static const char* event_name(stasis_event_t event) {
  switch (event) {
    case STASIS_EVENT_INIT: return "init";
    case STASIS_EVENT_PRE_SUSPEND: return "pre-suspend";
    case STASIS_EVENT_DRAIN: return "drain";
    case STASIS_EVENT_PRE_CHECKPOINT: return "pre-checkpoint";
    case STASIS_EVENT_RESUME: return "resume";
    case STASIS_EVENT_RESTART: return "restart";
    case STASIS_EVENT_EXIT: return "exit";
    case STASIS_EVENT_ATFORK_CHILD: return "atfork-child";
    case STASIS_EVENT_BARRIER: return "barrier";
  }
  return "unknown";
}

static size_t append_number(char* out, unsigned long v) {
  char digits[24];
  size_t n = 0;
  do digits[n++] = (char)('0' + v % 10), v /= 10; while (v);
  for (size_t i = 0; i < n; i++) out[i] = digits[n - 1 - i];
  return n;
}

static int on_event(stasis_event_t event, const stasis_event_data_t* data, void* state) {
  (void)state;
  if (event == STASIS_EVENT_RESUME && data->checkpoint_ok) g_checkpoints++;
  if (!g_log_path[0]) return 0;
  char line[128];
  size_t n = 0;
  const char* name = event_name(event);
  memcpy(line, name, strlen(name));
  n += strlen(name);
  memcpy(line + n, " generation ", 12);
  n += 12;
  n += append_number(line + n, data->generation);
  memcpy(line + n, " checkpoints ", 13);
  n += 13;
  n += append_number(line + n, g_checkpoints);
  line[n++] = '\n';
  int fd = open(g_log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  ssize_t ignored = write(fd, line, n);
  (void)ignored;
  close(fd);
  return 0;
}

static const char* const g_barriers[] = {"example-quiesce", NULL};
static stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "example", on_event, NULL, g_barriers};

__attribute__((constructor)) static void register_example_plugin(void) {
  const char* path = getenv("STASIS_EXAMPLE_LOG");
  if (path && strlen(path) < sizeof g_log_path) strcpy(g_log_path, path);
  if (stasis_register_plugin) stasis_register_plugin(&g_plugin);
}
