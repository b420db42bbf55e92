#include "restart/compatibility.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "common/error.h"
#include "plugins/files/restore.h"
#include "plugins/threads/restore_xsave.h"
#include "plugins/x11/restore_x11.h"
#include "restart/loader_protocol.h"
#include "restart/vdso_proxy.h"

namespace fs = std::filesystem;

namespace stasis::restart {

// Everything that would make the restart fail after this process has been replaced is checked
// here, while a clear message is still possible.
StasisVdsoProxy check_restartable(const image::Image& img, const std::set<std::string>& recreated,
                                  const KernelVdso& own_vdso) {
  restore::check_xsave_state(img);
  // Another kernel's vdso: the restart redirects the saved one to it, if it can (vdso_proxy.cc).
  StasisVdsoProxy vdso_plan = {};
  if (!same_vdso(img, own_vdso)) vdso_plan = plan_vdso_proxy(img, own_vdso);
  for (const auto& region : img.regions()) {
    const auto& r = region.record;
    if (r.start < STASIS_LOADER_LIMIT && r.end > STASIS_LOADER_BASE)
      throw Error(fmt::format("the program had memory at {:#x}-{:#x}, where the restart loader must "
                              "run; this image cannot be restarted by this build", r.start, r.end));
    if (r.kind != STASIS_REGION_FILE_PRIVATE && r.kind != STASIS_REGION_FILE_SHARED) continue;
    if (restore::saved_file_mapped_by(img, r)) continue;  // restart recreates it from the image
    // Mapped shared too (or by another process), so just written again with the checkpoint's
    // bytes: what the private mapping's untouched pages showed then.
    if (recreated.count(r.path)) continue;
    struct stat st;
    if (stat(r.path, &st) != 0)
      throw Error(fmt::format("{} was mapped by the program and is gone; restore it to restart", r.path));
    int64_t mtime = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    // Size and modification time name the file's contents; its inode does not: the same library
    // on another node (installed from the same package) or seen through another file system
    // client (NFS, 9p) has another inode.
    if (r.kind == STASIS_REGION_FILE_PRIVATE &&
        (static_cast<uint64_t>(st.st_size) != r.file_size || mtime != r.file_mtime_ns))
      throw Error(fmt::format("{} changed since the checkpoint (the program mapped it); restart "
                              "would run mismatched code or data", r.path));
  }
  if (!fs::is_directory(img.process().cwd))
    throw Error(fmt::format("the program's working directory {} is gone", img.process().cwd));
  for (const auto& fd : img.fds()) restore::check_descriptor(img, fd);
  restore::check_x11_display(img);
  return vdso_plan;
}

}  // namespace stasis::restart
