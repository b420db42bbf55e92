/* Stasis plugin API.
 *
 * A plugin is a shared library loaded into every process of a computation (`stasis launch
 * --plugin PATH` or STASIS_PLUGINS=PATH[:PATH...]). From a constructor it registers a
 * stasis_plugin_t; the runtime then calls plugin->event() at each step of the checkpoint and
 * restart sequences (see docs/plugin-api.md for the sequence diagram).
 *
 * The plugin's memory is saved and restored with the rest of the process, so plugins keep their
 * own state in ordinary variables; what a plugin must do on STASIS_EVENT_RESTART is re-create
 * the kernel or device state that memory alone does not bring back (descriptors, registrations,
 * connections).
 *
 * Rules for event handlers (they run in the runtime's checkpoint thread while user threads may
 * be stopped holding libc locks): from PRE_CHECKPOINT to RESUME/RESTART do not call malloc, free,
 * printf/stdio, or anything else that may take a lock a user thread holds. Use system calls and
 * preallocated memory. INIT, EXIT and ATFORK_CHILD run in ordinary program context.
 */
#ifndef STASIS_PLUGIN_H
#define STASIS_PLUGIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STASIS_PLUGIN_API_VERSION 1

typedef enum stasis_event {
  STASIS_EVENT_INIT = 1,         /* the runtime joined the coordinator (before main) */
  STASIS_EVENT_PRE_SUSPEND = 2,  /* a checkpoint begins; user threads still run */
  STASIS_EVENT_DRAIN = 3,        /* user threads stopped: drain channels the plugin owns */
  STASIS_EVENT_PRE_CHECKPOINT = 4, /* user threads stopped: last moment before the image write */
  STASIS_EVENT_RESUME = 5,       /* the checkpoint is durable (or failed); threads about to run */
  STASIS_EVENT_RESTART = 6,      /* in the restarted process, before user threads run again */
  STASIS_EVENT_EXIT = 7,         /* the process is exiting normally */
  STASIS_EVENT_ATFORK_CHILD = 8, /* in a child after fork() */
  STASIS_EVENT_BARRIER = 9,      /* user threads stopped: a barrier a plugin added (data->barrier);
                                    every process of the computation runs it before any goes on */
} stasis_event_t;

typedef struct stasis_event_data {
  uint64_t generation;   /* the checkpoint's generation (RESTART: the one restarted from) */
  const char* ckpt_dir;  /* PRE_CHECKPOINT: the generation directory the image goes to */
  int checkpoint_ok;     /* RESUME: 1 if this process wrote its image */
  const char* barrier;   /* BARRIER: its name */
} stasis_event_data_t;

typedef struct stasis_plugin {
  uint32_t api_version; /* STASIS_PLUGIN_API_VERSION */
  const char* name;     /* short, unique: "example", "infiniband", ... */
  /* Returns 0; a non-zero return from PRE_SUSPEND, DRAIN or PRE_CHECKPOINT fails the checkpoint
   * (the computation keeps running and the previous checkpoint stays the newest). */
  int (*event)(stasis_event_t event, const stasis_event_data_t* data, void* state);
  void* state; /* passed back to event() */
  /* Optional, NULL-terminated: barriers this plugin adds to every checkpoint. The coordinator
   * runs them, in order, after "drain" and before "checkpoint", across all processes: a plugin
   * that needs its peers in other processes to reach a step first (a coordinated drain) gets
   * STASIS_EVENT_BARRIER for each only when every process is at it. Names are at most 31
   * characters of [a-z0-9_-]. */
  const char* const* barriers;
} stasis_plugin_t;

/* Registers a plugin (the struct must stay valid for the process's lifetime). Returns 0, or -1
 * if the runtime is not present, the API version differs, or too many plugins are registered.
 * Resolved at run time so a plugin also loads (and does nothing) outside Stasis. */
int stasis_register_plugin(const stasis_plugin_t* plugin) __attribute__((weak));

/* Appends one line to the process's Stasis log (stderr), without allocating: usable from any
 * event. */
void stasis_plugin_log(const char* message) __attribute__((weak));

/* From an event handler about to return non-zero: the one-line reason (naming the object and
 * its kind) that the checkpoint's failure reports instead of "plugin NAME failed". */
void stasis_plugin_refuse(const char* message) __attribute__((weak));

/* Marks thread `tid` (exempt=1) as one the checkpoint must not stop, or unmarks it (exempt=0,
 * before it ends: tids are reused). For threads a library runs on the plugin's behalf that the
 * plugin itself ends before the image is written (e.g. by closing the library's device at its
 * last barrier): they keep running while user threads are stopped, so the plugin can drive and
 * join them. Such a thread is not in the image. Returns 0, or -1 when 64 threads are marked. */
int stasis_plugin_exempt_thread(int tid, int exempt) __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif
