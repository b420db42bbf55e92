// libFuzzer target for the MANIFEST.json parser of `stasis restart` (src/restart/checkpoint.cc):
// any text must give a checkpoint whose every image is a file of the generation directory, or a
// stasis::Error naming the file; never a crash or another exception.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/error.h"
#include "restart/checkpoint.h"

// STASIS_FUZZ_VERBOSE=1: say what became of each input (to check that seeds get past the checks).
static bool verbose() {
  static const bool on = std::getenv("STASIS_FUZZ_VERBOSE") != nullptr;
  return on;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = "/fuzz/000001";
  try {
    stasis::restart::Checkpoint ckpt =
        stasis::restart::parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size), dir);
    if (ckpt.images.empty() || ckpt.images.size() != ckpt.hosts.size() || ckpt.generation == 0) __builtin_trap();
    for (const auto& image : ckpt.images)
      if (image.parent_path() != dir) __builtin_trap();
  } catch (const stasis::Error& e) {
    if (verbose()) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}
