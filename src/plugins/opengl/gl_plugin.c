// The OpenGL plugin (README.md): preloaded by `stasis launch --x11`, in front of libGL. It
// records the GL state a program builds in an indirect GLX context (whose state lives in the X
// server, as a GPU driver's lives outside the process), and after a restart replays it into the
// context the X proxy re-created, before the program's next GL call. A direct context is recorded
// when its state is outside the process (a GPU device node is open) or STASIS_GL_REPLAY=fresh
// asks: after a restart the plugin creates a fresh context, replays into it, and maps the
// program's old GLXContext to it (README.md, "Direct contexts: a fresh context").
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <GL/glx.h>

#include "gl_core.h"
#include "gl_plugin.h"
#include "gl_record.h"
#include "stasis/plugin.h"

#define GL_EXPORT __attribute__((visibility("default")))

volatile int gl_recording;
volatile int gl_attention;
volatile int gl_in_frame;

static struct {
  Bool (*MakeCurrent)(Display*, GLXDrawable, GLXContext);
  Bool (*MakeContextCurrent)(Display*, GLXDrawable, GLXDrawable, GLXContext);
  Bool (*IsDirect)(Display*, GLXContext);
  void (*DestroyContext)(Display*, GLXContext);
  void (*SwapBuffers)(Display*, GLXDrawable);
  __GLXextFuncPtr (*GetProcAddress)(const GLubyte*);
  __GLXextFuncPtr (*GetProcAddressARB)(const GLubyte*);
  GLXContext (*CreateContext)(Display*, XVisualInfo*, GLXContext, Bool);
  GLXContext (*CreateNewContext)(Display*, GLXFBConfig, int, GLXContext, Bool);
  GLXContext (*CreateContextAttribsARB)(Display*, GLXFBConfig, GLXContext, Bool, const int*);
  GLXContext (*GetCurrentContext)(void);
} glx;

static GLXContext g_context;      // the context recorded (indirect, or direct with a fresh replay)
static int g_replay_enabled = 1;  // STASIS_GL_REPLAY=0: record, never replay (to show the replay matters)
// STASIS_GL_REPLAY for direct contexts: "fresh" records them and replays into a fresh context,
// "fresh-empty" makes the fresh context and replays nothing (to show the replay matters); by
// default only where a GPU device node is open (the driver's state is outside the process).
enum { FRESH_AUTO, FRESH_ALWAYS, FRESH_EMPTY };
static int g_fresh_mode;
// The recorded direct context: how it was made (to make its fresh twin the same way), where it
// was current, and the twin once made.
static struct {
  int direct, how;  // how: 1 glXCreateContextAttribsARB, 2 glXCreateNewContext, 3 glXCreateContext
  Display* dpy;
  GLXFBConfig config;
  XVisualInfo visual;
  int render_type, core;
  int attributes[32];
  GLXDrawable draw, read;
  GLXContext fresh;
} g_direct;
static struct made { GLXContext context; int how; GLXFBConfig config; XVisualInfo visual; int render_type, core;
                     int attributes[32]; } g_made[8];
static unsigned g_nmade;
// The read-back at a checkpoint (PRE_SUSPEND asks, the GL thread answers and waits).
static volatile int g_read_back_done, g_parked, g_read_back_stale;
static volatile int g_parked_between_frames;  // an indirect context's GL thread, waiting in gl_attend
static const char* volatile g_read_back_error;
static int g_verbose;             // STASIS_GL_VERBOSE=1: a line per replay with the log's size
static char g_unsupported[160];   // the first thing the program did that the record cannot bring back
static unsigned g_replays;
static GLXContext g_asked;  // the last context glXIsDirect was asked of, and its answer
static int g_asked_indirect, g_asked_recorded;

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
  glx.CreateContext = gl_find_real("glXCreateContext");
  glx.CreateNewContext = gl_find_real("glXCreateNewContext");
  glx.GetCurrentContext = gl_find_real("glXGetCurrentContext");
  if (glx.GetProcAddressARB)
    glx.CreateContextAttribsARB = (GLXContext(*)(Display*, GLXFBConfig, GLXContext, Bool, const int*))glx.GetProcAddressARB(
        (const GLubyte*)"glXCreateContextAttribsARB");
  glx.MakeCurrent = gl_find_real("glXMakeCurrent");  // last: it says all were looked for
}

static void publish_client(void);
static void publish_read_back(uint64_t generation);
static int ask_read_back_now(void);

// Contexts as the program made them: a direct one recorded later is made again the same way.
static void note_made(GLXContext context, int how, GLXFBConfig config, const XVisualInfo* visual, int render_type,
                      const int* attributes) {
  if (!context) return;
  struct made* m = &g_made[g_nmade++ % 8];
  memset(m, 0, sizeof *m);
  m->context = context, m->how = how, m->config = config, m->render_type = render_type;
  if (visual) m->visual = *visual;
  for (int i = 0; attributes && attributes[i] && i < 30; i += 2) {
    m->attributes[i] = attributes[i], m->attributes[i + 1] = attributes[i + 1];
    if (attributes[i] == GLX_CONTEXT_PROFILE_MASK_ARB) m->core = (attributes[i + 1] & GLX_CONTEXT_CORE_PROFILE_BIT_ARB) != 0;
  }
}
GL_EXPORT GLXContext glXCreateContextAttribsARB(Display* dpy, GLXFBConfig config, GLXContext share, Bool direct,
                                                const int* attributes) {
  resolve_glx();
  GL_ASSERT(glx.CreateContextAttribsARB, "libGL has no glXCreateContextAttribsARB");
  GLXContext context = glx.CreateContextAttribsARB(dpy, config, share, direct, attributes);
  if (share) gl_unsupported("a GLX context sharing objects with another");
  note_made(context, 1, config, NULL, 0, attributes);
  return context;
}
GL_EXPORT GLXContext glXCreateNewContext(Display* dpy, GLXFBConfig config, int render_type, GLXContext share, Bool direct) {
  resolve_glx();
  GL_ASSERT(glx.CreateNewContext, "libGL has no glXCreateNewContext");
  GLXContext context = glx.CreateNewContext(dpy, config, render_type, share, direct);
  if (share) gl_unsupported("a GLX context sharing objects with another");
  note_made(context, 2, config, NULL, render_type, NULL);
  return context;
}
GL_EXPORT GLXContext glXCreateContext(Display* dpy, XVisualInfo* visual, GLXContext share, Bool direct) {
  resolve_glx();
  GL_ASSERT(glx.CreateContext, "libGL has no glXCreateContext");
  GLXContext context = glx.CreateContext(dpy, visual, share, direct);
  if (share) gl_unsupported("a GLX context sharing objects with another");
  note_made(context, 3, NULL, visual, 0, NULL);
  return context;
}

// A GPU's driver state is outside the process when one of its device nodes is open. Looked at
// once (the driver opens its node when the display's GL is set up, before any context is current):
// a program that switches contexts every frame pays a load.
static int gpu_device_open(void) {
  static int answer = -1;
  if (answer >= 0) return answer;
  DIR* fds = opendir("/proc/self/fd");
  int found = 0;
  for (struct dirent* e; fds && !found && (e = readdir(fds));) {
    char path[300], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    found = strncmp(target, "/dev/dri/", 9) == 0 || strncmp(target, "/dev/nvidia", 11) == 0;
  }
  if (fds) closedir(fds);
  return answer = found;
}

// A context made current: recording is on while it is the recorded one. That is the first
// indirect context, or the first direct one when a fresh replay is chosen for it; a second is
// refused at the next checkpoint.
static void made_current(Display* dpy, GLXDrawable draw, GLXDrawable read, GLXContext context) {
  if (!context) return;  // released: the record stays, for when it is current again
  gl_resolve_real();
  // Asked once per context (for an indirect one glXIsDirect may ask the server): a program that
  // makes its context current every frame pays a comparison.
  if (context != g_asked) {
    g_asked = context, g_asked_indirect = glx.IsDirect && !glx.IsDirect(dpy, context == g_context && g_direct.fresh ? g_direct.fresh : context);
    g_asked_recorded = g_asked_indirect || (g_replay_enabled && (g_fresh_mode != FRESH_AUTO || gpu_device_open()));
  }
  const int recorded = g_asked_recorded;
  if (recorded && g_context && context != g_context) gl_unsupported("a second GL context");
  if (recorded && !g_context) {
    g_context = context;
    g_direct.direct = !g_asked_indirect;
    for (unsigned i = 0; g_direct.direct && i < 8; i++) {
      const struct made* m = &g_made[i];
      if (m->context != context) continue;
      g_direct.how = m->how, g_direct.config = m->config, g_direct.visual = m->visual;
      g_direct.render_type = m->render_type, g_direct.core = m->core;
      memcpy(g_direct.attributes, m->attributes, sizeof g_direct.attributes);
    }
    if (g_direct.direct && !g_direct.how) gl_unsupported("a direct GL context made before the plugin was loaded");
    publish_client();  // the proxy serves while this one reads back or ends its frame
    if (g_verbose)
      fprintf(stderr, "stasis opengl plugin: recording the %s GLX context %p\n", g_direct.direct ? "direct" : "indirect", (void*)context);
  }
  if (context == g_context && g_direct.direct) g_direct.dpy = dpy, g_direct.draw = draw, g_direct.read = read;
  gl_recording = recorded && context == g_context;
}

// The program's old context stands for its fresh twin from the restart on.
static GLXContext current_twin(GLXContext context) {
  if (context && context == g_context && g_direct.fresh) return g_direct.fresh;
  return context;
}

GL_EXPORT Bool glXMakeCurrent(Display* dpy, GLXDrawable drawable, GLXContext context) {
  GL_ENTRY();
  resolve_glx();
  GL_ASSERT(glx.MakeCurrent, "libGL has no glXMakeCurrent");
  const Bool ok = glx.MakeCurrent(dpy, drawable, current_twin(context));
  if (ok) made_current(dpy, drawable, drawable, context);
  return ok;
}

GL_EXPORT Bool glXMakeContextCurrent(Display* dpy, GLXDrawable draw, GLXDrawable read, GLXContext context) {
  GL_ENTRY();
  resolve_glx();
  GL_ASSERT(glx.MakeContextCurrent, "libGL has no glXMakeContextCurrent");
  const Bool ok = glx.MakeContextCurrent(dpy, draw, read, current_twin(context));
  if (ok) made_current(dpy, draw, read, context);
  return ok;
}

GL_EXPORT GLXContext glXGetCurrentContext(void) {
  resolve_glx();
  GL_ASSERT(glx.GetCurrentContext, "libGL has no glXGetCurrentContext");
  GLXContext current = glx.GetCurrentContext();
  return current && current == g_direct.fresh ? g_context : current;
}

GL_EXPORT void glXDestroyContext(Display* dpy, GLXContext context) {
  resolve_glx();
  if (context == g_asked) g_asked = NULL;  // a new context may get its address
  GLXContext real = current_twin(context);
  if (context && context == g_context) {  // its state goes with it
    gl_record_reset();
    g_context = NULL;
    g_direct.fresh = NULL;
    gl_recording = 0;
  }
  // The old context of a fresh twin is left alone: on a GPU its driver state is gone.
  GL_ASSERT(glx.DestroyContext, "libGL has no glXDestroyContext");
  glx.DestroyContext(dpy, real);
}

GL_EXPORT void glXSwapBuffers(Display* dpy, GLXDrawable drawable) {
  GL_ENTRY();
  resolve_glx();
  GL_ASSERT(glx.SwapBuffers, "libGL has no glXSwapBuffers");
  glx.SwapBuffers(dpy, drawable);
  GL_FRAME_ENDED();
}

// Queries, draws and synchronisation: nothing a replay would have to make again (what a draw
// writes into textures and buffers is read back at the checkpoint).
static int builds_no_state(const char* name) {
  static const char* const prefixes[] = {"glGet", "glIs", "glDraw", "glMultiDraw", "glReadPixels", "glFlush",
                                         "glFinish", "glCheckFramebufferStatus", "glValidateProgram", "glFenceSync",
                                         "glClientWaitSync", "glWaitSync", "glDeleteSync", "glClearBuffer"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  // Drawing from arrays, and updates of texture levels the read-back at the checkpoint brings back.
  static const char* const names[] = {"glClear", "glArrayElement", "glTexSubImage1D", "glTexSubImage2D", "glTexSubImage3D",
                                      "glCopyTexSubImage1D", "glCopyTexSubImage2D", "glCopyTexSubImage3D"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

// Entry points asked for by name get the plugin's wrapper where it has one. A GL entry point it
// does not record, asked for while a context is recorded, is refused at checkpoint: the state it
// builds would not come back.
static __GLXextFuncPtr proc_address(__GLXextFuncPtr (*real)(const GLubyte*), const GLubyte* name) {
  void* wrapper = gl_wrapper_named((const char*)name);
  if (wrapper) return (__GLXextFuncPtr)wrapper;
  static const struct { const char* name; __GLXextFuncPtr wrapper; } glx_wrappers[] = {
      {"glXMakeCurrent", (__GLXextFuncPtr)glXMakeCurrent}, {"glXMakeContextCurrent", (__GLXextFuncPtr)glXMakeContextCurrent},
      {"glXDestroyContext", (__GLXextFuncPtr)glXDestroyContext}, {"glXSwapBuffers", (__GLXextFuncPtr)glXSwapBuffers},
      {"glXCreateContextAttribsARB", (__GLXextFuncPtr)glXCreateContextAttribsARB},
      {"glXCreateNewContext", (__GLXextFuncPtr)glXCreateNewContext}, {"glXCreateContext", (__GLXextFuncPtr)glXCreateContext},
      {"glXGetCurrentContext", (__GLXextFuncPtr)glXGetCurrentContext}};
  for (size_t i = 0; i < sizeof glx_wrappers / sizeof glx_wrappers[0]; i++)
    if (strcmp((const char*)name, glx_wrappers[i].name) == 0) return glx_wrappers[i].wrapper;
  if (gl_recording && strncmp((const char*)name, "glX", 3) != 0 && strncmp((const char*)name, "gl", 2) == 0 &&
      !builds_no_state((const char*)name)) {
    __GLXextFuncPtr f = real ? real(name) : NULL;
    if (!f) return NULL;  // libGL has none: nothing can be built through it
    void* thunk = gl_unrecorded_thunk((const char*)name, (void*)f);
    if (g_verbose) fprintf(stderr, "stasis opengl plugin: asked for %s, not recorded%s\n", (const char*)name,
                           thunk ? ": refused if called" : "");
    if (thunk) return (__GLXextFuncPtr)thunk;
    char what[128];
    snprintf(what, sizeof what, "the GL entry point %s, which the plugin does not record", (const char*)name);
    gl_unsupported(what);
    return f;
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

static double ms_since(const struct timespec* start) {
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  return (double)(end.tv_sec - start->tv_sec) * 1e3 + (double)(end.tv_nsec - start->tv_nsec) / 1e6;
}

// After a restart, in the program's thread, at its first GL call: the X proxy has re-created the
// indirect context and made it current; the recorded state goes into it.
static void replay_indirect(void) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  gl_resolve_real();
  gl_replay_all(1);
  g_replays++;
  if (g_verbose) {
    struct gl_record_stats s;
    gl_record_stats(&s);
    fprintf(stderr,
            "stasis opengl plugin: replayed %zu display lists (%zu calls, %zu bytes), %zu state sets, %zu textures "
            "(%zu bytes) and the matrix stacks in %.2f ms; %zu bytes were recorded in all\n",
            s.lists, s.list_calls, s.list_bytes, s.sets, s.textures, s.texture_bytes, ms_since(&start), s.noted_bytes);
  }
}

// A direct context after a restart: its twin, made as the program made it against the restart's
// display, current where the old one was, the record replayed into it.
static void replay_fresh(void) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  resolve_glx();
  gl_resolve_real();
  Display* dpy = g_direct.dpy;
  GLXContext fresh = NULL;
  if (g_direct.how == 1 && glx.CreateContextAttribsARB)
    fresh = glx.CreateContextAttribsARB(dpy, g_direct.config, NULL, True, g_direct.attributes);
  else if (g_direct.how == 2 && glx.CreateNewContext)
    fresh = glx.CreateNewContext(dpy, g_direct.config, g_direct.render_type, NULL, True);
  else if (g_direct.how == 3 && glx.CreateContext)
    fresh = glx.CreateContext(dpy, &g_direct.visual, NULL, True);
  if (!fresh) gl_fatal("no fresh GLX context could be made on the restart's display");
  if (!glx.MakeContextCurrent(dpy, g_direct.draw, g_direct.read, fresh))
    gl_fatal("the fresh GLX context could not be made current on the program's drawable");
  g_direct.fresh = fresh;
  g_asked = NULL;
  if (g_fresh_mode == FRESH_EMPTY) return;
  gl_core_replay(!g_direct.core);
  g_replays++;
  if (g_verbose) {
    struct gl_record_stats s;
    struct gl_core_stats k;
    struct gl_objects_stats b;
    gl_record_stats(&s);
    gl_core_stats(&k);
    gl_objects_stats(&b);
    fprintf(stderr,
            "stasis opengl plugin: replayed into a fresh context: %zu buffers (%zu bytes), %zu vertex arrays, %zu "
            "programs (%zu bytes of GLSL, %zu uniforms), %zu framebuffers, %zu renderbuffers, %zu textures (%zu bytes), "
            "%zu samplers, %zu queries (%zu results carried), %zu state sets in %.2f ms\n",
            k.buffers, k.buffer_bytes, k.vertex_arrays, k.programs, k.source_bytes, k.uniforms, k.framebuffers,
            k.renderbuffers, s.textures, s.texture_bytes, b.samplers, b.queries, b.carried_results, s.sets,
            ms_since(&start));
  }
}

// The GL thread waits for the checkpoint to end, so that it changes nothing the record no longer
// sees: a minute at most (a checkpoint that failed before stopping threads), after which the
// record is stale and PRE_CHECKPOINT refuses.
static void wait_while_parked(void) {
  for (int waited = 0; __atomic_load_n(&g_parked, __ATOMIC_SEQ_CST); waited++) {
    if (waited == 60000) { g_read_back_stale = 1; break; }
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

// At a checkpoint, in the GL thread: what the GL holds goes into the record, then the thread
// waits for the checkpoint to end, so that it changes nothing the record no longer sees. It waits
// a minute at most (a checkpoint that failed before stopping threads): the record is then stale
// and PRE_CHECKPOINT refuses.
static void read_back_and_wait(void) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const char* why = gl_core_read_back();
  if (!why) why = gl_read_back_textures();
  if (!why && !g_direct.core) why = gl_read_back_matrices();
  g_read_back_error = why;
  __atomic_and_fetch(&gl_attention, ~ATTEND_READ_BACK, __ATOMIC_SEQ_CST);
  __atomic_store_n(&g_read_back_done, 1, __ATOMIC_SEQ_CST);
  if (g_verbose) fprintf(stderr, "stasis opengl plugin: read back in %.2f ms\n", ms_since(&start));
  wait_while_parked();
}

void gl_attend(int was_in_frame) {
  // The GL thread is the one the recorded context is current on (libGL's thread-local state, in
  // the image: a thread id would change with the restart).
  resolve_glx();
  GLXContext current = glx.GetCurrentContext ? glx.GetCurrentContext() : NULL;
  const int self_is_gl_thread = !g_direct.direct || (current && (current == g_context || current == g_direct.fresh));
  // Not between glBegin and glEnd (a glMaterial there calls in), where GL reads nothing back.
  if ((gl_attention & ATTEND_READ_BACK) && g_direct.direct && self_is_gl_thread && !gl_replay_blocked())
    read_back_and_wait();
  // An indirect context's frame drawn in part would be lost with the old server (and a request
  // waiting for its reply sent again to the new one before the replay): the thread parks only
  // at the first GL call after a frame's end, where the server has all it drew.
  if ((gl_attention & ATTEND_PARK) && !g_direct.direct && !was_in_frame) {
    __atomic_and_fetch(&gl_attention, ~ATTEND_PARK, __ATOMIC_SEQ_CST);
    __atomic_store_n(&gl_in_frame, 0, __ATOMIC_SEQ_CST);  // not in a frame while it waits
    __atomic_store_n(&g_parked_between_frames, 1, __ATOMIC_SEQ_CST);
    wait_while_parked();
    __atomic_store_n(&g_parked_between_frames, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&gl_in_frame, 1, __ATOMIC_SEQ_CST);  // this call begins the frame
  }
  if (!(gl_attention & ATTEND_REPLAY) || !self_is_gl_thread) return;
  if (gl_replay_blocked()) return;  // between Begin and End: at End
  __atomic_and_fetch(&gl_attention, ~ATTEND_REPLAY, __ATOMIC_SEQ_CST);
  if (!g_replay_enabled) return;
  if (g_direct.direct) replay_fresh();
  else replay_indirect();
}

// Checkpoint thread: no allocation, no stdio (include/stasis/plugin.h).
static char g_refusal[256];
static void append(char* out, size_t cap, const char* text) {
  size_t n = strlen(out);
  while (*text && n + 1 < cap) out[n++] = *text++;
  out[n] = 0;
}
static int refuse(const char* what, const char* detail) {
  g_refusal[0] = 0;
  append(g_refusal, sizeof g_refusal, what);
  append(g_refusal, sizeof g_refusal, detail);
  if (stasis_plugin_refuse) stasis_plugin_refuse(g_refusal);
  return 1;
}
// The X proxy (or any process of the computation without a recorded context) goes on serving
// while the GL threads of the others read back or end their frame: a GL thread may be waiting for
// an X reply (glXSwapBuffers, glReadPixels, XPending) and can reach its next GL call only once the
// proxy answers. Each such program publishes "opengl-client-PID" while it records and
// "opengl-read-back-GEN-PID" once its read-back or frame is over (or refused); the others wait
// for the latter (12 s at most) before they stop.
static void decimal(char* out, const char* prefix, uint64_t a, int with_b, uint64_t b) {
  char digits[24];
  out[0] = 0;
  append(out, 96, prefix);
  for (int k = 0; k < 1 + with_b; k++) {
    uint64_t v = k ? b : a;
    int n = 0;
    do digits[n++] = (char)('0' + v % 10), v /= 10; while (v);
    char text[24];
    for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
    text[n] = 0;
    if (k) append(out, 96, "-");
    append(out, 96, text);
  }
}
static void publish_client(void) {
  char key[96];
  decimal(key, "opengl-client-", (uint64_t)getpid(), 0, 0);
  if (stasis_plugin_ns_publish) stasis_plugin_ns_publish(key, "1", 1);
}
static void publish_read_back(uint64_t generation) {
  char key[96];
  decimal(key, "opengl-read-back-", generation, 1, (uint64_t)getpid());
  if (stasis_plugin_ns_publish) stasis_plugin_ns_publish(key, "1", 1);
}
static void wait_for_clients(uint64_t generation) {
  static char list[4096];
  if (!stasis_plugin_ns_list || !stasis_plugin_ns_lookup) return;
  const long size = stasis_plugin_ns_list("opengl-client-", list, sizeof list);
  for (long at = 0; size > 0 && size <= (long)sizeof list && at < size;) {
    const char* key = list + at;
    const size_t key_length = strlen(key);
    uint32_t value_length;
    memcpy(&value_length, key + key_length + 1, 4);
    at += (long)(key_length + 1 + 4 + value_length);
    uint64_t pid = 0;
    for (const char* d = key + strlen("opengl-client-"); *d >= '0' && *d <= '9'; d++) pid = pid * 10 + (uint64_t)(*d - '0');
    if (pid == (uint64_t)getpid()) continue;
    char wanted[96], value[8];
    decimal(wanted, "opengl-read-back-", generation, 1, pid);
    stasis_plugin_ns_lookup(wanted, value, sizeof value, 12000);
  }
}

// PRE_SUSPEND, user threads running: the GL thread reads back at its next GL call (10 s at most).
static int ask_read_back(uint64_t generation) {
  const int refused = ask_read_back_now();
  publish_read_back(generation);
  return refused;
}
static int ask_read_back_now(void) {
  g_read_back_done = 0, g_read_back_error = NULL, g_read_back_stale = 0;
  __atomic_store_n(&g_parked, 1, __ATOMIC_SEQ_CST);
  __atomic_or_fetch(&gl_attention, ATTEND_READ_BACK, __ATOMIC_SEQ_CST);
  for (int waited = 0; !__atomic_load_n(&g_read_back_done, __ATOMIC_SEQ_CST); waited++) {
    if (waited == 10000) {
      __atomic_and_fetch(&gl_attention, ~ATTEND_READ_BACK, __ATOMIC_SEQ_CST);
      __atomic_store_n(&g_parked, 0, __ATOMIC_SEQ_CST);
      if (__atomic_load_n(&g_read_back_done, __ATOMIC_SEQ_CST)) break;  // came at the last moment
      return refuse("opengl: the program's GL thread made no GL call within 10 s, so its context's buffers and "
                    "textures could not be read back", "");
    }
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  if (g_read_back_error) {
    __atomic_store_n(&g_parked, 0, __ATOMIC_SEQ_CST);
    return refuse("opengl: the program's GL context cannot be read back: ", g_read_back_error);
  }
  return 0;
}
// PRE_SUSPEND of an indirect context: the checkpoint waits until the GL thread is between two
// frames (its last GL call ended a frame, and its next one parks) or parked, 10 s at most; past
// that it goes on as before, the frame in progress then lost (README.md, "Fragile").
static void park_between_frames(void) {
  g_read_back_stale = 0;
  __atomic_store_n(&g_parked, 1, __ATOMIC_SEQ_CST);
  __atomic_or_fetch(&gl_attention, ATTEND_PARK, __ATOMIC_SEQ_CST);
  for (int waited = 0; waited < 10000; waited++) {
    if (__atomic_load_n(&g_parked_between_frames, __ATOMIC_SEQ_CST) || !__atomic_load_n(&gl_in_frame, __ATOMIC_SEQ_CST)) return;
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  __atomic_and_fetch(&gl_attention, ~ATTEND_PARK, __ATOMIC_SEQ_CST);
  __atomic_store_n(&g_parked, 0, __ATOMIC_SEQ_CST);
}
static int on_event(stasis_event_t event, const stasis_event_data_t* data, void* state) {
  (void)state;
  const char* called = g_context ? gl_unrecorded_called() : NULL;
  if (event == STASIS_EVENT_PRE_SUSPEND && g_context && (g_unsupported[0] || called)) {
    publish_read_back(data->generation);  // nothing to wait for
    if (!g_unsupported[0]) {
      char what[128] = "";
      append(what, sizeof what, called);
      append(what, sizeof what, ", which the plugin does not record");
      return refuse("opengl: the program's GL context cannot be replayed: it called the GL entry point ", what);
    }
    return refuse("opengl: the program's GL context cannot be replayed: it used ", g_unsupported);
  }
  const int reads_back = g_context && g_direct.direct && g_replay_enabled;
  const int parks = g_context && !g_direct.direct && g_replay_enabled;
  if (event == STASIS_EVENT_PRE_SUSPEND && reads_back) return ask_read_back(data->generation);
  if (event == STASIS_EVENT_PRE_SUSPEND && g_context && !reads_back) {
    if (parks) park_between_frames();
    publish_read_back(data->generation);  // the proxy may stop serving now
  }
  if (event == STASIS_EVENT_PRE_SUSPEND) wait_for_clients(data->generation);
  if (event == STASIS_EVENT_RESUME && stasis_plugin_ns_withdraw) stasis_plugin_ns_withdraw("opengl-read-back-");
  if (event == STASIS_EVENT_PRE_CHECKPOINT && g_read_back_stale)
    return refuse("opengl: the program's GL thread went on before the checkpoint stopped it: the read-back is stale", "");
  if (event == STASIS_EVENT_RESUME || event == STASIS_EVENT_RESTART) __atomic_and_fetch(&gl_attention, ~ATTEND_PARK, __ATOMIC_SEQ_CST);
  if (event == STASIS_EVENT_RESUME) __atomic_store_n(&g_parked, 0, __ATOMIC_SEQ_CST);
  if (event == STASIS_EVENT_RESTART && g_context) publish_client();  // the old process's entries are gone
  if (event == STASIS_EVENT_RESTART && g_context) {
    __atomic_or_fetch(&gl_attention, ATTEND_REPLAY, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_parked, 0, __ATOMIC_SEQ_CST);
  }
  return 0;
}

static const stasis_plugin_t g_plugin = {STASIS_PLUGIN_API_VERSION, "opengl", on_event, NULL, NULL};

// SDL loads libGL on its own and takes GLX's entry points from that handle (gl_front.c): unless
// the program chose its libGL, SDL is given the front library beside this one, so that the
// context it makes and the entry points it asks for pass through the plugin.
static void point_sdl_at_front(void) {
  Dl_info self;
  if (getenv("SDL_OPENGL_LIBRARY") || !dladdr((void*)point_sdl_at_front, &self) || !self.dli_fname) return;
  const char* slash = strrchr(self.dli_fname, '/');
  if (!slash) return;
  char front[4096];
  const int n = snprintf(front, sizeof front, "%.*s/libstasis_gl_front.so", (int)(slash - self.dli_fname), self.dli_fname);
  if (n > 0 && (size_t)n < sizeof front && access(front, R_OK) == 0) setenv("SDL_OPENGL_LIBRARY", front, 0);
}

__attribute__((constructor)) static void gl_plugin_init(void) {
  const char* replay = getenv("STASIS_GL_REPLAY");
  g_replay_enabled = !(replay && strcmp(replay, "0") == 0);
  g_fresh_mode = !replay ? FRESH_AUTO : strcmp(replay, "fresh") == 0 ? FRESH_ALWAYS
               : strcmp(replay, "fresh-empty") == 0 ? FRESH_EMPTY : FRESH_AUTO;
  const char* verbose = getenv("STASIS_GL_VERBOSE");
  g_verbose = verbose && strcmp(verbose, "1") == 0;
  point_sdl_at_front();
  if (stasis_register_plugin) stasis_register_plugin(&g_plugin);
}
