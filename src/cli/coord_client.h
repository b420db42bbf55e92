// How commands (and `launch`/`restart`) find, start and talk to a coordinator.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "coordinator/coord_address.h"
#include "protocol/protocol.h"

namespace stasis {

// The coordinator a command means: --coord (`option`) if given, else $STASIS_COORD, else inside a
// Slurm allocation its first node's address (restart/slurm_allocation.h), else 127.0.0.1:7781.
CoordAddress coordinator_address(const std::string& option);

// True if something accepts TCP connections at addr (does not authenticate).
bool coordinator_answers(const CoordAddress& addr);

struct CoordinatorOptions {
  std::string ckpt_dir;  // absolute; "" = coordinator default
  std::string compress;  // "" = default
  double interval = 0;   // seconds; 0 = none
};
// If nothing answers at addr, starts `stasis coordinator --daemon --exit-when-idle` there and
// waits until it listens. Returns the secret to hand to processes (hex). Throws stasis::Error.
std::string ensure_coordinator(const CoordAddress& addr, const CoordinatorOptions& options);
// ensure_coordinator, then `announcement` (STASIS_CMD_EXPECT_LAUNCH or _RESTART) to it, so that a
// coordinator that exits when idle waits for the processes to come; one that was exiting at this
// very moment (its last process just left) is replaced by a new one. Returns the secret.
std::string ensure_coordinator_expecting(const CoordAddress& addr, const CoordinatorOptions& options,
                                         uint32_t announcement);

// An authenticated command connection.
class CoordConnection {
 public:
  // Connects and authenticates as a command; throws stasis::Error with a one-line message
  // ("no coordinator at 127.0.0.1:7781: start one with `stasis launch` ..." and the like).
  explicit CoordConnection(const CoordAddress& addr);
  ~CoordConnection();
  CoordConnection(const CoordConnection&) = delete;
  CoordConnection& operator=(const CoordConnection&) = delete;
  // Sends one COMMAND and waits for its reply; returns the reply text; sets ok from header.arg.
  std::string command(const StasisCommand& cmd, bool& ok);
  // The coordinator's name service (what restarts on several hosts meet through).
  void publish(const std::string& key, const std::string& value);
  // The value published under `key`, or nullopt if none is (yet).
  std::optional<std::string> lookup(const std::string& key);

 private:
  int fd_ = -1;
};

}  // namespace stasis
