// Variables of a launch that a process started on another host needs to behave the same, put on
// its remote command line (ssh passes no environment): by the runtime's rewrite of a remote
// launcher's command (remote_launch.cc) and by the ssh relay (../ssh/relay/). The coordinator's
// address is not among them: each writer takes it from where it is current.
#pragma once

namespace stasis {

constexpr const char* kForwardedVariables[] = {
    "STASIS_RUNTIME_DIR", "STASIS_CKPT_DIR",   "STASIS_COMPRESS",         "STASIS_INCREMENTAL",
    "STASIS_FULL_EVERY",  "STASIS_PLUGINS",    "STASIS_SAVE_FILES",       "STASIS_INTERVAL",
    "STASIS_SIGNAL",      "STASIS_FORKED_CHECKPOINT", "STASIS_REMOTE_LAUNCHERS", "STASIS_IB",
    "STASIS_SSH_RELAY",   "STASIS_RELAY"};

}  // namespace stasis
