// Files whose contents are in the image (deleted while open, memfd), restart side.
#include <fmt/format.h>

#include "common/error.h"
#include "plugins/files/restore.h"

namespace stasis::restore {

void check_saved_file(const image::Image& img, const StasisFdRecord& rec) {
  throw Error(fmt::format("{}: descriptor {} is a saved file, which this build cannot restore",
                          img.path(), rec.fd));
}
int open_saved_file(const image::Image& img, const StasisFdRecord& rec) {
  check_saved_file(img, rec);
  return -1;
}

std::string mapped_file_path(const image::Image&, const StasisRegionRecord& region) {
  return region.path;
}

}  // namespace stasis::restore
