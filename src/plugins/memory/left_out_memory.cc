// Memory a plugin leaves out of the image (left_out_memory.h). The ranges hold for the checkpoint
// under way: a built-in plugin forgets them at RESUME, and at RESTART (the image holds them as
// they were when it was written, armed).
#include "plugins/memory/left_out_memory.h"

#include "stasis/plugin.h"

namespace stasis::rt {
namespace {
constexpr uint32_t kMaxLeftOut = 4096;
uint64_t g_left_out[2 * kMaxLeftOut];
uint32_t g_left_out_count = 0;

int forget_left_out(stasis_event_t event, const stasis_event_data_t*, void*) {
  if (event == STASIS_EVENT_RESUME || event == STASIS_EVENT_RESTART) g_left_out_count = 0;
  return 0;
}

const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "left-out-memory", forget_left_out, nullptr, nullptr};

__attribute__((constructor)) void register_left_out_memory() { stasis_register_plugin(&g_plugin); }
}  // namespace

uint32_t cut_left_out_memory(Arena& arena, Mapping** maps, uint32_t count) {
  if (g_left_out_count == 0) return count;
  // Each range splits at most one mapping in two.
  auto* cut = static_cast<Mapping*>(arena.alloc(sizeof(Mapping) * (count + g_left_out_count)));
  if (!cut) return count;
  uint32_t n = 0, r = 0;
  for (uint32_t i = 0; i < count; i++) {
    const Mapping& m = (*maps)[i];
    uint64_t at = m.start;
    while (r < g_left_out_count && g_left_out[2 * r + 1] <= at) r++;
    for (uint32_t k = r; at < m.end; k++) {
      uint64_t hole_start = k < g_left_out_count ? g_left_out[2 * k] : m.end;
      uint64_t hole_end = k < g_left_out_count ? g_left_out[2 * k + 1] : m.end;
      if (hole_start > m.end) hole_start = hole_end = m.end;
      if (hole_start > at) {
        Mapping part = m;
        part.start = at;
        part.end = hole_start;
        if (m.path[0] && m.path[0] != '[') part.offset = m.offset + (at - m.start);
        cut[n++] = part;
      }
      at = hole_end > at ? hole_end : at;
      if (hole_start >= m.end) break;
    }
  }
  *maps = cut;
  return n;
}
}  // namespace stasis::rt

extern "C" __attribute__((visibility("default"))) int stasis_plugin_leave_out_memory(const uint64_t* ranges,
                                                                                     uint32_t count) {
  using namespace stasis::rt;
  g_left_out_count = 0;
  if (count > kMaxLeftOut) return -1;
  for (uint32_t i = 0; i < count; i++) {
    uint64_t start = ranges[2 * i], end = ranges[2 * i + 1];
    if (start >= end || start % 4096 || end % 4096 || (i > 0 && start < ranges[2 * i - 1])) return -1;
    g_left_out[2 * i] = start;
    g_left_out[2 * i + 1] = end;
  }
  g_left_out_count = count;
  return 0;
}
