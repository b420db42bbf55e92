// `stasis restart --setenv NAME=VALUE`: the restored environment is the checkpoint's; these
// assignments change it in every restarted process, before the plugins re-create what they manage
// (softib reads SOFTIB_TRANSPORT when its device is opened again).
#pragma once

namespace stasis::rt {

// entries: "NAME=VALUE\0" ... "\0" (StasisRestartInfo::setenv_entries), each name once.
// Called while user threads are stopped.
void apply_restart_environment(const char* entries);

}  // namespace stasis::rt
