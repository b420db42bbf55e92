// Event descriptors: eventfd, epoll, signalfd, timerfd, inotify (checkpoint side).
#include "plugins/files/files.h"

namespace stasis::rt {

int capture_event_fd(const FdProbe&, StasisFdRecord&, FdDataList&, LogLine&) { return 0; }

}  // namespace stasis::rt
