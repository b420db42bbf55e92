// StasisCompressionSetting by name: how the commands, $STASIS_COMPRESS and the coordinator's
// --compress spell it (image/compression.h lists the names).
#pragma once
#include <string_view>

#include "protocol/protocol.h"

namespace stasis::protocol {

// "" is STASIS_COMPRESSION_DEFAULT; false for a name that is no compression.
constexpr bool compression_from_name(std::string_view name, StasisCompressionSetting* out) {
  if (name.empty())
    *out = STASIS_COMPRESSION_DEFAULT;
  else if (name == "none")
    *out = STASIS_COMPRESSION_NONE;
  else if (name == "zstd")
    *out = STASIS_COMPRESSION_ZSTD;
  else if (name == "lz4")
    *out = STASIS_COMPRESSION_LZ4;
  else
    return false;
  return true;
}

}  // namespace stasis::protocol
