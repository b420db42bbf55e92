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
// A temporary file that existed at restart: reopened as found, like a plain file (a missing one
// was made from the checkpoint).
bool reopened_as_found(const StasisFdRecord& rec);
// Makes the missing directories above `path` (an absolute path), owner-only like the session
// directories of temporary files they stand for; throws an Error naming `what` when one cannot be made.
void create_missing_directories(const std::string& path, const std::string& what);
std::string mapped_file_path(const image::Image& img, const StasisRegionRecord& region);
// The saved file (one of its descriptors) a shared file region maps, or nullptr: restart
// recreates that file, so it need not exist beforehand.
const StasisFdRecord* saved_file_mapped_by(const image::Image& img, const StasisRegionRecord& region);
}  // namespace stasis::restore
