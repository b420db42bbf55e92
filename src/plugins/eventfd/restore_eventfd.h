// eventfd, restart side (restore_eventfd.cc).
#pragma once
#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
int open_eventfd(const image::Image& img, const StasisFdRecord& rec);
void describe_eventfd(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
}  // namespace stasis::restore
