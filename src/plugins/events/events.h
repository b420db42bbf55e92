// Event descriptors, checkpoint side (runtime): epoll, signalfd, timerfd, inotify
// (events.cc; the wrappers that record inotify paths are there too, timerfd_settime's in
// timerfd_settime.cc). Restart side: restore_events.h. Records: records.h.
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
// Rows of the capture table (../files/capture_table.cc), one per kind.
int capture_epoll_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_signalfd_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_timerfd_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
int capture_inotify_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
}  // namespace stasis::rt
