// Where a coordinator listens and where it keeps its secret: what the coordinator and its clients
// (the `stasis` commands) must agree on, so it lives here, beside the coordinator that writes
// the secret file, and cli/coord_client.h includes it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/protocol.h"

namespace stasis {

struct CoordAddress {
  std::string host = "127.0.0.1";
  uint16_t port = STASIS_DEFAULT_PORT;
  // "HOST:PORT" or "PORT"; throws stasis::Error with a clear message if malformed.
  static CoordAddress parse(std::string_view text);
  std::string str() const;
};

// --coord if given, else $STASIS_COORD, else 127.0.0.1:7781.
CoordAddress coord_address_from(const std::string& option);

// Where the coordinator at `addr` keeps its secret: an owner-only file
// ${STASIS_RUNTIME_DIR:-$HOME/.stasis}/coordinator-HOST-PORT.secret (64 hex digits).
std::string secret_path(const CoordAddress& addr);
// $STASIS_SECRET if set, else the secret file's content; "" if neither exists.
std::string find_secret(const CoordAddress& addr);

}  // namespace stasis
