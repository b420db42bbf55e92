// The image records of the event descriptors: what each keeps in StasisFdRecord::kind_data
// (same bytes as ever: each field is the kind_data word named beside it). Variable-length state
// goes in FD_DATA records: epoll's StasisEpollInterest[] (EPOLL), inotify's StasisInotifyWatch[]
// (INOTIFY), both in image/format.h.
#pragma once
#include "image/kind_data.h"

// STASIS_FD_EPOLL
typedef struct StasisEpollData {
  uint64_t interest_count;  // [0] entries of its FD_DATA EPOLL
} StasisEpollData;
STASIS_KIND_FIELD(StasisEpollData, interest_count, 0);

// STASIS_FD_SIGNALFD
typedef struct StasisSignalfdData {
  uint64_t mask;  // [0] bit N-1 = signal N
} StasisSignalfdData;
STASIS_KIND_FIELD(StasisSignalfdData, mask, 0);

// STASIS_FD_TIMERFD
typedef struct StasisTimerfdData {
  uint64_t clock;               // [0] clock id
  uint64_t settime_flags;       // [1] TFD_TIMER_* of the last timerfd_settime
  uint64_t unread_expirations;  // [2] expirations not yet read
  // [3] next expiration in ns: from the checkpoint, or absolute on the clock with
  // TFD_TIMER_ABSTIME; 0 = disarmed
  uint64_t next_expiration_ns;
  uint64_t interval_ns;         // [4]
  uint64_t clock_at_checkpoint_ns;  // [5] the clock's time at the checkpoint (TFD_TIMER_ABSTIME)
} StasisTimerfdData;
STASIS_KIND_FIELD(StasisTimerfdData, clock, 0);
STASIS_KIND_FIELD(StasisTimerfdData, settime_flags, 1);
STASIS_KIND_FIELD(StasisTimerfdData, unread_expirations, 2);
STASIS_KIND_FIELD(StasisTimerfdData, next_expiration_ns, 3);
STASIS_KIND_FIELD(StasisTimerfdData, interval_ns, 4);
STASIS_KIND_FIELD(StasisTimerfdData, clock_at_checkpoint_ns, 5);

// STASIS_FD_INOTIFY
typedef struct StasisInotifyData {
  uint64_t watch_count;  // [0] entries of its FD_DATA INOTIFY, by ascending wd
  uint64_t last_wd;      // [1] the last watch descriptor handed out
} StasisInotifyData;
STASIS_KIND_FIELD(StasisInotifyData, watch_count, 0);
STASIS_KIND_FIELD(StasisInotifyData, last_wd, 1);
