// The compressions by name, as the commands, $STASIS_COMPRESS and the coordinator's --compress
// spell them: the one list (image/compression.h offers it to the commands).
#pragma once
#include <string_view>

#include "protocol/protocol.h"

namespace stasis::protocol {

struct CompressionName {
  const char* name;
  StasisCompressionSetting setting;
};
// zstd (level 1, the default), lz4 (fastest), none (stored as is).
inline constexpr CompressionName kCompressionNames[] = {
    {"zstd", STASIS_COMPRESSION_ZSTD},
    {"lz4", STASIS_COMPRESSION_LZ4},
    {"none", STASIS_COMPRESSION_NONE},
};

// "" is STASIS_COMPRESSION_DEFAULT; false for a name that is no compression.
constexpr bool compression_from_name(std::string_view name, StasisCompressionSetting* out) {
  if (name.empty()) {
    *out = STASIS_COMPRESSION_DEFAULT;
    return true;
  }
  for (const auto& entry : kCompressionNames)
    if (name == entry.name) {
      *out = entry.setting;
      return true;
    }
  return false;
}

}  // namespace stasis::protocol
