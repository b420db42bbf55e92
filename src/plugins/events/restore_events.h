// Event descriptors, restart side (restore_events.cc): epoll, signalfd, timerfd, inotify.
#pragma once
#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
void check_event_fd(const image::Image& img, const StasisFdRecord& rec);
int open_event_fd(const image::Image& img, const StasisFdRecord& rec);
// After every descriptor is in place (epoll adds its interest list).
void finish_event_fds(const image::Image& img);
void describe_event_fd(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
}  // namespace stasis::restore
