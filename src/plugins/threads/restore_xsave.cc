#include "plugins/threads/restore_xsave.h"

#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/threads/xsave_frame.h"

namespace stasis::restore {

std::string xsave_feature_names(uint64_t bits) {
  static const char* const kNames[] = {"x87", "SSE", "AVX", "MPX-BNDREGS", "MPX-BNDCSR",
                                       "AVX-512-opmask", "AVX-512-ZMM_Hi256", "AVX-512-Hi16_ZMM",
                                       "PT", "PKRU", "PASID", "CET-U", "CET-S", "HDC", "UINTR",
                                       "LBR", "HWP", "AMX-TILECFG", "AMX-TILEDATA"};
  std::string out;
  for (int i = 0; i < 64; i++)
    if (bits & (1ull << i))
      out += (out.empty() ? "" : ", ") + std::string(i < 19 ? kNames[i] : fmt::format("bit {}", i));
  return out;
}

void check_xsave_state(const image::Image& img) {
  const uint64_t xcr0 = xsave::this_cpu_xcr0();
  const auto& cpu = img.cpu_state();
  const uint64_t needed = cpu ? cpu->xfeatures_in_use : img.header().xcr0;
  const uint64_t missing = needed & ~xcr0;
  if (missing)
    throw Error(fmt::format("{} needs CPU state this machine lacks ({}): its threads hold state in "
                            "these XSAVE components; restart it on a CPU with these features",
                            img.path(), xsave_feature_names(missing)));
  if (!cpu) return;
  // The restored frame is handed to XRSTOR as it is, in the standard format: each component the
  // threads use must sit where it sat on the saving CPU.
  for (uint32_t i = 2; i < STASIS_XSAVE_COMPONENTS; i++) {
    if (!(needed & (1ull << i))) continue;
    uint32_t offset, size;
    xsave::component_place(i, &offset, &size);
    if (offset != cpu->component_offset[i] || size != cpu->component_size[i])
      throw Error(fmt::format("{} holds {} state at bytes {}-{} of the XSAVE area; this CPU puts it "
                              "at {}-{}: the saved registers cannot be restored here",
                              img.path(), xsave_feature_names(1ull << i), cpu->component_offset[i],
                              cpu->component_offset[i] + cpu->component_size[i], offset, offset + size));
  }
}

}  // namespace stasis::restore
