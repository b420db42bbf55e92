// The restore table: one row per kind of descriptor (restore_kinds.h says what a row is), one per
// kind of process-wide state (process_wide_restore.h), and the lookups the restart engine and
// `stasis inspect` go through. The order of the descriptor rows is the order of the steps before
// the process tree forks: ptys first (a terminal may be any descriptor's other end), then Unix
// socketpairs, TCP (which learns moved addresses), datagram sockets.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "plugins/eventfd/restore_eventfd.h"
#include "plugins/files/process_wide_restore.h"
#include "plugins/files/restore.h"
#include "plugins/kvm/restore_kvm.h"
#include "plugins/process/timers.h"
#include "plugins/ssh/ssh_session.h"

namespace stasis::restore {
namespace {

void prepare_ptys(const std::vector<image::Image>& images, const BeforeFork&) { create_ptys(images); }
void prepare_socket_pairs(const std::vector<image::Image>& images, const BeforeFork&) { create_socket_pairs(images); }
void prepare_tcp(const std::vector<image::Image>& images, const BeforeFork& how) { create_tcp_sockets(images, how.cross); }
void prepare_datagrams(const std::vector<image::Image>& images, const BeforeFork& how) {
  create_datagram_sockets(images, how.several_hosts);
}
void enter_sockets(const image::Image& img, StasisRestartInfo& info) {
  connect_cross_host_tcp(img);
  note_moved_socket_names(img, info);
}

constexpr RestoreKind kRestoreKinds[] = {
    // kind                    check              prepare               enter          open                  finish            describe [make_shared_object joins_hosts from_outside]
    {STASIS_FD_PTY_MASTER,     nullptr,           prepare_ptys,         nullptr,       open_pty,             nullptr,          describe_pty},
    {STASIS_FD_PTY_SLAVE,      nullptr,           prepare_ptys,         nullptr,       open_pty,             nullptr,          describe_pty},
    {STASIS_FD_UNIX_SOCKET,    nullptr,           prepare_socket_pairs, enter_sockets, open_socket_end,      nullptr,          describe_socket},
    {STASIS_FD_UNIX_LISTENER,  nullptr,           nullptr,              enter_sockets, open_unix_listener,   nullptr,          describe_socket},
    {STASIS_FD_TCP_LISTENER,   nullptr,           prepare_tcp,          enter_sockets, open_tcp_socket,      nullptr,          describe_socket, nullptr, true},
    {STASIS_FD_TCP_CONNECTION, nullptr,           prepare_tcp,          enter_sockets, open_tcp_socket,      nullptr,          describe_socket, nullptr, true},
    {STASIS_FD_UDP_SOCKET,     nullptr,           prepare_datagrams,    enter_sockets, open_datagram_socket, nullptr,          describe_socket},
    {STASIS_FD_UNIX_DATAGRAM,  nullptr,           prepare_datagrams,    enter_sockets, open_datagram_socket, nullptr,          describe_socket},
    {STASIS_FD_NETLINK_UEVENT, nullptr,           nullptr,              nullptr,       open_uevent_socket,   nullptr,          describe_socket},
    {STASIS_FD_REGULAR,        check_path_exists, nullptr,              nullptr,       open_regular_file,    nullptr,          nullptr},
    {STASIS_FD_DIRECTORY,      check_path_exists, nullptr,              nullptr,       open_regular_file,    nullptr,          nullptr},
    {STASIS_FD_CHARDEV,        check_path_exists, nullptr,              nullptr,       open_regular_file,    nullptr,          nullptr},
    {STASIS_FD_EXTERNAL,       nullptr,           nullptr,              nullptr,       nullptr,              nullptr,          describe_external, nullptr, false, true},
    {STASIS_FD_PIPE,           nullptr,           nullptr,              nullptr,       open_pipe_end,        nullptr,          describe_pipe, create_pipe},
    {STASIS_FD_FIFO,           check_fifo,        nullptr,              nullptr,       open_pipe_end,        nullptr,          describe_pipe, create_pipe},
    {STASIS_FD_SAVED_FILE,     check_saved_file,  nullptr,              nullptr,       open_saved_file,      nullptr,          describe_saved_file},
    {STASIS_FD_MQUEUE,         nullptr,           nullptr,              nullptr,       open_mqueue,          nullptr,          describe_mqueue},
    {STASIS_FD_EVENTFD,        nullptr,           nullptr,              nullptr,       open_eventfd,         nullptr,          describe_eventfd},
    {STASIS_FD_EPOLL,          check_epoll,       nullptr,              nullptr,       open_epoll,           finish_event_fds, describe_epoll},
    {STASIS_FD_SIGNALFD,       nullptr,           nullptr,              nullptr,       open_signalfd,        nullptr,          describe_signalfd},
    {STASIS_FD_TIMERFD,        check_timerfd,     nullptr,              nullptr,       open_timerfd,         nullptr,          describe_timerfd},
    {STASIS_FD_INOTIFY,        check_inotify,     nullptr,              nullptr,       open_inotify,         nullptr,          describe_inotify},
    {STASIS_FD_KVM_VM,         check_kvm,         nullptr,              nullptr,       open_kvm_state,       nullptr,          describe_kvm},
    {STASIS_FD_KVM_VCPU,       check_kvm,         nullptr,              nullptr,       open_kvm_state,       nullptr,          describe_kvm},
};

void recreate_named_shm(const std::vector<image::Image>& images, SharedRestore& shared) {
  shared.recreated_files = recreate_named_shm_files(images);
}
void make_shared_memory(const std::vector<image::Image>& images, SharedRestore& shared) {
  shared.shared_memory = create_shared_memory(images);
}
void pass_memory(const image::Image& img, const SharedRestore& shared, ProcessRestore& process) {
  process.loader_objects = pass_shared_memory(img, shared.shared_memory, process.floor);
}
void make_host_segments(const std::vector<image::Image>& images, SharedRestore& shared) {
  shared.sysv_segments = recreate_host_segments(images);
}
void enter_sysv(const image::Image& img, const SharedRestore& shared, ProcessRestore& process) {
  recreate_sysv_objects(img, shared.sysv_segments, process.info);  // the loader needs their ids
}
void read_clock_shift(const std::vector<image::Image>&, SharedRestore& shared) {
  shared.clock_shift_ns = test_clock_shift_ns_from_env();
}
void enter_clocks(const image::Image&, const SharedRestore& shared, ProcessRestore& process) {
  process.info.test_clock_shift_ns = shared.clock_shift_ns;
}

constexpr ProcessWideRestore kProcessWideRestores[] = {
    // name          before_checks        before_fork          enter         [in_session in_group hosts_moved part_launcher]
    {"memory",       recreate_named_shm,  make_shared_memory,  pass_memory},
    {"ipc",          nullptr,             make_host_segments,  enter_sysv},
    {"clocks",       read_clock_shift,    nullptr,             enter_clocks},
    {"ptys",         nullptr,             nullptr,             nullptr,      take_controlling_terminal, restore_foreground_group},
    {"sockets",      nullptr,             nullptr,             nullptr,      nullptr, nullptr, note_new_host_addresses},
    {"ssh",          nullptr,             nullptr,             nullptr,      nullptr, nullptr, nullptr, ssh_launcher_of},
};

// Each distinct step of `Step` among the rows, once, in the table's order.
template <typename Step>
std::vector<Step> distinct_steps(Step RestoreKind::*step) {
  std::vector<Step> steps;
  for (const auto& row : kRestoreKinds)
    if (row.*step && std::find(steps.begin(), steps.end(), row.*step) == steps.end()) steps.push_back(row.*step);
  return steps;
}

[[noreturn]] void cannot_restore(const image::Image& img, const StasisFdRecord& rec) {
  throw Error(fmt::format("{}: descriptor {} has kind {} ({}), which this build cannot restore",
                          img.path(), rec.fd, rec.kind, image::fd_kind_name(rec.kind)));
}

}  // namespace

const RestoreKind* restore_kind(uint32_t kind) {
  for (const auto& row : kRestoreKinds)
    if (row.kind == kind) return &row;
  return nullptr;
}

bool shared_by_inode(const StasisFdRecord& rec) {
  const RestoreKind* row = restore_kind(rec.kind);
  return row && row->make_shared_object;
}

void make_shared_object(const image::Image& img, const StasisFdRecord& rec) { restore_kind(rec.kind)->make_shared_object(img, rec); }

bool joins_hosts(const StasisFdRecord& rec) {
  const RestoreKind* row = restore_kind(rec.kind);
  return row && row->joins_hosts;
}

bool from_outside(const StasisFdRecord& rec) {
  const RestoreKind* row = restore_kind(rec.kind);
  return row && row->from_outside;
}

void prepare_before_fork(const std::vector<image::Image>& images, const BeforeFork& how) {
  for (auto prepare : distinct_steps(&RestoreKind::prepare)) prepare(images, how);
}

void check_descriptor(const image::Image& img, const StasisFdRecord& rec) {
  const RestoreKind* row = restore_kind(rec.kind);
  if (!row) cannot_restore(img, rec);
  if (row->check) row->check(img, rec);
}

int open_description(const image::Image& img, const StasisFdRecord& rec) {
  const RestoreKind* row = restore_kind(rec.kind);
  if (!row || !row->open) {
    check_descriptor(img, rec);  // throws with the kind's message
    throw Error(fmt::format("descriptor {} cannot be restored", rec.fd));
  }
  return lift_descriptor(row->open(img, rec));
}

void enter_process(const image::Image& img, StasisRestartInfo& info) {
  for (auto enter : distinct_steps(&RestoreKind::enter)) enter(img, info);
}

// Once every descriptor of `img` is at its number (place_descriptors).
void finish_descriptors(const image::Image& img) {
  for (auto finish : distinct_steps(&RestoreKind::finish)) finish(img);
}

void restore_before_checks(const std::vector<image::Image>& images, SharedRestore& shared) {
  for (const auto& row : kProcessWideRestores)
    if (row.before_checks) row.before_checks(images, shared);
}

void restore_before_fork(const std::vector<image::Image>& images, SharedRestore& shared) {
  for (const auto& row : kProcessWideRestores)
    if (row.before_fork) row.before_fork(images, shared);
}

void enter_process_wide(const image::Image& img, const SharedRestore& shared, ProcessRestore& process) {
  for (const auto& row : kProcessWideRestores)
    if (row.enter) row.enter(img, shared, process);
}

void enter_session(const StasisProcessRecord& proc) {
  for (const auto& row : kProcessWideRestores)
    if (row.in_session) row.in_session(proc);
}

void enter_process_group(const StasisProcessRecord& proc) {
  for (const auto& row : kProcessWideRestores)
    if (row.in_group) row.in_group(proc);
}

void note_moved_hosts(const std::map<std::string, std::string>& old_to_new) {
  for (const auto& row : kProcessWideRestores)
    if (row.hosts_moved) row.hosts_moved(old_to_new);
}

std::vector<std::string> part_launcher(const image::Image& img) {
  for (const auto& row : kProcessWideRestores)
    if (row.part_launcher)
      if (std::vector<std::string> launcher = row.part_launcher(img); !launcher.empty()) return launcher;
  return {};
}

nlohmann::json describe_descriptor(const image::Image& img, const StasisFdRecord& rec) {
  nlohmann::json state = nlohmann::json::object();
  if (const RestoreKind* row = restore_kind(rec.kind); row && row->describe) row->describe(img, rec, state);
  return state;
}

}  // namespace stasis::restore
