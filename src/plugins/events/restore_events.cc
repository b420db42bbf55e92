// Event descriptors at restart: epoll, signalfd, timerfd, inotify, each re-created with the state
// events.cc saved (records.h). Epoll interest lists are added last (finish_event_fds), once every descriptor of the process is at its number.
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "common/error.h"
#include "plugins/events/records.h"
#include "plugins/events/restore_events.h"

#ifndef TFD_IOC_SET_TICKS  // <linux/timerfd.h> has it, but clashes with <sys/timerfd.h>
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

namespace stasis::restore {
namespace {

std::string errno_text() { return std::strerror(errno); }

// The entries saved for an epoll or inotify descriptor (its record's count of them: the interest
// count or the watch count); the first holder of a shared description has them, the others none.
template <typename Entry>
std::vector<Entry> saved_entries(const image::Image& img, const StasisFdRecord& rec, uint32_t tag) {
  std::vector<char> bytes = img.fd_data(rec.fd, tag);
  if (rec.same_description_as >= 0) return {};
  const uint64_t count = tag == STASIS_FD_DATA_EPOLL ? kind_data_of<StasisEpollData>(rec).interest_count
                                                     : kind_data_of<StasisInotifyData>(rec).watch_count;
  if (bytes.size() != count * sizeof(Entry))
    throw Error(fmt::format("{}: descriptor {} ({}) should have {} saved entries, the image holds {} bytes",
                            img.path(), rec.fd, image::fd_kind_name(rec.kind), count, bytes.size()));
  std::vector<Entry> entries(count);
  if (!bytes.empty()) std::memcpy(entries.data(), bytes.data(), bytes.size());
  return entries;
}

int checked(int fd, const StasisFdRecord& rec, const char* what) {
  if (fd < 0)
    throw Error(fmt::format("cannot re-create {} for descriptor {}: {}", what, rec.fd, errno_text()));
  return fd;
}

bool nonblocking(const StasisFdRecord& rec) { return rec.flags & O_NONBLOCK; }

}  // namespace

int open_signalfd(const image::Image&, const StasisFdRecord& rec) {
  // The raw call: glibc's sigset_t helpers refuse the signals it reserves for itself.
  uint64_t mask = kind_data_of<StasisSignalfdData>(rec).mask;
  int flags = SFD_CLOEXEC | (nonblocking(rec) ? SFD_NONBLOCK : 0);
  return checked(static_cast<int>(syscall(SYS_signalfd4, -1, &mask, sizeof mask, flags)), rec, "a signalfd");
}

namespace {

timespec ns_timespec(uint64_t ns) {
  return {static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
}

}  // namespace

int open_timerfd(const image::Image&, const StasisFdRecord& rec) {
  const auto timer = kind_data_of<StasisTimerfdData>(rec);
  const int clock = static_cast<int>(timer.clock);
  int fd = checked(timerfd_create(clock, TFD_CLOEXEC | (nonblocking(rec) ? TFD_NONBLOCK : 0)), rec, "a timerfd");
  // Relative timers go on from the time they had left at the checkpoint (the time the program was
  // not running does not count, as for its sleeps); absolute ones keep their deadline, unless
  // their clock is now behind the checkpoint's (the machine rebooted): the runtime then moves the
  // program's clock on from the checkpoint's time (plugins/process/timers.h), and the deadline is
  // as far ahead of it as it was then.
  if (timer.next_expiration_ns) {
    uint64_t expiry = timer.next_expiration_ns;
    int flags = static_cast<int>(timer.settime_flags) & (TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET);
    timespec now{};
    if ((flags & TFD_TIMER_ABSTIME) && clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_ALARM &&
        clock_gettime(clock, &now) == 0 &&
        static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec) < timer.clock_at_checkpoint_ns) {
      expiry = std::max<uint64_t>(expiry - timer.clock_at_checkpoint_ns, 1);
      flags &= ~TFD_TIMER_ABSTIME;
    }
    itimerspec spec{ns_timespec(timer.interval_ns), ns_timespec(expiry)};
    if (timerfd_settime(fd, flags, &spec, nullptr) != 0)
      throw Error(fmt::format("cannot re-arm timerfd descriptor {}: {}", rec.fd, errno_text()));
  }
  uint64_t ticks = timer.unread_expirations;  // after settime, which clears them
  if (ticks && ioctl(fd, TFD_IOC_SET_TICKS, &ticks) != 0)
    throw Error(fmt::format("cannot give timerfd descriptor {} back its {} unread expirations: {}", rec.fd,
                            ticks, errno_text()));
  return fd;
}

namespace {

void drain_inotify_events(int fd) {
  alignas(inotify_event) char buf[65536];
  while (read(fd, buf, sizeof buf) > 0) {
  }
}

}  // namespace

int open_inotify(const image::Image& img, const StasisFdRecord& rec) {
  const auto watches = saved_entries<StasisInotifyWatch>(img, rec, STASIS_FD_DATA_INOTIFY);
  int fd = checked(inotify_init1(IN_CLOEXEC | IN_NONBLOCK), rec, "an inotify instance");
  // Watch descriptors come from idr_alloc_cyclic(1, ...): each new watch gets the lowest free
  // number above the last one handed out, and a removed watch's number is not handed out again
  // until the numbers wrap at INT_MAX. A fresh instance thus numbers watches 1, 2, 3... in the
  // order they are added. Adding the saved watches by ascending wd, with a placeholder watch added
  // and removed for every number in between, gives each its old wd; placeholders up to the last
  // wd the program was handed make its next inotify_add_watch return what it would have.
  // The placeholder is a pipe of restart's own, watched through /proc: an inode no saved watch
  // can share (add_watch on an inode already watched would return that watch's wd instead).
  int placeholder[2];
  if (pipe2(placeholder, O_CLOEXEC) != 0)
    throw Error(fmt::format("cannot create a placeholder for inotify descriptor {}: {}", rec.fd, errno_text()));
  placeholder[0] = lift_descriptor(placeholder[0]);
  placeholder[1] = lift_descriptor(placeholder[1]);
  const std::string placeholder_path = fmt::format("/proc/self/fd/{}", placeholder[0]);
  int next_wd = 1;
  auto skip_until = [&](int wd) {
    for (int burnt = 1; next_wd < wd; burnt++) {
      int spare = inotify_add_watch(fd, placeholder_path.c_str(), IN_ATTRIB);
      if (spare < 0 || inotify_rm_watch(fd, spare) != 0)
        throw Error(fmt::format("cannot skip watch {} of inotify descriptor {}: {}", next_wd, rec.fd, errno_text()));
      next_wd = spare + 1;
      if (burnt % 1024 == 0) drain_inotify_events(fd);  // each removal queued an IN_IGNORED
    }
  };
  for (const StasisInotifyWatch& w : watches) {
    skip_until(w.wd);
    int wd = inotify_add_watch(fd, w.path, w.mask | w.add_flags);
    if (wd < 0)
      throw Error(fmt::format("cannot watch {} again (inotify descriptor {}, watch {}): {}", w.path, rec.fd, w.wd,
                              errno_text()));
    if (wd != w.wd)
      throw Error(fmt::format("inotify descriptor {}: {} came back as watch {} instead of {} (is it the same "
                              "file as another watched path now?)", rec.fd, w.path, wd, w.wd));
    next_wd = wd + 1;
  }
  skip_until(static_cast<int>(kind_data_of<StasisInotifyData>(rec).last_wd) + 1);
  close(placeholder[0]);
  close(placeholder[1]);
  // The placeholders' IN_IGNORED events must not reach the program. Events of the real watches
  // queued during these microseconds go too: they happened while the program was not running.
  drain_inotify_events(fd);
  if (!nonblocking(rec)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

namespace {

bool fired_one_shot(const StasisEpollInterest& interest) {
  return (interest.events & EPOLLONESHOT) &&
         !(interest.events & ~(EPOLLONESHOT | EPOLLET | EPOLLWAKEUP | EPOLLEXCLUSIVE));
}

void add_interest(int epoll_fd, const StasisEpollInterest& interest, uint32_t events) {
  epoll_event event{events, {.u64 = interest.data}};
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, interest.fd, &event) != 0)
    throw Error(fmt::format("cannot add descriptor {} to the interest list of epoll descriptor {} again: {}",
                            interest.fd, epoll_fd, errno_text()));
}

void restore_interest_list(int epoll_fd, const std::vector<StasisEpollInterest>& interests) {
  // EPOLL_CTL_ADD always arms EPOLLERR and EPOLLHUP, so a one-shot interest that had fired (no
  // event bits left) cannot be added disarmed. It is added first, armed for everything, and fired
  // once by epoll_wait while nothing else is in the list: that leaves it exactly as saved. The
  // checkpoint made sure its target was ready for something.
  std::vector<StasisEpollInterest> fired;
  for (const auto& interest : interests)
    if (fired_one_shot(interest)) fired.push_back(interest);
  for (const auto& interest : fired)
    add_interest(epoll_fd, interest,
                 interest.events | EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM |
                     EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP);
  if (!fired.empty()) {
    std::vector<epoll_event> events(fired.size());
    int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 0);
    if (n != static_cast<int>(fired.size()))
      throw Error(fmt::format("epoll descriptor {}: {} of its {} fired one-shot interests could not be "
                              "disarmed again (their descriptors are ready for nothing)",
                              epoll_fd, fired.size() - std::max(n, 0), fired.size()));
  }
  for (const auto& interest : interests)
    if (!fired_one_shot(interest)) add_interest(epoll_fd, interest, interest.events);
}

}  // namespace

void check_timerfd(const image::Image& img, const StasisFdRecord& rec) {
  const uint64_t clock = kind_data_of<StasisTimerfdData>(rec).clock;
  int probe = timerfd_create(static_cast<int>(clock), TFD_CLOEXEC);
  if (probe < 0)
    throw Error(fmt::format("{}: timerfd descriptor {} uses clock {}, which this system cannot give a timer: {}",
                            img.path(), rec.fd, clock, errno_text()));
  close(probe);
}

void check_epoll(const image::Image& img, const StasisFdRecord& rec) {
  saved_entries<StasisEpollInterest>(img, rec, STASIS_FD_DATA_EPOLL);
}

void check_inotify(const image::Image& img, const StasisFdRecord& rec) {
  for (const auto& w : saved_entries<StasisInotifyWatch>(img, rec, STASIS_FD_DATA_INOTIFY)) {
    struct stat st;
    int rc = (w.add_flags & IN_DONT_FOLLOW) ? lstat(w.path, &st) : stat(w.path, &st);
    if (rc != 0)
      throw Error(fmt::format("{} (watch {} of inotify descriptor {}) is gone; restore it to restart", w.path,
                              w.wd, rec.fd));
  }
}

int open_epoll(const image::Image&, const StasisFdRecord& rec) {
  int fd = checked(epoll_create1(EPOLL_CLOEXEC), rec, "an epoll instance");
  if (nonblocking(rec)) fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;  // its interests come in finish_event_fds
}

void finish_event_fds(const image::Image& img) {
  std::map<int, const StasisFdRecord*> by_fd;
  for (const auto& rec : img.fds()) by_fd[rec.fd] = &rec;
  auto epoll_owning = [&](int fd) -> const StasisFdRecord* {  // the record with the interest list
    auto it = by_fd.find(fd);
    if (it == by_fd.end() || it->second->kind != STASIS_FD_EPOLL) return nullptr;
    const StasisFdRecord* rec = it->second;
    return rec->same_description_as >= 0 ? by_fd.at(rec->same_description_as) : rec;
  };
  // An epoll watching another epoll is ready when that one is: inner lists are filled first, so
  // the outer instance sees their readiness (and disarms its fired one-shots) as saved.
  std::set<int> done;
  std::function<void(const StasisFdRecord&)> restore = [&](const StasisFdRecord& rec) {
    if (!done.insert(rec.fd).second) return;
    const auto interests = saved_entries<StasisEpollInterest>(img, rec, STASIS_FD_DATA_EPOLL);
    for (const auto& interest : interests)
      if (const StasisFdRecord* inner = epoll_owning(interest.fd)) restore(*inner);
    restore_interest_list(rec.fd, interests);
  };
  for (const auto& rec : img.fds())
    if (rec.kind == STASIS_FD_EPOLL && rec.same_description_as < 0) restore(rec);
}

// ---- describe (`stasis inspect --json`) --------------------------------------------------------
namespace {

const char* clock_name(uint64_t clock) {
  switch (clock) {
    case CLOCK_REALTIME: return "CLOCK_REALTIME";
    case CLOCK_MONOTONIC: return "CLOCK_MONOTONIC";
    case CLOCK_BOOTTIME: return "CLOCK_BOOTTIME";
    case CLOCK_REALTIME_ALARM: return "CLOCK_REALTIME_ALARM";
    case CLOCK_BOOTTIME_ALARM: return "CLOCK_BOOTTIME_ALARM";
    default: return "other";
  }
}

// The names of the bits of `mask` in `names` (bit value, name), and any bit left as a number.
nlohmann::json bit_names(uint64_t mask, std::initializer_list<std::pair<uint64_t, const char*>> names) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [bit, name] : names)
    if (mask & bit) out.push_back(name), mask &= ~bit;
  if (mask) out.push_back(fmt::format("{:#x}", mask));
  return out;
}

nlohmann::json epoll_events(uint32_t events) {
  return bit_names(events, {{EPOLLIN, "EPOLLIN"}, {EPOLLOUT, "EPOLLOUT"}, {EPOLLPRI, "EPOLLPRI"},
                            {EPOLLERR, "EPOLLERR"}, {EPOLLHUP, "EPOLLHUP"}, {EPOLLRDHUP, "EPOLLRDHUP"},
                            {EPOLLRDNORM, "EPOLLRDNORM"}, {EPOLLRDBAND, "EPOLLRDBAND"},
                            {EPOLLWRNORM, "EPOLLWRNORM"}, {EPOLLWRBAND, "EPOLLWRBAND"}, {EPOLLMSG, "EPOLLMSG"},
                            {EPOLLONESHOT, "EPOLLONESHOT"}, {EPOLLET, "EPOLLET"}, {EPOLLWAKEUP, "EPOLLWAKEUP"},
                            {EPOLLEXCLUSIVE, "EPOLLEXCLUSIVE"}});
}

nlohmann::json signal_names(uint64_t mask) {
  nlohmann::json out = nlohmann::json::array();
  for (int sig = 1; sig <= 64; sig++)
    if (mask & (1ull << (sig - 1))) {
      const char* abbrev = sigabbrev_np(sig);
      out.push_back(abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("SIG{}", sig));
    }
  return out;
}

}  // namespace

void describe_signalfd(const image::Image&, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto sfd = kind_data_of<StasisSignalfdData>(rec);
  state["mask"] = fmt::format("{:#x}", sfd.mask);
  state["signals"] = signal_names(sfd.mask);
}

void describe_timerfd(const image::Image&, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto t = kind_data_of<StasisTimerfdData>(rec);
  state["clock"] = clock_name(t.clock);
  state["clock_id"] = t.clock;
  state["flags"] = bit_names(t.settime_flags, {{TFD_TIMER_ABSTIME, "TFD_TIMER_ABSTIME"},
                                               {TFD_TIMER_CANCEL_ON_SET, "TFD_TIMER_CANCEL_ON_SET"}});
  state["armed"] = t.next_expiration_ns != 0;
  // Absolute: on the timer's clock; else: from the checkpoint.
  state["next_expiration_ns"] = t.next_expiration_ns;
  state["interval_ns"] = t.interval_ns;
  state["unread_expirations"] = t.unread_expirations;
  if (t.settime_flags & TFD_TIMER_ABSTIME) state["clock_at_checkpoint_ns"] = t.clock_at_checkpoint_ns;
}

void describe_epoll(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  state["interest_count"] = kind_data_of<StasisEpollData>(rec).interest_count;
  if (rec.same_description_as >= 0) return;  // the first descriptor of the description has them
  nlohmann::json interests = nlohmann::json::array();
  for (const auto& i : saved_entries<StasisEpollInterest>(img, rec, STASIS_FD_DATA_EPOLL))
    interests.push_back({{"fd", i.fd}, {"events", epoll_events(i.events)}, {"data", i.data}});
  state["interests"] = interests;
}

void describe_inotify(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  state["last_wd"] = kind_data_of<StasisInotifyData>(rec).last_wd;
  if (rec.same_description_as >= 0) return;
  nlohmann::json watches = nlohmann::json::array();
  for (const auto& w : saved_entries<StasisInotifyWatch>(img, rec, STASIS_FD_DATA_INOTIFY))
    watches.push_back({{"wd", w.wd}, {"path", w.path}, {"mask", fmt::format("{:#x}", w.mask)},
                       {"add_flags", fmt::format("{:#x}", w.add_flags)}});
  state["watches"] = watches;
}

}  // namespace stasis::restore
