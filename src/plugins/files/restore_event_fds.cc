// Event descriptors, restart side.
#include <fmt/format.h>

#include "common/error.h"
#include "plugins/files/restore.h"

namespace stasis::restore {

void check_event_fd(const image::Image& img, const StasisFdRecord& rec) {
  throw Error(fmt::format("{}: descriptor {} is a {}, which this build cannot restore", img.path(),
                          rec.fd, image::fd_kind_name(rec.kind)));
}
int open_event_fd(const image::Image& img, const StasisFdRecord& rec) {
  check_event_fd(img, rec);
  return -1;
}
void finish_event_fds(const image::Image&) {}

}  // namespace stasis::restore
