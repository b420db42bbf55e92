// The compressions an image may use, by name, for the commands' option checks: the names are
// protocol/compression.h's list.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "protocol/compression.h"

namespace stasis::image {

inline const std::vector<std::string>& compression_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto& entry : protocol::kCompressionNames) list.emplace_back(entry.name);
    return list;
  }();
  return names;
}
inline bool is_compression_name(std::string_view name) {
  StasisCompressionSetting setting;
  return !name.empty() && protocol::compression_from_name(name, &setting);
}
inline constexpr const char* kCompressionChoices = "zstd, lz4 or none";

}  // namespace stasis::image
