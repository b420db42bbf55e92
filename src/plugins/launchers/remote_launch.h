// Remote launches (remote_launch.cc): the remote command of ssh, rsh and other configured
// launchers runs under `stasis launch --join`, so the remote process joins this computation.
#pragma once
#include <spawn.h>

using StasisSpawnFn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                              const posix_spawnattr_t*, char* const[], char* const[]);
// posix_spawn or posix_spawnp (`real`) with a launcher's remote command rewritten.
int spawn_remote_aware(StasisSpawnFn real, pid_t* pid, const char* program,
                       const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
                       char* const argv[], char* const envp[]);
