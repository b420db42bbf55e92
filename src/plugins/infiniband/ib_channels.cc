// The InfiniBand plugin's completion channels across a re-creation (docs/infiniband.md).
//
// The program holds the channel's descriptor number, may block on it (inside ibv_get_cq_event or
// in its own poll/epoll) and may have registered it in epoll sets. The real channel is destroyed
// at each checkpoint and made again afterwards, its new file moved onto the old number. The
// kernel forgets epoll registrations with the file, so they are noted from the epoll sets'
// fdinfo before the file goes and made again after. Events the real channel held at the
// teardown (a completion the drain took, on an armed CQ) are served again: until they are, the
// number holds a readable eventfd so that a waiter wakes.
//
// Runs on the checkpoint thread with user threads stopped (no malloc, no stdio) and, for the
// switch from placeholder to real channel, in ibv_get_cq_event inside the gate.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fdinfo.h"
#include "plugins/infiniband/ib_plugin.h"
#include "runtime/rt.h"  // for_each_proc_number (header only)

namespace stasis::ib {
namespace {

// The hexadecimal number after `key` in `text` (an fdinfo line), or 0.
uint64_t hex_after(const char* text, const char* key) {
  const char* p = strstr(text, key);
  if (!p) return 0;
  p += strlen(key);
  while (*p == ' ') p++;
  uint64_t value = 0;
  for (;; p++) {
    int digit = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
    if (digit < 0) return value;
    value = value * 16 + static_cast<uint64_t>(digit);
  }
}

long decimal_after(const char* text, const char* key) {
  const char* p = strstr(text, key);
  if (!p) return -1;
  p += strlen(key);
  while (*p == ' ') p++;
  long value = 0;
  for (; *p >= '0' && *p <= '9'; p++) value = value * 10 + (*p - '0');
  return value;
}

// The registrations of `target` in the epoll set `epoll_fd` ("tfd: N events: X data: Y" lines
// of its fdinfo, fs/eventpoll.c).
void note_registrations(VChannel* ch, long epoll_fd, int target) {
  for_each_fdinfo_line(static_cast<int>(epoll_fd), [&](const char* line) {
    if (strncmp(line, "tfd:", 4) == 0 && decimal_after(line, "tfd:") == target &&
        ch->watcher_count < kMaxEpollWatchers)
      ch->watchers[ch->watcher_count++] = {static_cast<int>(epoll_fd), static_cast<uint32_t>(hex_after(line, "events:")),
                                           hex_after(line, "data:")};
  });
}

bool has_replayed_events(const VChannel* ch) {
  for (VCq* cq : g_cqs)
    if (cq && cq->channel == ch && cq->replayed_events > 0) return true;
  return false;
}

// The real channel's file onto the program's number, from now on read directly.
bool settle_real_channel(VChannel* ch) {
  if (!move_onto_channel_number(ch, ch->real->fd)) return false;
  ch->real->fd = ch->ibv.fd;
  ch->placeholder = false;
  return true;
}

}  // namespace

void note_channel_watchers(VChannel* ch) {
  int number = ch->ibv.fd;
  int status = fcntl(number, F_GETFL);
  if (status >= 0) ch->status_flags = status & O_NONBLOCK;
  int descriptor = fcntl(number, F_GETFD);
  if (descriptor >= 0) ch->close_on_exec = descriptor & FD_CLOEXEC;
  ch->watcher_count = 0;
  rt::for_each_proc_number("/proc/self/fd", [&](long fd, const char* name, long dir) {
    char target[64];
    long len = readlinkat(static_cast<int>(dir), name, target, sizeof target - 1);
    if (len <= 0) return true;
    target[len] = 0;
    if (strcmp(target, "anon_inode:[eventpoll]") == 0) note_registrations(ch, fd, number);
    return true;
  });
}

bool move_onto_channel_number(VChannel* ch, int fd) {
  int number = ch->ibv.fd;
  if (fd != number) {
    if (dup3(fd, number, ch->close_on_exec ? O_CLOEXEC : 0) < 0) return false;
    close(fd);
  }
  int status = fcntl(number, F_GETFL);
  if (status >= 0) fcntl(number, F_SETFL, (status & ~O_NONBLOCK) | ch->status_flags);
  for (int i = 0; i < ch->watcher_count; i++) {
    epoll_event event{};
    event.events = ch->watchers[i].events;
    event.data.u64 = ch->watchers[i].data;
    if (epoll_ctl(ch->watchers[i].epoll_fd, EPOLL_CTL_ADD, number, &event) != 0 && errno == EEXIST)
      epoll_ctl(ch->watchers[i].epoll_fd, EPOLL_CTL_MOD, number, &event);
  }
  return true;
}

void take_channel_events(VChannel* ch) {
  for (;;) {
    pollfd ready = {ch->real->fd, POLLIN, 0};
    if (poll(&ready, 1, 0) != 1 || !(ready.revents & POLLIN)) break;
    ibv_cq* real_cq = nullptr;
    void* cq_context = nullptr;
    if (g_real.get_cq_event(ch->real, &real_cq, &cq_context) != 0) break;
    // The real CQ's context is its virtual CQ (ibv_create_cq).
    for (VCq* cq : g_cqs)
      if (cq && &cq->ibv == cq_context) {
        cq->replayed_events++;
        cq->real_events_unacked++;
        cq->armed = false;  // the event fired
      }
  }
  // An armed CQ with drained completions whose event has not shown yet (an adapter raises it
  // after writing the completion): the waiter must still wake for them.
  for (VCq* cq : g_cqs)
    if (cq && cq->channel == ch && cq->armed && cq->drained_count > 0) {
      cq->replayed_events++;
      cq->armed = false;
    }
  note_channel_watchers(ch);
}

void tear_down_channel(VChannel* ch) {
  g_real.destroy_comp_channel(ch->real);
  // The number stays taken (by /dev/null, which every restart can open) so that nothing else
  // lands on it before the re-creation.
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0 && dup3(null_fd, ch->ibv.fd, ch->close_on_exec ? O_CLOEXEC : 0) >= 0) close(null_fd);
  ch->real = nullptr;
  ch->placeholder = false;
}

bool recreate_channel(VChannel* ch) {
  if (!(ch->real = g_real.create_comp_channel(ch->ctx->real))) return false;
  if (!has_replayed_events(ch)) return settle_real_channel(ch);
  int wake = eventfd(1, EFD_CLOEXEC);
  if (wake < 0 || !move_onto_channel_number(ch, wake)) return false;
  ch->placeholder = true;
  return true;
}

bool take_replayed_event(VChannel* ch, ibv_cq** cq, void** cq_context) {
  if (!ch->placeholder) return false;
  bool served = false;
  for (VCq* candidate : g_cqs)
    if (candidate && candidate->channel == ch && candidate->replayed_events > 0) {
      candidate->replayed_events--;
      *cq = &candidate->ibv;
      *cq_context = candidate->ibv.cq_context;
      served = true;
      break;
    }
  if (!has_replayed_events(ch)) {
    note_channel_watchers(ch);  // registered on the placeholder now
    settle_real_channel(ch);
  }
  return served;
}

}  // namespace stasis::ib
