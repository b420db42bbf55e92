// The files plugin, restart side (runs in `stasis restart`, before the restart loader). For each
// process, every saved open file description is re-created once (open_description), put at its
// descriptor numbers, then kinds that refer to other descriptors are finished (epoll interest
// lists). One function per kind, each in its own restore_*.cc file beside its capture side.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "image/reader.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {

// Descriptors restart opens for its own use (pipes being rebuilt, descriptions waiting to be
// placed) must not sit at a number the program will get: every kind moves what it opens above
// this floor with lift_descriptor(). cmd_restart sets it above every saved descriptor number.
void set_descriptor_floor(int floor);
int lift_descriptor(int fd);  // returns the new number (close-on-exec); closes `fd`

// Called before anything changes: throws stasis::Error saying what prevents restoring `rec`.
void check_descriptor(const image::Image& img, const StasisFdRecord& rec);
// Returns a new descriptor (any number, close-on-exec) holding a new open file description equal
// to the saved one. Pipes: both ends of one pipe come from one pipe (see open_pipe_end).
int open_description(const image::Image& img, const StasisFdRecord& rec);
// Puts every saved descriptor of `img` at its number in the calling process. `shared` maps a
// description owner (virtual pid, fd) to a descriptor already open here (created before the
// process tree was forked); the rest are opened now.
using DescriptionKey = std::pair<int32_t, int32_t>;
void place_descriptors(const image::Image& img, const std::map<DescriptionKey, int>& shared);

// Kinds (each in its own file).
int open_regular_file(const image::Image& img, const StasisFdRecord& rec);   // restore_fds.cc
int open_pipe_end(const image::Image& img, const StasisFdRecord& rec);       // restore_pipes.cc
// Makes the pipe (or opens the FIFO) `rec` is an end of, once, refilled with the bytes this end
// saved; open_pipe_end then opens ends of it (also in processes forked after).
void create_pipe(const image::Image& img, const StasisFdRecord& rec);
// Unix socketpairs (restore_sockets.cc): create_socket_pairs makes every pair of the checkpoint
// once, before the process tree is forked; open_socket_end then gives a process its end.
void create_socket_pairs(const std::vector<image::Image>& images);
int open_socket_end(const image::Image& img, const StasisFdRecord& rec);
// A listening Unix socket, bound to its name again (a stale socket file left there is replaced).
int open_unix_listener(const image::Image& img, const StasisFdRecord& rec);
// TCP (restore_sockets.cc): listeners and connections made again before the tree is forked.
// In a restart on several hosts, `cross` says how to meet the other parts: a connection whose
// other end another part brings back is made through the coordinator's name service, in the
// process itself (connect_cross_host_tcp), since that part may start only once this one runs.
struct CrossHostTcp {
  std::string coord;        // the coordinator, HOST:PORT
  std::string own_address;  // where the other hosts reach this part's host
  std::string old_address;  // where they reached the host this part ran on (its addresses move)
  std::string restart_id;   // keeps one restart's names apart from another's
  const std::vector<image::Image>* elsewhere = nullptr;  // the other parts' images
};
void create_tcp_sockets(const std::vector<image::Image>& images, const CrossHostTcp* cross = nullptr);
// In the process that becomes `img`, before its descriptors are placed.
void connect_cross_host_tcp(const image::Image& img);
int open_tcp_socket(const image::Image& img, const StasisFdRecord& rec);
// UDP sockets and Unix datagram sockets reached by name (restore_sockets.cc): made, bound, refilled
// and connected before the tree is forked, after create_tcp_sockets (which learns moved addresses).
void create_datagram_sockets(const std::vector<image::Image>& images, bool several_hosts);
int open_datagram_socket(const image::Image& img, const StasisFdRecord& rec);
// A restart on several hosts: where every host of the checkpoint is now (old -> new address, the
// unmoved ones too), before any socket is made.
void note_new_host_addresses(const std::map<std::string, std::string>& old_to_new);
// In the process that becomes `img`, once its sockets exist: TCP and UDP sockets whose addresses
// differ from what the program saw get an entry in `info`, so the runtime shows it the old ones;
// so does every host's new address, for the program's new connections to old addresses.
void note_moved_socket_names(const image::Image& img, StasisRestartInfo& info);
int open_event_fd(const image::Image& img, const StasisFdRecord& rec);       // restore_event_fds.cc
void check_event_fd(const image::Image& img, const StasisFdRecord& rec);
// After every descriptor is in place (epoll adds its interest list).
void finish_event_fds(const image::Image& img);
int open_saved_file(const image::Image& img, const StasisFdRecord& rec);     // restore_saved_files.cc
int open_mqueue(const image::Image& img, const StasisFdRecord& rec);         // plugins/ipc/restore_mqueue.cc
// Pseudo-terminals (restore_ptys.cc). create_ptys makes every pty of the checkpoint once, before
// the process tree is forked (masters and slaves held by different processes are ends of one pty);
// open_pty then opens a master or slave of it.
void create_ptys(const std::vector<image::Image>& images);
int open_pty(const image::Image& img, const StasisFdRecord& rec);
// In the process that becomes `proc`, after setsid and before it forks its children (who inherit
// it): a session leader whose controlling terminal was a pty of the computation takes it back.
void take_controlling_terminal(const StasisProcessRecord& proc);
// Once `proc` is in its process group: the foreground group's leader makes it the foreground again.
void restore_foreground_group(const StasisProcessRecord& proc);
void check_saved_file(const image::Image& img, const StasisFdRecord& rec);
// The path the restart loader opens to map a file-backed region (a saved file may live elsewhere
// at restart, e.g. a recreated memfd as /proc/self/fd/N).
std::string mapped_file_path(const image::Image& img, const StasisRegionRecord& region);
// The saved file (one of its descriptors) a shared file region maps, or nullptr: restart
// recreates that file, so it need not exist beforehand.
const StasisFdRecord* saved_file_mapped_by(const image::Image& img, const StasisRegionRecord& region);

}  // namespace stasis::restore
