// The restart loader's feed: what `stasis-loader` reads from a pipe to rebuild a process's memory
// and threads (loader_protocol.h), written by a grandchild of `stasis restart` so the restarted
// program never sees it as a child. Uncompressed page-aligned payloads of at least
// STASIS_MIN_MAPPED_CHUNK bytes are mapped from the image instead of copied.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "image/reader.h"
#include "restart/loader_protocol.h"

namespace stasis::restart {

// The images an incremental image builds on, for mapping (parallel to them: a descriptor the
// loader inherits, or -1 where their pages must be copied).
struct AncestorFds {
  const std::vector<image::Image>& images;
  std::vector<int> fds;
  // 0: the plan's image_fd (the newest image); -1: not mappable.
  int fd_of(const image::Image* image, const image::Image& newest) const {
    if (image == &newest) return 0;
    for (size_t i = 0; i < images.size(); i++)
      if (&images[i] == image) return fds[i];
    return -1;
  }
};

// Opens the images without close-on-exec, for the loader, at numbers clear of every one the
// program uses (below `floor`), of the feed and image descriptors (the lowest free ones, so at
// most floor + 1) and of the numbers restart moves them through (from 600); an image whose
// number would be too high is copied instead.
AncestorFds open_ancestors_for_loader(const std::vector<image::Image>& ancestors, int floor);

// `objects`: regions mapped from a shared memory object `stasis restart` made (start -> descriptor).
// `vdso_plan`: how the loader redirects the saved vdso to this kernel's (check_restartable's).
// `payloads_verified`: every payload was checked when the images were opened (else only what is
// copied is checked here; mapped memory is not: restart --lazy).
void feed_loader(const image::Image& img, const AncestorFds& ancestors,
                 const std::map<uint64_t, int>& objects, const StasisRestartInfo& info,
                 const StasisVdsoProxy& vdso_plan, int image_fd, bool payloads_verified, int out);

}  // namespace stasis::restart
