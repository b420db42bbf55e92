// See coord_address.h.
#include "coordinator/coord_address.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "coordinator/command_environment.h"

namespace stasis {
namespace {

uint16_t parse_port(std::string_view text, std::string_view whole) {
  unsigned value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    throw Error(
        fmt::format("bad coordinator address '{}': the port must be a number from 1 to "
                    "65535 (expected HOST:PORT or PORT)",
                    whole));
  }
  return static_cast<uint16_t>(value);
}

std::string trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) start++;
  return text.substr(start);
}

std::string runtime_dir() {
  if (std::string dir = CommandEnvironment::read().runtime_dir; !dir.empty()) return dir;
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.stasis";
  const passwd* user = getpwuid(getuid());
  if (user != nullptr && user->pw_dir != nullptr) return std::string(user->pw_dir) + "/.stasis";
  return fmt::format("/tmp/stasis-{}", getuid());
}

}  // namespace

CoordAddress CoordAddress::parse(std::string_view text) {
  CoordAddress address;
  if (text.empty()) throw Error("empty coordinator address (expected HOST:PORT or PORT)");
  std::string_view host;
  std::string_view port;
  if (text.front() == '[') {  // [IPv6]:PORT
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      throw Error(fmt::format("bad coordinator address '{}' (expected [IPV6]:PORT)", text));
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (size_t colon = text.rfind(':'); colon == std::string_view::npos) {
    port = text;
  } else {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  address.port = parse_port(port, text);
  if (!host.empty()) address.host = host == "localhost" ? "127.0.0.1" : std::string(host);
  return address;
}

std::string CoordAddress::str() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

CoordAddress coord_address_from(const std::string& option) {
  if (!option.empty()) return CoordAddress::parse(option);
  if (std::string env = CommandEnvironment::read().coord; !env.empty()) return CoordAddress::parse(env);
  return CoordAddress{};
}

std::string secret_path(const CoordAddress& addr) {
  return fmt::format("{}/coordinator-{}-{}.secret", runtime_dir(), addr.host, addr.port);
}

std::string find_secret(const CoordAddress& addr) {
  if (std::string env = CommandEnvironment::read().secret; !env.empty()) return trim(env);
  std::ifstream in(secret_path(addr));
  if (!in) return "";
  std::stringstream content;
  content << in.rdbuf();
  return trim(content.str());
}

}  // namespace stasis
