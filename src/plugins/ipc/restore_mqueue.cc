// POSIX message queues at restart: one new queue per saved queue (by inode), with its
// attributes, permissions and messages; every saved description of it is opened from that one.
#include <fcntl.h>
#include <mqueue.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <map>

#include <nlohmann/json.hpp>
#include "common/error.h"
#include "plugins/files/restore.h"
#include "plugins/ipc/records.h"
#include "plugins/ipc/restore_ipc.h"

namespace stasis::restore {
namespace {

constexpr char kDeleted[] = " (deleted)";

std::map<std::pair<uint64_t, uint64_t>, int> g_queues;  // (dev, ino) of the saved queue -> ours

bool unlinked(const StasisFdRecord& rec) { return std::string_view(rec.path).ends_with(kDeleted); }

std::string queue_name(const StasisFdRecord& rec) {
  std::string_view path(rec.path);
  if (unlinked(rec)) path.remove_suffix(sizeof kDeleted - 1);
  return std::string(path);
}

// A queue left under the name by the checkpointed process (killed after the checkpoint) is
// stale; anything else there is someone's queue, which restart must not take over.
void clear_the_way(const image::Image& img, const StasisFdRecord& rec, const std::string& name) {
  mqd_t existing = mq_open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (existing < 0) return;
  struct stat st;
  bool same = fstat(existing, &st) == 0 && st.st_ino == rec.ino;
  mq_close(existing);
  if (same && checkpointed_process_ended(img) && mq_unlink(name.c_str()) == 0) return;
  throw Error(fmt::format("the POSIX message queue {} (descriptor {} of the program) exists and is not the "
                          "one saved; remove it (mq_unlink, or rm /dev/mqueue{} where mounted) or stop the "
                          "process using it, then restart", name, rec.fd, name));
}

void refill(const image::Image& img, const StasisFdRecord& rec, mqd_t queue) {
  for (const auto& f : img.fds()) {
    if (f.kind != STASIS_FD_MQUEUE || f.dev != rec.dev || f.ino != rec.ino ||
        !img.has_fd_data(f.fd, STASIS_FD_DATA_MQUEUE_MESSAGES))
      continue;
    std::vector<char> bytes = img.fd_data(f.fd, STASIS_FD_DATA_MQUEUE_MESSAGES);
    uint64_t sent = 0;
    for (size_t at = 0; at + sizeof(StasisMqueueMessage) <= bytes.size(); sent++) {
      StasisMqueueMessage header;
      std::memcpy(&header, bytes.data() + at, sizeof header);
      at += sizeof header;
      if (header.size > bytes.size() - at) break;
      if (mq_send(queue, bytes.data() + at, header.size, header.priority) != 0)
        throw Error(fmt::format("cannot put message {} back into the POSIX message queue {}: {}", sent + 1,
                                queue_name(rec), std::strerror(errno)));
      at += header.size;
    }
    if (const uint64_t queued = kind_data_of<StasisMqueueData>(f).queued; sent != queued)
      throw Error(fmt::format("{} is corrupt: the POSIX message queue {} has {} messages saved, not {}",
                              img.path(), queue_name(rec), sent, queued));
    return;
  }
}

int create_queue(const image::Image& img, const StasisFdRecord& rec) {
  std::string name = queue_name(rec);
  // An unlinked queue is made under a name of restart's own, unlinked at once: the program's
  // name may belong to a newer queue by now.
  std::string create_as = unlinked(rec) ? fmt::format("/stasis-restart-{}-{}", getpid(), rec.ino) : name;
  if (!unlinked(rec)) clear_the_way(img, rec, name);
  struct mq_attr attr = {};
  const auto saved = kind_data_of<StasisMqueueData>(rec);
  attr.mq_maxmsg = static_cast<long>(saved.max_messages);
  attr.mq_msgsize = static_cast<long>(saved.message_size);
  mqd_t queue = mq_open(create_as.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NONBLOCK | O_CLOEXEC, 0600, &attr);
  if (queue < 0)
    throw Error(fmt::format("cannot re-create the POSIX message queue {} ({} messages of {} bytes) for "
                            "descriptor {}: {}", name, attr.mq_maxmsg, attr.mq_msgsize, rec.fd, std::strerror(errno)));
  if (unlinked(rec)) mq_unlink(create_as.c_str());
  refill(img, rec, queue);
  if (fchmod(queue, static_cast<mode_t>(saved.mode)) != 0)
    throw Error(fmt::format("cannot give the POSIX message queue {} its mode {:o}: {}", name, saved.mode,
                            std::strerror(errno)));
  return lift_descriptor(queue);
}

}  // namespace

int open_mqueue(const image::Image& img, const StasisFdRecord& rec) {
  auto [it, created] = g_queues.try_emplace({rec.dev, rec.ino}, -1);
  if (created) it->second = create_queue(img, rec);
  // A description of its own, as the program's mq_open made: opened from ours through /proc.
  int fd = open(fmt::format("/proc/self/fd/{}", it->second).c_str(), (rec.flags & O_ACCMODE) | O_CLOEXEC);
  if (fd < 0)
    throw Error(fmt::format("cannot open the POSIX message queue {} again for descriptor {}: {}", queue_name(rec),
                            rec.fd, std::strerror(errno)));
  fcntl(fd, F_SETFL, rec.flags & O_NONBLOCK);
  return fd;
}

void describe_mqueue(const image::Image&, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto q = kind_data_of<StasisMqueueData>(rec);
  state["max_messages"] = q.max_messages;
  state["message_size"] = q.message_size;
  state["mode"] = fmt::format("{:04o}", q.mode);
  state["queued_messages"] = q.queued;
}

}  // namespace stasis::restore
