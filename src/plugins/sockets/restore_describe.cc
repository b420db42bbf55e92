// Sockets as `stasis inspect --json` shows them: addresses, buffers, options, and what was queued.
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plugins/sockets/records.h"
#include "plugins/sockets/socket_restore.h"

namespace stasis::restore {
namespace {

const char* socket_type_name(uint64_t type) {
  switch (type) {
    case SOCK_STREAM: return "stream";
    case SOCK_DGRAM: return "datagram";
    case SOCK_SEQPACKET: return "seqpacket";
    default: return "other";
  }
}

// Bytes and messages queued at `rec` (FD_DATA SOCKET_*; its description's owner holds them).
void describe_queued(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_BYTES))
    state["queued_bytes"] = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_BYTES).size();
  auto count_framed = [&](uint32_t tag, bool with_sender, const char* count_key, const char* bytes_key) {
    if (!img.has_fd_data(rec.fd, tag)) return;
    const std::vector<char> saved = img.fd_data(rec.fd, tag);
    uint64_t count = 0, bytes = 0;
    for (size_t at = 0; saved.size() - at >= sizeof(uint32_t);) {
      uint32_t len = 0, sender_len = 0;
      std::memcpy(&len, saved.data() + at, sizeof len);
      at += sizeof len;
      if (with_sender) {
        if (saved.size() - at < sizeof sender_len) break;
        std::memcpy(&sender_len, saved.data() + at, sizeof sender_len);
        at += sizeof sender_len;
      }
      if (saved.size() - at < uint64_t{len} + sender_len) break;
      at += uint64_t{len} + sender_len;
      count++, bytes += len;
    }
    state[count_key] = count;
    state[bytes_key] = bytes;
  };
  count_framed(STASIS_FD_DATA_SOCKET_MESSAGES, false, "queued_messages", "queued_message_bytes");
  count_framed(STASIS_FD_DATA_SOCKET_DATAGRAMS, true, "queued_datagrams", "queued_datagram_bytes");
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_PEER_NAME)) {
    const std::vector<char> name = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_PEER_NAME);
    state["peer_name"] = std::string(name.data(), strnlen(name.data(), name.size()));
  }
}

void describe_inet(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto t = kind_data_of<StasisTcpData>(rec);
  state["family"] = t.family == AF_INET ? "ipv4" : "ipv6";
  state["local"] = socket_restore::describe(socket_restore::local_of(t));
  if (t.peer_port != 0) state["peer"] = socket_restore::describe(socket_restore::peer_of(t));
  state["send_buffer"] = t.send_buffer;
  state["receive_buffer"] = t.receive_buffer;
  if (rec.kind == STASIS_FD_TCP_LISTENER) state["backlog"] = t.backlog;
  nlohmann::json options = nlohmann::json::array();
  for (const auto& [bit, name] : {std::pair{STASIS_TCP_NODELAY, "TCP_NODELAY"}, {STASIS_TCP_KEEPALIVE, "SO_KEEPALIVE"},
                                  {STASIS_TCP_REUSEADDR, "SO_REUSEADDR"}, {STASIS_TCP_REUSEPORT, "SO_REUSEPORT"},
                                  {STASIS_TCP_V6ONLY, "IPV6_V6ONLY"}, {STASIS_TCP_BROADCAST, "SO_BROADCAST"}})
    if (t.options & bit) options.push_back(name);
  state["options"] = options;
  if (img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_SEEN_NAMES)) {
    const std::vector<char> saved = img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_SEEN_NAMES);
    if (saved.size() == sizeof(StasisTcpData)) {
      StasisTcpData seen;
      std::memcpy(&seen, saved.data(), sizeof seen);
      state["program_sees"] = {{"local", socket_restore::describe(socket_restore::local_of(seen))},
                               {"peer", socket_restore::describe(socket_restore::peer_of(seen))}};
    }
  }
}

}  // namespace

void describe_socket(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  switch (rec.kind) {
    case STASIS_FD_UNIX_SOCKET:
    case STASIS_FD_UNIX_DATAGRAM: {
      const auto u = kind_data_of<StasisUnixSocketData>(rec);
      state["type"] = socket_type_name(u.type);
      if (rec.kind == STASIS_FD_UNIX_DATAGRAM) state["name"] = rec.path;
      state["peer_inode"] = u.peer_ino;
      state["send_buffer"] = u.send_buffer;
      state["receive_buffer"] = u.receive_buffer;
      state["shut_down_reading"] = (u.shutdown & 1) != 0;
      state["shut_down_writing"] = (u.shutdown & 2) != 0;
      state["passcred"] = u.passcred != 0;
      break;
    }
    case STASIS_FD_UNIX_LISTENER: {
      const auto l = kind_data_of<StasisUnixListenerData>(rec);
      state["name"] = rec.path;
      state["type"] = socket_type_name(l.type);
      state["backlog"] = l.backlog;
      state["passcred"] = l.passcred != 0;
      break;
    }
    case STASIS_FD_TCP_LISTENER:
    case STASIS_FD_TCP_CONNECTION:
    case STASIS_FD_UDP_SOCKET:
      describe_inet(img, rec, state);
      break;
    case STASIS_FD_NETLINK_UEVENT: {
      const auto n = kind_data_of<StasisNetlinkData>(rec);
      state["type"] = socket_type_name(n.type);
      state["groups"] = n.groups;
      state["receive_buffer"] = n.receive_buffer;
      state["passcred"] = n.passcred != 0;
      state["filter_instructions"] = img.has_fd_data(rec.fd, STASIS_FD_DATA_SOCKET_FILTER)
                                         ? img.fd_data(rec.fd, STASIS_FD_DATA_SOCKET_FILTER).size() / 8
                                         : 0;
      return;
    }
    default:
      return;
  }
  describe_queued(img, rec, state);
}

}  // namespace stasis::restore
