// The compressions an image may use, by name: the one list the CLI and the coordinator check.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace stasis::image {

// zstd (level 1, the default), lz4 (fastest), none (stored as is).
inline const std::vector<std::string>& compression_names() {
  static const std::vector<std::string> names = {"zstd", "lz4", "none"};
  return names;
}
inline bool is_compression_name(std::string_view name) {
  for (const auto& n : compression_names())
    if (n == name) return true;
  return false;
}
inline constexpr const char* kCompressionChoices = "zstd, lz4 or none";

}  // namespace stasis::image
