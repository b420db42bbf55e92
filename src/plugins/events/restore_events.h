// Event descriptors, restart side (restore_events.cc): epoll, signalfd, timerfd, inotify. Each
// function is a cell of the restore table (../files/restore_table.cc).
#pragma once
#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
void check_timerfd(const image::Image& img, const StasisFdRecord& rec);
void check_epoll(const image::Image& img, const StasisFdRecord& rec);
void check_inotify(const image::Image& img, const StasisFdRecord& rec);
int open_signalfd(const image::Image& img, const StasisFdRecord& rec);
int open_timerfd(const image::Image& img, const StasisFdRecord& rec);
int open_epoll(const image::Image& img, const StasisFdRecord& rec);  // empty: finish_event_fds fills it
int open_inotify(const image::Image& img, const StasisFdRecord& rec);
// After every descriptor is in place: every epoll of `img` gets its interest list back.
void finish_event_fds(const image::Image& img);
void describe_signalfd(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
void describe_timerfd(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
void describe_epoll(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
void describe_inotify(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
}  // namespace stasis::restore
