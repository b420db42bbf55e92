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
  const char* ckpt_dir;  /* PRE_SUSPEND to RESUME: the generation directory the image goes to */
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

/* The value of the runtime's setting named `name` (an environment variable it reads once at start-up,
 * src/runtime/settings.h), or NULL when unset or not one. STASIS_IB_LIBRARY also takes the value a
 * restart's --setenv gave it, by the RESTART event. Plugins use this rather than getenv: user
 * threads may be stopped inside setenv. */
const char* stasis_plugin_setting(const char* name) __attribute__((weak));

/* The pid space this process's virtual pids belong to (BOOT_ID/PID_NAMESPACE_INODE of the kernel
 * where it first ran), as MANIFEST.json records it beside its pid: a pid names a process only
 * within its space, and the nodes of a cluster each have their own. NULL before the process
 * joined. A restart names a process VPID@PID_SPACE (docs/clusters.md, Virtual pids across hosts). */
const char* stasis_plugin_pid_space(void) __attribute__((weak));

/* From an event handler about to return non-zero: the one-line reason (naming the object and
 * its kind) that the checkpoint's failure reports instead of "plugin NAME failed". */
void stasis_plugin_refuse(const char* message) __attribute__((weak));

/* Marks thread `tid` (exempt=1) as one the checkpoint must not stop, or unmarks it (exempt=0,
 * before it ends: tids are reused). For threads a library runs on the plugin's behalf that the
 * plugin itself ends before the image is written (e.g. by closing the library's device at its
 * last barrier): they keep running while user threads are stopped, so the plugin can drive and
 * join them. Such a thread is not in the image. Returns 0, or -1 when 64 threads are marked. */
int stasis_plugin_exempt_thread(int tid, int exempt) __attribute__((weak));

/* Leaves memory out of this checkpoint's image: `count` ranges [ranges[2i], ranges[2i+1]),
 * page-aligned, sorted and disjoint, that belong to something the plugin re-creates itself after
 * a restart (the split MPI mode's lower half: src/plugins/mpi_split/README.md). A mapping that
 * reaches into a range is saved without that part; the restarted process has nothing mapped
 * there. Call it from PRE_CHECKPOINT (or DRAIN, BARRIER): it holds for the checkpoint under way
 * and is forgotten at RESUME. Returns 0, or -1 (nothing left out) when the ranges are malformed
 * or more than 4096: the plugin should then fail the checkpoint. */
int stasis_plugin_leave_out_memory(const uint64_t* ranges, uint32_t count) __attribute__((weak));
/* The same for descriptors: `count` descriptor numbers the image leaves out (not captured, not
 * restored; a restarted process has nothing open at those numbers). Returns 0, or -1 (nothing left
 * out) when a number is negative or there are more than 4096. */
int stasis_plugin_leave_out_fds(const int* fds, uint32_t count) __attribute__((weak));

/* The coordinator's name service, shared by every process of the computation on every host:
 * what processes exchange when the identifiers they know one another by change (a re-created
 * queue pair's number, a restarted process's new address). Keys are text (1 to 255 bytes);
 * name them after the plugin and the checkpoint (generation) they belong to. No allocation:
 * usable from every event (also RESTART: a restarted process joins the coordinator first) and
 * from program threads.
 *
 * publish: the entry belongs to this process; it replaces any entry of that key and goes when
 * the process withdraws its entries or leaves the computation (so a computation killed after a
 * checkpoint leaves nothing behind for its restart to mistake for its own). Values up to 3840
 * bytes. Returns 0, or -1 (not joined to a coordinator, key or value too long).
 * withdraw: removes every entry this process published whose key starts with `prefix` (the
 * plugin's own: other plugins' entries stay). Returns 0 or -1. */
int stasis_plugin_ns_publish(const char* key, const void* value, uint32_t len) __attribute__((weak));
int stasis_plugin_ns_withdraw(const char* prefix) __attribute__((weak));
/* The value published under `key` (copied up to `cap` bytes); with wait_ms > 0, waits up to that
 * long for it to be published. Returns the value's length (more than cap: truncated), or -1 (not
 * published in time, no coordinator). Each call opens a connection of its own (about 0.3 ms). */
long stasis_plugin_ns_lookup(const char* key, void* value, uint32_t cap, int wait_ms) __attribute__((weak));
/* Every entry whose key starts with `prefix`, in key order, into `out`: for each, the key and its
 * '\0', the value's length (uint32_t, unaligned), the value. Returns the bytes of the whole list
 * (more than cap: only the first cap bytes were copied), or -1. */
long stasis_plugin_ns_list(const char* prefix, void* out, uint32_t cap) __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif
