#include "restart/hosts.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/error.h"

namespace stasis::restart {

std::map<std::string, std::string> parse_host_mapping(const std::string& text) {
  std::map<std::string, std::string> mapping;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    std::string pair = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == pair.size() ||
        pair.find('=', equals + 1) != std::string::npos)
      throw Error(fmt::format("--hosts: \"{}\" is not OLD=NEW (e.g. 10.0.0.1=10.0.0.2)", pair));
    if (!mapping.emplace(pair.substr(0, equals), pair.substr(equals + 1)).second)
      throw Error(fmt::format("--hosts: {} is mapped twice", pair.substr(0, equals)));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return mapping;
}

bool is_local_address(const std::string& address) {
  struct in_addr v4;
  struct in6_addr v6;
  bool is_v4 = inet_pton(AF_INET, address.c_str(), &v4) == 1;
  bool is_v6 = !is_v4 && inet_pton(AF_INET6, address.c_str(), &v6) == 1;
  if (!is_v4 && !is_v6) return false;
  if (is_v4 && (ntohl(v4.s_addr) >> 24) == 127) return true;
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (struct ifaddrs* a = list; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr) continue;
    if (is_v4 && a->ifa_addr->sa_family == AF_INET)
      found = reinterpret_cast<struct sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == v4.s_addr;
    else if (is_v6 && a->ifa_addr->sa_family == AF_INET6)
      found = std::memcmp(&reinterpret_cast<struct sockaddr_in6*>(a->ifa_addr)->sin6_addr, &v6, sizeof v6) == 0;
  }
  freeifaddrs(list);
  return found;
}

std::vector<size_t> part_roots(const std::vector<int>& parents, const std::vector<std::string>& hosts) {
  std::vector<size_t> roots(parents.size());
  for (size_t i = 0; i < parents.size(); i++) {
    size_t at = i;
    for (size_t steps = 0; parents[at] >= 0 && hosts[static_cast<size_t>(parents[at])] == hosts[at]; steps++) {
      if (steps > parents.size()) throw Error("the checkpoint's parent relations form a cycle");
      at = static_cast<size_t>(parents[at]);
    }
    roots[i] = at;
  }
  return roots;
}

PartName parse_part_name(const std::string& text, const char* option) {
  PartName name;
  const size_t at = text.find('@');
  const std::string number = text.substr(0, at);
  char* end = nullptr;
  unsigned long vpid = strtoul(number.c_str(), &end, 10);
  if (number.empty() || *end || vpid == 0 || vpid > UINT32_MAX || (at != std::string::npos && at + 1 == text.size()))
    throw Error(fmt::format("{}: \"{}\" is not a process number (VPID or VPID@PID_SPACE)", option, text));
  name.vpid = static_cast<uint32_t>(vpid);
  if (at != std::string::npos) name.space = text.substr(at + 1);
  return name;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace stasis::restart
