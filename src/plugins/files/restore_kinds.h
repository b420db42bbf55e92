// The restore table (restart side, `stasis restart` and `stasis inspect`): one row per kind of
// descriptor (StasisFdKind), saying how that kind is checked, made before the process tree forks,
// entered in each process, opened, finished once every descriptor of a process is in place, and described. The rows are
// in restore_table.cc; each kind's functions in its folder under src/plugins/. Adding a kind of
// descriptor: its folder, one row here and one in the capture table (capture_table.cc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "image/kind_data.h"
#include "image/reader.h"
#include "restart/loader_protocol.h"

namespace stasis::restore {

// A restart on several hosts: how this part meets the others.
struct OtherParts {
  std::string coord;        // the coordinator, HOST:PORT
  std::string own_address;  // where the other hosts reach this part's host
  std::string old_address;  // where they reached the host this part ran on (its addresses move)
  std::string restart_id;   // keeps one restart's names apart from another's
  const std::vector<image::Image>* elsewhere = nullptr;  // the other parts' images
};
// What the steps before the process tree forks need to know about this restart.
struct BeforeFork {
  const OtherParts* cross = nullptr;  // a restart on several hosts: how to meet the other parts
  bool several_hosts = false;
};

struct RestoreKind {
  uint32_t kind;  // StasisFdKind
  // Before anything changes: throws stasis::Error saying what prevents restoring `rec`. Null:
  // nothing to check beforehand.
  void (*check)(const image::Image& img, const StasisFdRecord& rec);
  // Once per restart, before the process tree forks: makes what processes share (both ends of a
  // socketpair, a pty...). Rows sharing one step run it once, in the order of the table.
  void (*prepare)(const std::vector<image::Image>& images, const BeforeFork& how);
  // In the process that becomes `img`, before its descriptors are placed: what the kind needs
  // there (TCP to another host's part is connected in the process itself; sockets that moved
  // tell the runtime, through `info`, the addresses the program saw). Rows sharing one step run
  // it once per process, whatever descriptors the process holds.
  void (*enter)(const image::Image& img, StasisRestartInfo& info);
  // A new descriptor (any number) holding a new open file description equal to the saved one.
  int (*open)(const image::Image& img, const StasisFdRecord& rec);
  // Once every descriptor of the process is at its number (epoll adds its interest list). Rows
  // sharing one step run it once per process.
  void (*finish)(const image::Image& img);
  // The saved state by name, for `stasis inspect --json` (fills `state`, an object). Null: the
  // record's common fields (path, flags, offset) say it all.
  void (*describe)(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
  // For kinds whose descriptors of one (dev, inode) are all one object, whatever their open
  // descriptions (a pipe's or FIFO's ends): makes that object once, before the tree forks, when
  // several processes hold it; each then opens its end. Null: shared by open description only.
  void (*make_shared_object)(const image::Image& img, const StasisFdRecord& rec) = nullptr;
  // A description of this kind held on two hosts of a restart in parts is not refused: the kind
  // joins them itself (TCP, through the coordinator's name service).
  bool joins_hosts = false;
  // A descriptor the computation holds from the world outside it (a terminal or pipe of the
  // shell that launched it): never made again, the restart's own stands for it.
  bool from_outside = false;
};

// The row of `kind`, or nullptr when this build cannot restore it.
const RestoreKind* restore_kind(uint32_t kind);
// Whether `rec` is one object with every descriptor of its (dev, inode) (make_shared_object).
bool shared_by_inode(const StasisFdRecord& rec);
// make_shared_object of `rec`'s kind.
void make_shared_object(const image::Image& img, const StasisFdRecord& rec);
// Whether a description of `rec`'s kind may be held on two hosts (joins_hosts).
bool joins_hosts(const StasisFdRecord& rec);
// Whether `rec` came from outside the computation (from_outside).
bool from_outside(const StasisFdRecord& rec);
// Every row's enter step, once, in the process that becomes `img` (before the feeder forks).
void enter_process(const image::Image& img, StasisRestartInfo& info);
// Every row's finish step, once (place_descriptors, once every descriptor of `img` is in place).
void finish_descriptors(const image::Image& img);

// Descriptors restart opens for its own use (pipes being rebuilt, descriptions waiting to be
// placed) must not sit at a number the program will get: every kind moves what it opens above
// this floor with lift_descriptor(). The restart engine (RestartSession::run) sets it above every
// saved descriptor number.
void set_descriptor_floor(int floor);
int lift_descriptor(int fd);  // returns the new number (close-on-exec); closes `fd`

// The check of the kinds reopened by path (files, directories, devices, FIFOs): the path exists.
void check_path_exists(const image::Image& img, const StasisFdRecord& rec);

}  // namespace stasis::restore
