/* Stasis application API: optional calls a program can make to cooperate with checkpointing.
 * Header-only: the functions find the runtime at run time, so a program that uses them runs
 * unchanged (and they do nothing) when it is not started with `stasis launch`.
 * Link with -ldl on glibc older than 2.34. */
#ifndef STASIS_STASIS_H
#define STASIS_STASIS_H

#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STASIS_NOT_ENABLED (-1)      /* not running under Stasis (or the request failed) */
#define STASIS_AFTER_CHECKPOINT 1    /* the checkpoint was written; execution simply continues */
#define STASIS_AFTER_RESTART 2       /* execution continues in a process restarted from it */

static inline void* stasis__symbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

/* 1 when the program runs under Stasis with a live coordinator connection, else 0. */
static inline int stasis_is_enabled(void) {
  int (*fn)(void) = (int (*)(void))stasis__symbol("stasis_runtime_is_enabled");
  return fn ? fn() : 0;
}

/* Asks the coordinator for a checkpoint of the whole computation and returns once it is
 * complete: STASIS_AFTER_CHECKPOINT, or STASIS_AFTER_RESTART when this call returns in a
 * restarted process, or STASIS_NOT_ENABLED. */
static inline int stasis_checkpoint(void) {
  int (*fn)(void) = (int (*)(void))stasis__symbol("stasis_runtime_checkpoint");
  return fn ? fn() : STASIS_NOT_ENABLED;
}

/* Critical sections: no checkpoint starts between delay and allow (calls nest). A checkpoint
 * requested meanwhile waits until the section ends. Keep sections short. */
static inline void stasis_delay_checkpoints(void) {
  void (*fn)(void) = (void (*)(void))stasis__symbol("stasis_runtime_delay_checkpoints");
  if (fn) fn();
}
static inline void stasis_allow_checkpoints(void) {
  void (*fn)(void) = (void (*)(void))stasis__symbol("stasis_runtime_allow_checkpoints");
  if (fn) fn();
}

#ifdef __cplusplus
}
#endif
#endif
