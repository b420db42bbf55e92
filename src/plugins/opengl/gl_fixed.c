// The fixed-function state of OpenGL 1.x programs recorded for a fresh context (README.md,
// "Fixed-function state"): client vertex arrays (pointers into the program's own memory, which
// the image brings back at the same addresses) and their enables per client texture unit, the
// texture environment, texture-target and texture-generation enables, texture generation (modes,
// object and eye planes) and the current texture coordinate per texture unit, alpha test, depth
// range, polygon mode, line width, clip planes and locked arrays.
// Per-frame calls (pointers, enables, locks) only overwrite a slot: no log entry, no copy.
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "gl_core.h"
#include "gl_plugin.h"
#include "gl_record.h"

#define GL_EXPORT __attribute__((visibility("default")))
enum { FIXED_UNITS = 8, FIXED_CLIP_PLANES = 6, FIXED_ENV_PARAMS = 4 };
enum { ARRAY_VERTEX, ARRAY_NORMAL, ARRAY_COLOR, ARRAY_TEXCOORD0 };  // texcoord arrays: one per unit
enum { FIXED_ARRAYS = ARRAY_TEXCOORD0 + FIXED_UNITS };

struct client_array { const void* pointer; GLint size; GLenum type; GLsizei stride; GLuint buffer; int set, enabled; };
struct env_param { GLenum pname; GLfloat value; };

static struct {
  struct client_array arrays[FIXED_ARRAYS];
  GLenum client_unit;  // glClientActiveTexture, from 0
  struct env_param env[FIXED_UNITS][FIXED_ENV_PARAMS];
  // Per unit, the caps of g_unit_caps: the bits set, and of those the enabled ones.
  uint8_t caps_set[FIXED_UNITS], caps_on[FIXED_UNITS];
  // Texture generation per unit and coordinate (S, T, R, Q): its mode, its object plane, its eye
  // plane with the modelview it was given under (GL keeps it in eye space, as a clip plane).
  struct { GLfloat mode, object[4], eye[4], eye_modelview[16]; uint8_t set; } gen[FIXED_UNITS][4];
  GLfloat texcoord[FIXED_UNITS][2]; unsigned texcoord_set;
  GLenum alpha_func; GLfloat alpha_ref; int alpha_set;
  GLdouble depth_range[2]; int depth_range_set;
  GLenum polygon_mode[2]; int polygon_mode_set;  // front, back
  GLfloat line_width;
  GLdouble clip_plane[FIXED_CLIP_PLANES][4]; GLfloat clip_modelview[FIXED_CLIP_PLANES][16]; unsigned clip_set;
  GLint lock_first; GLsizei lock_count; int locked;
  GLubyte color_ub[4]; int color_ub_last;  // glColor4ubv came after any glColor4f (replayed as given)
} f;

static struct client_array* array_of(GLenum kind) {
  switch (kind) {
    case GL_VERTEX_ARRAY: return &f.arrays[ARRAY_VERTEX];
    case GL_NORMAL_ARRAY: return &f.arrays[ARRAY_NORMAL];
    case GL_COLOR_ARRAY: return &f.arrays[ARRAY_COLOR];
    case GL_TEXTURE_COORD_ARRAY: return f.client_unit < FIXED_UNITS ? &f.arrays[ARRAY_TEXCOORD0 + f.client_unit] : NULL;
    default: return NULL;
  }
}
static void note_pointer(GLenum kind, GLint size, GLenum type, GLsizei stride, const void* pointer) {
  struct client_array* a = array_of(kind);
  if (!a) { gl_unsupported("a client texture-coordinate array on a unit past the eighth"); return; }
  a->pointer = pointer, a->size = size, a->type = type, a->stride = stride, a->buffer = gl_core_array_buffer(), a->set = 1;
}
static void note_client_state(GLenum kind, int enabled) {
  struct client_array* a = array_of(kind);
  if (a) a->enabled = enabled;
  else gl_unsupported("a client array kind other than vertex, normal, colour and texture coordinates");
}

#define WRAP_VOID(name, params, args, ...)                     \
  GL_EXPORT void gl##name params {                             \
    GL_ENTRY();                                                \
    if (gl_recording) { __VA_ARGS__; }                         \
    CORE_REAL(void(*) params, name) args;                      \
  }
WRAP_VOID(VertexPointer, (GLint size, GLenum type, GLsizei stride, const void* p), (size, type, stride, p),
          note_pointer(GL_VERTEX_ARRAY, size, type, stride, p))
WRAP_VOID(ColorPointer, (GLint size, GLenum type, GLsizei stride, const void* p), (size, type, stride, p),
          note_pointer(GL_COLOR_ARRAY, size, type, stride, p))
WRAP_VOID(TexCoordPointer, (GLint size, GLenum type, GLsizei stride, const void* p), (size, type, stride, p),
          note_pointer(GL_TEXTURE_COORD_ARRAY, size, type, stride, p))
WRAP_VOID(NormalPointer, (GLenum type, GLsizei stride, const void* p), (type, stride, p),
          note_pointer(GL_NORMAL_ARRAY, 3, type, stride, p))
WRAP_VOID(EnableClientState, (GLenum kind), (kind), note_client_state(kind, 1))
WRAP_VOID(DisableClientState, (GLenum kind), (kind), note_client_state(kind, 0))
WRAP_VOID(ClientActiveTexture, (GLenum unit), (unit), f.client_unit = unit - GL_TEXTURE0)
WRAP_VOID(AlphaFunc, (GLenum func, GLclampf ref), (func, ref), f.alpha_func = func, f.alpha_ref = ref, f.alpha_set = 1)
WRAP_VOID(DepthRange, (GLclampd near, GLclampd far), (near, far),
          f.depth_range[0] = near, f.depth_range[1] = far, f.depth_range_set = 1)
WRAP_VOID(LineWidth, (GLfloat width), (width), f.line_width = width)
WRAP_VOID(LockArraysEXT, (GLint first, GLsizei count), (first, count), f.lock_first = first, f.lock_count = count, f.locked = 1)
WRAP_VOID(UnlockArraysEXT, (void), (), f.locked = 0)
GL_EXPORT void glPolygonMode(GLenum face, GLenum mode) {
  GL_ENTRY();
  if (gl_recording) {
    if (face != GL_BACK) f.polygon_mode[0] = mode;
    if (face != GL_FRONT) f.polygon_mode[1] = mode;
    f.polygon_mode_set = 1;
  }
  CORE_REAL(void (*)(GLenum, GLenum), PolygonMode)(face, mode);
}
// GL keeps a clip plane in eye space, through the modelview current when it was set: the replay
// sets it again under that same modelview.
GL_EXPORT void glClipPlane(GLenum plane, const GLdouble* equation) {
  GL_ENTRY();
  if (gl_recording) {
    const unsigned i = plane - GL_CLIP_PLANE0;
    if (i >= FIXED_CLIP_PLANES) gl_unsupported("a clip plane past the sixth");
    else memcpy(f.clip_plane[i], equation, sizeof f.clip_plane[i]), gl_modelview(f.clip_modelview[i]), f.clip_set |= 1u << i;
  }
  CORE_REAL(void (*)(GLenum, const GLdouble*), ClipPlane)(plane, equation);
}
GL_EXPORT void glMultiTexCoord2f(GLenum unit, GLfloat s, GLfloat t) {
  GL_ENTRY();
  const unsigned u = unit - GL_TEXTURE0;
  if (gl_recording && u < FIXED_UNITS) f.texcoord[u][0] = s, f.texcoord[u][1] = t, f.texcoord_set |= 1u << u;
  CORE_REAL(void (*)(GLenum, GLfloat, GLfloat), MultiTexCoord2f)(unit, s, t);
}

// The vector forms go through the plugin's scalar wrappers (the same state, the same record).
GL_EXPORT void glVertex3fv(const GLfloat* v) { glVertex3f(v[0], v[1], v[2]); }
GL_EXPORT void glTexCoord2fv(const GLfloat* v) { glTexCoord2f(v[0], v[1]); }
GL_EXPORT void glColor4ubv(const GLubyte* v) {
  if (gl_recording && !gl_replay_blocked()) memcpy(f.color_ub, v, 4), f.color_ub_last = 1;
  CORE_REAL(void (*)(const GLubyte*), Color4ubv)(v);
}
void gl_fixed_color_float(void) { f.color_ub_last = 0; }

void gl_fixed_tex_env(GLenum target, GLenum pname, GLfloat value) {
  const unsigned unit = gl_core_active_unit();
  if (target != GL_TEXTURE_ENV || unit >= FIXED_UNITS) return;  // gl_record.c keeps the rest
  struct env_param* p = f.env[unit];
  unsigned i = 0;
  while (i < FIXED_ENV_PARAMS && p[i].pname && p[i].pname != pname) i++;
  if (i == FIXED_ENV_PARAMS) { gl_unsupported("more texture-environment parameters per unit than recorded"); return; }
  p[i].pname = pname, p[i].value = value;
}
// The enables GL keeps per texture unit.
static const GLenum g_unit_caps[8] = {GL_TEXTURE_1D, GL_TEXTURE_2D, GL_TEXTURE_3D, GL_TEXTURE_CUBE_MAP,
                                      GL_TEXTURE_GEN_S, GL_TEXTURE_GEN_T, GL_TEXTURE_GEN_R, GL_TEXTURE_GEN_Q};
void gl_fixed_enable(GLenum cap, int enabled) {
  const unsigned unit = gl_core_active_unit();
  for (unsigned k = 0; k < 8; k++) {
    if (g_unit_caps[k] != cap) continue;
    if (unit >= FIXED_UNITS) { gl_unsupported("a texture enable on a unit past the eighth"); return; }
    f.caps_set[unit] |= (uint8_t)(1u << k);
    f.caps_on[unit] = (uint8_t)(enabled ? f.caps_on[unit] | 1u << k : f.caps_on[unit] & ~(1u << k));
  }
}
enum { GEN_MODE = 1, GEN_OBJECT = 2, GEN_EYE = 4 };
void gl_fixed_tex_gen(GLenum coord, GLenum pname, const GLfloat* values, unsigned count) {
  const unsigned unit = gl_core_active_unit(), k = coord - GL_S;
  if (unit >= FIXED_UNITS || k >= 4) { gl_unsupported("texture generation on a unit past the eighth"); return; }
  if (pname == GL_TEXTURE_GEN_MODE) {
    f.gen[unit][k].mode = values[0], f.gen[unit][k].set |= GEN_MODE;
  } else if (pname == GL_OBJECT_PLANE && count == 4) {
    memcpy(f.gen[unit][k].object, values, sizeof f.gen[unit][k].object), f.gen[unit][k].set |= GEN_OBJECT;
  } else if (pname == GL_EYE_PLANE && count == 4) {
    memcpy(f.gen[unit][k].eye, values, sizeof f.gen[unit][k].eye), f.gen[unit][k].set |= GEN_EYE;
    gl_modelview(f.gen[unit][k].eye_modelview);
  }
}

#define ENTRY(name) {"gl" #name, (void*)gl##name}
static const struct { const char* name; void* wrapper; } g_fixed_entries[] = {
    ENTRY(VertexPointer), ENTRY(ColorPointer), ENTRY(TexCoordPointer), ENTRY(NormalPointer),
    ENTRY(EnableClientState), ENTRY(DisableClientState), ENTRY(ClientActiveTexture), ENTRY(AlphaFunc),
    ENTRY(DepthRange), ENTRY(LineWidth), ENTRY(LockArraysEXT), ENTRY(UnlockArraysEXT), ENTRY(PolygonMode),
    ENTRY(ClipPlane), ENTRY(MultiTexCoord2f), ENTRY(Vertex3fv), ENTRY(TexCoord2fv), ENTRY(Color4ubv),
};
void* gl_fixed_wrapper_named(const char* name) {
  for (size_t i = 0; i < sizeof g_fixed_entries / sizeof g_fixed_entries[0]; i++)
    if (strcmp(g_fixed_entries[i].name, name) == 0) return g_fixed_entries[i].wrapper;
  return NULL;
}

// Into the fresh context, after the textures and the 1.x sets, before the bindings are restored
// (the array buffer each pointer was given with is bound for it).
// Per texture unit, after gl_record.c's sets and matrix stacks (an indirect context's replay too):
// the environment, the enables (a cap set on any unit is set on every unit, so that a global set
// of gl_record.c replayed on unit 0 is undone where the program had it only elsewhere), texture
// generation, the current texture coordinate. Units the program never made active are left alone,
// so a context without multitexture needs no glActiveTexture.
void gl_fixed_replay_units(void) {
  uint8_t caps_any = 0;
  unsigned units = 0;
  for (unsigned u = 0; u < FIXED_UNITS; u++) {
    caps_any |= f.caps_set[u];
    int touched = f.caps_set[u] || f.env[u][0].pname || (f.texcoord_set & (1u << u));
    for (unsigned k = 0; k < 4; k++) touched |= f.gen[u][k].set;
    if (touched) units = u + 1;
  }
  if (caps_any && units < 1) units = 1;
  if (!units) return;
  void (*active)(GLenum) = units > 1 ? CORE_REAL(void (*)(GLenum), ActiveTexture) : NULL;
  for (unsigned u = 0; u < units; u++) {
    if (active) active(GL_TEXTURE0 + u);
    for (unsigned i = 0; i < FIXED_ENV_PARAMS && f.env[u][i].pname; i++)
      gl_real.TexEnvf(GL_TEXTURE_ENV, f.env[u][i].pname, f.env[u][i].value);
    for (unsigned k = 0; k < 8; k++)
      if (caps_any & (1u << k)) (f.caps_on[u] & (1u << k) ? gl_real.Enable : gl_real.Disable)(g_unit_caps[k]);
    for (unsigned k = 0; k < 4; k++) {
      const GLenum coord = GL_S + k;
      if (f.gen[u][k].set & GEN_MODE) gl_real.TexGeni(coord, GL_TEXTURE_GEN_MODE, (GLint)f.gen[u][k].mode);
      if (f.gen[u][k].set & GEN_OBJECT) gl_real.TexGenfv(coord, GL_OBJECT_PLANE, f.gen[u][k].object);
      if (f.gen[u][k].set & GEN_EYE) {  // under the modelview it was given with
        GLint mode = GL_MODELVIEW;
        CORE_REAL(void (*)(GLenum, GLint*), GetIntegerv)(GL_MATRIX_MODE, &mode);
        gl_real.MatrixMode(GL_MODELVIEW);
        gl_real.PushMatrix();
        gl_real.LoadMatrixf(f.gen[u][k].eye_modelview);
        gl_real.TexGenfv(coord, GL_EYE_PLANE, f.gen[u][k].eye);
        gl_real.PopMatrix();
        gl_real.MatrixMode((GLenum)mode);
      }
    }
    if (f.texcoord_set & (1u << u))
      CORE_REAL(void (*)(GLenum, GLfloat, GLfloat), MultiTexCoord2f)(GL_TEXTURE0 + u, f.texcoord[u][0], f.texcoord[u][1]);
  }
  if (active) active(GL_TEXTURE0 + gl_core_active_unit());
}

void gl_fixed_replay(void) {
  void (*client_active)(GLenum) = CORE_REAL(void (*)(GLenum), ClientActiveTexture);
  void (*bind_buffer)(GLenum, GLuint) = CORE_REAL(void (*)(GLenum, GLuint), BindBuffer);
  for (unsigned i = 0; i < FIXED_ARRAYS; i++) {
    const struct client_array* a = &f.arrays[i];
    const GLenum unit = i >= ARRAY_TEXCOORD0 ? i - ARRAY_TEXCOORD0 : 0;
    const GLenum kind = i == ARRAY_VERTEX ? GL_VERTEX_ARRAY : i == ARRAY_NORMAL ? GL_NORMAL_ARRAY
                      : i == ARRAY_COLOR ? GL_COLOR_ARRAY : GL_TEXTURE_COORD_ARRAY;
    client_active(GL_TEXTURE0 + unit);
    if (a->set) {
      bind_buffer(GL_ARRAY_BUFFER, a->buffer);
      switch (kind) {
        case GL_VERTEX_ARRAY: CORE_REAL(void (*)(GLint, GLenum, GLsizei, const void*), VertexPointer)(a->size, a->type, a->stride, a->pointer); break;
        case GL_NORMAL_ARRAY: CORE_REAL(void (*)(GLenum, GLsizei, const void*), NormalPointer)(a->type, a->stride, a->pointer); break;
        case GL_COLOR_ARRAY: CORE_REAL(void (*)(GLint, GLenum, GLsizei, const void*), ColorPointer)(a->size, a->type, a->stride, a->pointer); break;
        default: CORE_REAL(void (*)(GLint, GLenum, GLsizei, const void*), TexCoordPointer)(a->size, a->type, a->stride, a->pointer);
      }
    }
    if (a->enabled) CORE_REAL(void (*)(GLenum), EnableClientState)(kind);
  }
  client_active(GL_TEXTURE0 + f.client_unit);
  if (f.alpha_set) CORE_REAL(void (*)(GLenum, GLclampf), AlphaFunc)(f.alpha_func, f.alpha_ref);
  if (f.depth_range_set) CORE_REAL(void (*)(GLclampd, GLclampd), DepthRange)(f.depth_range[0], f.depth_range[1]);
  if (f.polygon_mode_set) {
    CORE_REAL(void (*)(GLenum, GLenum), PolygonMode)(GL_FRONT, f.polygon_mode[0] ? f.polygon_mode[0] : GL_FILL);
    CORE_REAL(void (*)(GLenum, GLenum), PolygonMode)(GL_BACK, f.polygon_mode[1] ? f.polygon_mode[1] : GL_FILL);
  }
  if (f.line_width != 0) CORE_REAL(void (*)(GLfloat), LineWidth)(f.line_width);
  if (f.clip_set) {
    GLint mode = GL_MODELVIEW;
    CORE_REAL(void (*)(GLenum, GLint*), GetIntegerv)(GL_MATRIX_MODE, &mode);
    gl_real.MatrixMode(GL_MODELVIEW);
    gl_real.PushMatrix();
    for (unsigned i = 0; i < FIXED_CLIP_PLANES; i++)
      if (f.clip_set & (1u << i))
        gl_real.LoadMatrixf(f.clip_modelview[i]), CORE_REAL(void (*)(GLenum, const GLdouble*), ClipPlane)(GL_CLIP_PLANE0 + i, f.clip_plane[i]);
    gl_real.PopMatrix();
    gl_real.MatrixMode((GLenum)mode);
  }
  if (f.color_ub_last) CORE_REAL(void (*)(const GLubyte*), Color4ubv)(f.color_ub);
  if (f.locked) CORE_REAL(void (*)(GLint, GLsizei), LockArraysEXT)(f.lock_first, f.lock_count);
}
