// Restart side of the clock handling (timers.h): the test hook that makes a restart on the same
// boot look like one on a machine whose clocks are behind the checkpoint's.
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "common/error.h"
#include "coordinator/command_environment.h"
#include "plugins/process/timers.h"

namespace stasis::restore {

int64_t test_clock_shift_ns_from_env() {
  const std::string env = CommandEnvironment::read().test_clock_shift_ns;
  if (env.empty()) return 0;
  const char* text = env.c_str();
  char* end = nullptr;
  errno = 0;
  long long shift = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || shift < 0)
    throw Error(fmt::format("STASIS_TEST_CLOCK_SHIFT_NS={} is not a number of nanoseconds >= 0", text));
  return shift;
}

}  // namespace stasis::restore
