// The OpenGL plugin (README.md): preloaded by `stasis launch --x11`, in front of libGL. It
// records the GL state a program builds in an indirect GLX context (whose state lives in the X
// server, as a GPU driver's lives outside the process), and after a restart replays it into the
// context the X proxy re-created, before the program's next GL call.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <GL/glx.h>

#include "gl_plugin.h"
#include "gl_record.h"
#include "stasis/plugin.h"

#define GL_EXPORT __attribute__((visibility("default")))

volatile int gl_recording;
volatile int gl_replay_pending;

static struct {
  Bool (*MakeCurrent)(Display*, GLXDrawable, GLXContext);
  Bool (*MakeContextCurrent)(Display*, GLXDrawable, GLXDrawable, GLXContext);
  Bool (*IsDirect)(Display*, GLXContext);
  void (*DestroyContext)(Display*, GLXContext);
  void (*SwapBuffers)(Display*, GLXDrawable);
  __GLXextFuncPtr (*GetProcAddress)(const GLubyte*);
  __GLXextFuncPtr (*GetProcAddressARB)(const GLubyte*);
} glx;

static GLXContext g_context;      // the indirect context recorded
static int g_replay_enabled = 1;  // STASIS_GL_REPLAY=0: record, never replay (to show the replay matters)
static int g_verbose;             // STASIS_GL_VERBOSE=1: a line per replay with the log's size
static char g_unsupported[160];   // the first thing the program did that the record cannot bring back
static unsigned g_replays;
static GLXContext g_asked;  // the last context glXIsDirect was asked of, and its answer
static int g_asked_indirect;

void gl_fatal(const char* what) {
  fprintf(stderr, "stasis opengl plugin: %s\n", what);
  abort();
}

void gl_unsupported(const char* what) {
  if (!g_unsupported[0]) snprintf(g_unsupported, sizeof g_unsupported, "%s", what);
}

static void resolve_glx(void) {
  if (glx.MakeCurrent) return;
  glx.MakeContextCurrent = gl_find_real("glXMakeContextCurrent");
  glx.IsDirect = gl_find_real("glXIsDirect");
  glx.DestroyContext = gl_find_real("glXDestroyContext");
  glx.SwapBuffers = gl_find_real("glXSwapBuffers");
  glx.GetProcAddress = gl_find_real("glXGetProcAddress");
  glx.GetProcAddressARB = gl_find_real("glXGetProcAddressARB");
  glx.MakeCurrent = gl_find_real("glXMakeCurrent");  // last: it says all were looked for
}

// A context made current: recording is on while it is an indirect one. One indirect context per
// process is recorded; a second is refused at the next checkpoint.
static void made_current(Display* dpy, GLXContext context) {
  if (!context) return;  // released: the record stays, for when it is current again
  gl_resolve_real();
  // Asked once per context (for an indirect one glXIsDirect may ask the server): a program that
  // makes its context current every frame pays a comparison.
  if (context != g_asked) g_asked = context, g_asked_indirect = glx.IsDirect && !glx.IsDirect(dpy, context);
  const int indirect = g_asked_indirect;
  if (indirect && g_context && context != g_context) gl_unsupported("a second indirect GLX context");
  if (indirect && !g_context) {
    g_context = context;
    if (g_verbose) fprintf(stderr, "stasis opengl plugin: recording the indirect GLX context %p\n", (void*)context);
  }
  gl_recording = indirect && context == g_context;
}

GL_EXPORT Bool glXMakeCurrent(Display* dpy, GLXDrawable drawable, GLXContext context) {
  resolve_glx();
  GL_ASSERT(glx.MakeCurrent, "libGL has no glXMakeCurrent");
  const Bool ok = glx.MakeCurrent(dpy, drawable, context);
  if (ok) made_current(dpy, context);
  return ok;
}

GL_EXPORT Bool glXMakeContextCurrent(Display* dpy, GLXDrawable draw, GLXDrawable read, GLXContext context) {
  resolve_glx();
  GL_ASSERT(glx.MakeContextCurrent, "libGL has no glXMakeContextCurrent");
  const Bool ok = glx.MakeContextCurrent(dpy, draw, read, context);
  if (ok) made_current(dpy, context);
  return ok;
}

GL_EXPORT void glXDestroyContext(Display* dpy, GLXContext context) {
  resolve_glx();
  if (context == g_asked) g_asked = NULL;  // a new context may get its address
  if (context && context == g_context) {  // its state goes with it
    gl_record_reset();
    g_context = NULL;
    gl_recording = 0;
  }
  GL_ASSERT(glx.DestroyContext, "libGL has no glXDestroyContext");
  glx.DestroyContext(dpy, context);
}

GL_EXPORT void glXSwapBuffers(Display* dpy, GLXDrawable drawable) {
  GL_ENTRY();
  resolve_glx();
  GL_ASSERT(glx.SwapBuffers, "libGL has no glXSwapBuffers");
  glx.SwapBuffers(dpy, drawable);
}

// Entry points asked for by name get the plugin's wrapper where it has one. A GL entry point it
// does not record, asked for while an indirect context is recorded, is refused at checkpoint: the
// state it builds would not come back.
static __GLXextFuncPtr proc_address(__GLXextFuncPtr (*real)(const GLubyte*), const GLubyte* name) {
  void* wrapper = gl_wrapper_named((const char*)name);
  if (wrapper) return (__GLXextFuncPtr)wrapper;
  if (strcmp((const char*)name, "glXMakeCurrent") == 0) return (__GLXextFuncPtr)glXMakeCurrent;
  if (strcmp((const char*)name, "glXMakeContextCurrent") == 0) return (__GLXextFuncPtr)glXMakeContextCurrent;
  if (strcmp((const char*)name, "glXDestroyContext") == 0) return (__GLXextFuncPtr)glXDestroyContext;
  if (strcmp((const char*)name, "glXSwapBuffers") == 0) return (__GLXextFuncPtr)glXSwapBuffers;
  if (gl_recording && strncmp((const char*)name, "glX", 3) != 0 && strncmp((const char*)name, "gl", 2) == 0) {
    char what[128];
    snprintf(what, sizeof what, "the GL entry point %s, which the plugin does not record", (const char*)name);
    gl_unsupported(what);
  }
  return real ? real(name) : NULL;
}
GL_EXPORT __GLXextFuncPtr glXGetProcAddress(const GLubyte* name) {
  resolve_glx();
  return proc_address(glx.GetProcAddress, name);
}
GL_EXPORT __GLXextFuncPtr glXGetProcAddressARB(const GLubyte* name) {
  resolve_glx();
  return proc_address(glx.GetProcAddressARB, name);
}

// After a restart, in the program's thread, at its first GL call: the X proxy has re-created the
// context and made it current; the recorded state goes into it.
void gl_replay_now(void) {
  if (gl_replay_blocked()) return;  // between Begin and End: at End
  gl_replay_pending = 0;
  if (!g_replay_enabled) return;
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  gl_resolve_real();
  gl_replay_all();
  clock_gettime(CLOCK_MONOTONIC, &end);
  g_replays++;
  if (g_verbose) {
    struct gl_record_stats s;
    gl_record_stats(&s);
    fprintf(stderr,
            "stasis opengl plugin: replayed %zu display lists (%zu calls, %zu bytes), %zu state sets, %zu textures "
            "(%zu bytes) and the matrix stacks in %.2f ms; %zu bytes were recorded in all\n",
            s.lists, s.list_calls, s.list_bytes, s.sets, s.textures, s.texture_bytes,
            (double)(end.tv_sec - start.tv_sec) * 1e3 + (double)(end.tv_nsec - start.tv_nsec) / 1e6, s.noted_bytes);
  }
}

// Checkpoint thread: no allocation, no stdio (include/stasis/plugin.h).
static char g_refusal[256];
static void append(char* out, size_t cap, const char* text) {
  size_t n = strlen(out);
  while (*text && n + 1 < cap) out[n++] = *text++;
  out[n] = 0;
}
static int on_event(stasis_event_t event, const stasis_event_data_t* data, void* state) {
  (void)data, (void)state;
  if (event == STASIS_EVENT_PRE_SUSPEND && gl_recording && g_unsupported[0]) {
    g_refusal[0] = 0;
    append(g_refusal, sizeof g_refusal, "opengl: the program's indirect GL context cannot be replayed: it used ");
    append(g_refusal, sizeof g_refusal, g_unsupported);
    if (stasis_plugin_refuse) stasis_plugin_refuse(g_refusal);
    return 1;
  }
  if (event == STASIS_EVENT_RESTART && g_context) gl_replay_pending = 1;
  return 0;
}

static const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "opengl", on_event, NULL, NULL};

__attribute__((constructor)) static void gl_plugin_init(void) {
  const char* replay = getenv("STASIS_GL_REPLAY");
  g_replay_enabled = !(replay && strcmp(replay, "0") == 0);
  const char* verbose = getenv("STASIS_GL_VERBOSE");
  g_verbose = verbose && strcmp(verbose, "1") == 0;
  if (stasis_register_plugin) stasis_register_plugin(&g_plugin);
}
