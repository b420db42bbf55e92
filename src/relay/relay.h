// A host's relay (README.md): the processes of a computation on one host join it over a Unix
// socket, and it speaks for all of them to the coordinator over one authenticated connection,
// in batches, so the coordinator's work per checkpoint grows with hosts, not processes.
#pragma once
#include <string>

#include "coordinator/coord_address.h"

namespace stasis::relay {

struct Options {
  CoordAddress coordinator;
  std::string log_file;  // "" = stderr
  // The abstract socket's name: "" = socket_name(coordinator). Stand-ins for several hosts on
  // one machine give each relay its own.
  std::string socket;
  // How long answers to a barrier are held for the processes that have not answered yet,
  // before what is there goes up anyway (a slow process does not hold its host's others).
  double hold_seconds = 0.02;
};

// The abstract Unix socket name (without the leading NUL) of the relay for `coordinator` on this
// host: one per user, coordinator and network namespace. The runtime builds the same name
// (src/runtime/runtime.cc).
std::string socket_name(const CoordAddress& coordinator);

// Connects to the coordinator, listens on socket_name() and serves until the coordinator goes
// (exit status 0), or until it finds another relay already serving this host (status 0 too).
// Throws stasis::Error when it cannot start.
int run_relay(const Options& options);

}  // namespace stasis::relay
