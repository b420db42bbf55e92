// POSIX message queues (checkpoint side): attributes and the queued messages with their
// priorities. A queue cannot be read without taking its messages off, so they are received
// (highest priority first, oldest first within a priority) and at once sent back in that order,
// which rebuilds the same queue, while every thread of the program is stopped.
#include <fcntl.h>
#include <mqueue.h>
#include <sys/statfs.h>

#include "plugins/ipc/ipc.h"
#include "plugins/ipc/records.h"

namespace stasis::rt {
namespace {

constexpr long kMqueueFsMagic = 0x19800202;  // the mqueue file system (linux/magic.h lacks it)

bool is_mqueue(int fd, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return false;
  struct statfs fs;
  return STASIS_SYS2(SYS_fstatfs, fd, &fs) == 0 && fs.f_type == kMqueueFsMagic;
}

// An earlier descriptor of this checkpoint already saved the messages of this queue.
bool messages_saved(const FdDataList& data, const struct stat& st) {
  for (uint32_t i = 0; i < data.count(); i++) {
    struct stat other;
    if (data[i].tag == STASIS_FD_DATA_MQUEUE_MESSAGES && STASIS_SYS2(SYS_fstat, data[i].fd, &other) == 0 &&
        other.st_dev == st.st_dev && other.st_ino == st.st_ino)
      return true;
  }
  return false;
}

// Reading a queue's descriptor gives "QSIZE:... NOTIFY:... SIGNO:... NOTIFY_PID:N".
bool notification_registered(int fd) {
  char text[160];
  long n = STASIS_SYS4(SYS_pread64, fd, text, sizeof text - 1, 0);
  if (n <= 0) return false;
  text[n] = 0;
  for (const char* p = text; *p; p++)
    if (str_starts(p, "NOTIFY_PID:")) {
      p += 11;
      while (*p == ' ') p++;
      return *p >= '1' && *p <= '9';
    }
  return false;
}

LogLine& name_queue(LogLine& error, const FdProbe& probe) {
  return error << "descriptor " << probe.fd << " is the POSIX message queue " << probe.link;
}

}  // namespace

int capture_mqueue_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error) {
  if (!is_mqueue(probe.fd, probe.st)) return 0;
  r.kind = STASIS_FD_MQUEUE;
  struct mq_attr attr;
  if (STASIS_SYS3(SYS_mq_getsetattr, probe.fd, nullptr, &attr) != 0) {
    name_queue(error, probe) << ", whose attributes cannot be read; not checkpointing";
    return -1;
  }
  set_kind_data(r, StasisMqueueData{static_cast<uint64_t>(attr.mq_maxmsg), static_cast<uint64_t>(attr.mq_msgsize),
                                    probe.st.st_mode & 07777u, static_cast<uint64_t>(attr.mq_curmsgs)});
  if (r.same_description_as >= 0 || messages_saved(data, probe.st)) return 1;

  // A descriptor of our own: the program's may be write-only, and its flags stay untouched.
  char proc_path[48] = "/proc/self/fd/";
  format_uint(proc_path + 14, static_cast<unsigned long>(probe.fd));
  long own = STASIS_SYS3(SYS_open, proc_path, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0);
  if (own < 0) {
    name_queue(error, probe) << ", which cannot be opened to read its messages (errno " << -own
                             << "); not checkpointing";
    return -1;
  }
  if (notification_registered(static_cast<int>(own))) {
    STASIS_SYS1(SYS_close, own);
    name_queue(error, probe) << ", with a notification registered (mq_notify), which this version of "
                             << "Stasis cannot restore; not checkpointing";
    return -1;
  }
  const uint64_t count = static_cast<uint64_t>(attr.mq_curmsgs);
  const uint64_t slot = sizeof(StasisMqueueMessage) + static_cast<uint64_t>(attr.mq_msgsize);
  char* saved = count ? static_cast<char*>(data.arena().alloc(count * slot)) : nullptr;
  uint64_t used = 0, received = 0;
  long failure = saved || !count ? 0 : -ENOMEM;
  while (!failure && received < count) {
    StasisMqueueMessage header = {};
    long n = STASIS_SYS5(SYS_mq_timedreceive, own, saved + used + sizeof header,
                         static_cast<uint64_t>(attr.mq_msgsize), &header.priority, nullptr);
    if (n == -EAGAIN) break;  // fewer than counted: nothing else can have taken them, but be safe
    if (n < 0) {
      failure = n;
      break;
    }
    header.size = static_cast<uint32_t>(n);
    __builtin_memcpy(saved + used, &header, sizeof header);
    used += sizeof header + static_cast<uint64_t>(n);
    received++;
  }
  for (uint64_t at = 0; at < used;) {  // every message back, in the order received
    StasisMqueueMessage header;
    __builtin_memcpy(&header, saved + at, sizeof header);
    long sent = STASIS_SYS5(SYS_mq_timedsend, own, saved + at + sizeof header, header.size,
                            header.priority, nullptr);
    if (sent != 0 && !failure) failure = sent;
    at += sizeof header + header.size;
  }
  STASIS_SYS1(SYS_close, own);
  if (failure) {
    name_queue(error, probe) << ": its messages cannot be copied (errno " << -failure
                             << "); not checkpointing";
    return -1;
  }
  if (used && !data.add_ref(probe.fd, STASIS_FD_DATA_MQUEUE_MESSAGES, saved, used)) {
    error << "too much descriptor state to save";
    return -1;
  }
  return 1;
}

}  // namespace stasis::rt
