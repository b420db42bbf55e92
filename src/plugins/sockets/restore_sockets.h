// Sockets, restart side: Unix sockets (restore_unix_sockets.cc), TCP (restore_tcp.cc), TCP across
// hosts (restore_cross_host_tcp.cc), datagrams (restore_datagrams.cc), with what they share
// (socket_restore.h), and describe (restore_describe.cc). Everything the processes share is made before the process tree forks.
#pragma once
#include <map>
#include <string>

#include "plugins/files/restore_kinds.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {

// Unix socketpairs: create_socket_pairs makes every pair of the checkpoint once, before the
// process tree is forked; open_socket_end then gives a process its end.
void create_socket_pairs(const std::vector<image::Image>& images);
int open_socket_end(const image::Image& img, const StasisFdRecord& rec);
// A listening Unix socket, bound to its name again (a stale socket file left there is replaced).
int open_unix_listener(const image::Image& img, const StasisFdRecord& rec);
// TCP: listeners and connections made again before the tree is forked. In a restart on several
// hosts, `cross` says how to meet the other parts: a connection whose other end another part
// brings back is made through the coordinator's name service, in the process itself
// (connect_cross_host_tcp), since that part may start only once this one runs.
void create_tcp_sockets(const std::vector<image::Image>& images, const OtherParts* cross = nullptr);
// In the process that becomes `img`, before its descriptors are placed.
void connect_cross_host_tcp(const image::Image& img);
int open_tcp_socket(const image::Image& img, const StasisFdRecord& rec);
// UDP sockets and Unix datagram sockets reached by name: made, bound, refilled and connected
// before the tree is forked, after create_tcp_sockets (which learns moved addresses).
void create_datagram_sockets(const std::vector<image::Image>& images, bool several_hosts);
int open_datagram_socket(const image::Image& img, const StasisFdRecord& rec);
// A device-event netlink socket, subscribed again as it was (restore_netlink.cc).
int open_uevent_socket(const image::Image& img, const StasisFdRecord& rec);
// A restart on several hosts: where every host of the checkpoint is now (old -> new address, the
// unmoved ones too), before any socket is made.
void note_new_host_addresses(const std::map<std::string, std::string>& old_to_new);
// In the process that becomes `img`, once its sockets exist: TCP and UDP sockets whose addresses
// differ from what the program saw get an entry in `info`, so the runtime shows it the old ones;
// so does every host's new address, for the program's new connections to old addresses.
void note_moved_socket_names(const image::Image& img, StasisRestartInfo& info);

void describe_socket(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);

}  // namespace stasis::restore
