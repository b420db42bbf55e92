#include "restart/compatibility.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/error.h"
#include "plugins/files/restore.h"
#include "restart/loader_protocol.h"

namespace fs = std::filesystem;

namespace stasis::restart {
namespace {

uint64_t current_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

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

struct OwnVdso {
  uint64_t vvar = 0, vvar_vclock = 0, vdso = 0;  // sizes
  uint64_t vdso_checksum = 0;
};

OwnVdso own_vdso() {
  OwnVdso v;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0;
    if (sscanf(line.c_str(), "%lx-%lx", &start, &end) != 2) continue;
    if (line.ends_with("[vvar]")) v.vvar = end - start;
    if (line.ends_with("[vvar_vclock]")) v.vvar_vclock = end - start;
    if (line.ends_with("[vdso]")) {
      v.vdso = end - start;
      v.vdso_checksum = XXH3_64bits(reinterpret_cast<void*>(start), end - start);
    }
  }
  return v;
}

}  // namespace

// Everything that would make the restart fail after this process has been replaced is checked
// here, while a clear message is still possible.
void check_restartable(const image::Image& img) {
  const auto& hdr = img.header();
  uint64_t missing = hdr.xcr0 & ~current_xcr0();
  if (missing)
    throw Error(fmt::format("{} needs CPU state this machine lacks ({}); restart it on a CPU with "
                            "these features", img.path(), xsave_feature_names(missing)));
  const auto& saved = img.process().vdso;
  OwnVdso own = own_vdso();
  if (saved.vdso_start && (saved.vdso_end - saved.vdso_start != own.vdso ||
                           saved.vvar_end - saved.vvar_start != own.vvar ||
                           saved.vvar_vclock_end - saved.vvar_vclock_start != own.vvar_vclock ||
                           saved.vdso_checksum != own.vdso_checksum))
    throw Error(fmt::format("{} was taken under a kernel with a different vdso; restart it on a "
                            "machine running the same kernel", img.path()));
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    if (r.start < STASIS_LOADER_LIMIT && r.end > STASIS_LOADER_BASE)
      throw Error(fmt::format("the program had memory at {:#x}-{:#x}, where the restart loader must "
                              "run; this image cannot be restarted by this build", r.start, r.end));
    if (r.kind != STASIS_REGION_FILE_PRIVATE && r.kind != STASIS_REGION_FILE_SHARED) continue;
    if (restore::saved_file_mapped_by(img, r)) continue;  // restart recreates it from the image
    struct stat st;
    if (stat(r.path, &st) != 0)
      throw Error(fmt::format("{} was mapped by the program and is gone; restore it to restart", r.path));
    int64_t mtime = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    if (r.kind == STASIS_REGION_FILE_PRIVATE &&
        (st.st_ino != r.file_ino || static_cast<uint64_t>(st.st_size) != r.file_size || mtime != r.file_mtime_ns))
      throw Error(fmt::format("{} changed since the checkpoint (the program mapped it); restart "
                              "would run mismatched code or data", r.path));
  }
  if (!fs::is_directory(img.process().cwd))
    throw Error(fmt::format("the program's working directory {} is gone", img.process().cwd));
  for (const auto& fd : img.fds()) restore::check_descriptor(img, fd);
}

}  // namespace stasis::restart
