// Files whose contents are in the image, restart side (restore_saved_files.cc).
#pragma once
#include <string>

#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
void check_saved_file(const image::Image& img, const StasisFdRecord& rec);
int open_saved_file(const image::Image& img, const StasisFdRecord& rec);
void describe_saved_file(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
// The path the restart loader opens to map a file-backed region (a saved file may live elsewhere
// at restart, e.g. a recreated memfd as /proc/self/fd/N).
std::string mapped_file_path(const image::Image& img, const StasisRegionRecord& region);
// The saved file (one of its descriptors) a shared file region maps, or nullptr: restart
// recreates that file, so it need not exist beforehand.
const StasisFdRecord* saved_file_mapped_by(const image::Image& img, const StasisRegionRecord& region);
}  // namespace stasis::restore
