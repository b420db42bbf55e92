// eventfd at restart: a new one with the saved counter and mode.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "plugins/eventfd/records.h"
#include "plugins/eventfd/restore_eventfd.h"

namespace stasis::restore {

int open_eventfd(const image::Image&, const StasisFdRecord& rec) {
  // eventfd() takes a 32-bit initial value; the counter is 64-bit, so it is written instead.
  const auto saved = kind_data_of<StasisEventfdData>(rec);
  int flags = EFD_CLOEXEC | (saved.semaphore ? EFD_SEMAPHORE : 0) | ((rec.flags & O_NONBLOCK) ? EFD_NONBLOCK : 0);
  int fd = eventfd(0, flags);
  if (fd < 0)
    throw Error(fmt::format("cannot re-create an eventfd for descriptor {}: {}", rec.fd, std::strerror(errno)));
  uint64_t count = saved.counter;
  if (count && write(fd, &count, sizeof count) != sizeof count)
    throw Error(fmt::format("cannot set the counter of eventfd descriptor {} to {}: {}", rec.fd, count,
                            std::strerror(errno)));
  return fd;
}

void describe_eventfd(const image::Image&, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto e = kind_data_of<StasisEventfdData>(rec);
  state["counter"] = e.counter;
  state["semaphore"] = e.semaphore != 0;
}

}  // namespace stasis::restore
