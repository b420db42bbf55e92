// The coordinator: one per computation. Authenticates every connection, runs the checkpoint and
// restart barriers across all processes, answers `stasis` commands and the name service.
// One thread, one epoll loop; nothing waits on a single client.
#pragma once
#include <cstdint>
#include <string>

#include "protocol/protocol.h"

namespace stasis::coordinator {

struct Options {
  std::string host = "127.0.0.1";       // numeric IPv4 or IPv6 address to listen on
  uint16_t port = STASIS_DEFAULT_PORT;  // 0 = any free port
  std::string port_file;                // written (atomically) once listening
  std::string ckpt_dir;                 // "" = $STASIS_CKPT_DIR or ./stasis-ckpt
  double interval = 0;                  // seconds between automatic checkpoints; 0 = none
  std::string compress;  // "zstd" / "lz4" / "none"; "" = $STASIS_COMPRESS or the processes' default
  bool exit_when_idle = false;
  bool daemon = false;
  std::string log_file;  // daemon only; "" = <ckpt_dir>/coordinator.log
  unsigned keep = 0;     // complete generations to keep; 0 = all
  double barrier_timeout = 600;
  double handshake_timeout = 5;
  double kill_timeout = 10;
  // After `stasis restart` announces restarted processes: how long --exit-when-idle waits for
  // them (their images may take long to load).
  double restart_patience = 600;
};

// Runs a coordinator until SIGTERM/SIGINT (or, with exit_when_idle, its computation ends) and
// returns the exit status. With options.daemon, the calling process returns 0 as soon as the
// daemon listens (its port file written) and the daemon itself returns from this call when it
// ends. Throws stasis::Error for anything that prevents it from starting.
int run_coordinator(Options options);

}  // namespace stasis::coordinator
