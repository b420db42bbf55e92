// eventfd (checkpoint side): the counter and EFD_SEMAPHORE, from /proc/self/fdinfo/N.
#include <fcntl.h>

#include "plugins/eventfd/eventfd.h"
#include "plugins/eventfd/records.h"

namespace stasis::rt {

int capture_eventfd(const FdProbe& probe, StasisFdRecord& r, FdDataList&, LogLine& error) {
  if (!str_starts(probe.link, "anon_inode:[eventfd]")) return 0;
  r.kind = STASIS_FD_EVENTFD;
  StasisEventfdData eventfd{};
  bool have_count = false, have_semaphore = false;
  for_each_fdinfo_line(probe.fd, [&](const char* line) {
    if (const char* p = fdinfo_field(line, "eventfd-count:")) eventfd.counter = parse_hex(p), have_count = true;
    if (const char* p = fdinfo_field(line, "eventfd-semaphore:")) eventfd.semaphore = parse_decimal(p), have_semaphore = true;
  });
  set_kind_data(r, eventfd);
  if (!have_count || !have_semaphore) {
    error << "descriptor " << probe.fd << " is an eventfd whose counter and mode this kernel does not "
          << "show in /proc/self/fdinfo; not checkpointing";
    return -1;
  }
  if (r.flags & O_ASYNC) {
    error << "descriptor " << probe.fd << " (" << probe.link << ") uses signal-driven I/O (O_ASYNC), "
          << "which this version of Stasis cannot restore; not checkpointing";
    return -1;
  }
  return 1;
}

}  // namespace stasis::rt
