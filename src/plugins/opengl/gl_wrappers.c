// The GL entry points the plugin interposes (README.md, "What is recorded"). Each calls libGL's
// own; while the current context is indirect it first notes what the call built. Calls that draw
// (glClear, glCallList outside a list, glDrawArrays...) are not interposed, or cost a branch.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "gl_core.h"
#include "gl_plugin.h"
#include "gl_record.h"

#define GL_EXPORT __attribute__((visibility("default")))
struct gl_real gl_real;

// libGL's entry points, found behind the plugin (RTLD_NEXT), or in a libGL the program loaded
// on its own (Qt and SDL dlopen it, without adding it to the global scope).
void* gl_find_real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  static const char* const libraries[] = {"libGL.so.1", "libGLX.so.0", "libOpenGL.so.0"};
  for (size_t i = 0; !f && i < sizeof libraries / sizeof libraries[0]; i++) {
    void* library = dlopen(libraries[i], RTLD_LAZY | RTLD_NOLOAD);
    if (library) f = dlsym(library, name);
  }
  return f;
}
static void resolve_or_die(void* const* slot, const char* name) {
  gl_resolve_real();
  if (!*slot) gl_fatal(name);
}
#define REAL(f) (gl_real.f ? gl_real.f : (resolve_or_die((void* const*)&gl_real.f, "libGL has no gl" #f), gl_real.f))

static GLint g_unpack_alignment = 4;

static unsigned light_values(GLenum pname) {
  switch (pname) {
    case GL_AMBIENT: case GL_DIFFUSE: case GL_SPECULAR: case GL_POSITION: case GL_EMISSION:
    case GL_AMBIENT_AND_DIFFUSE: return 4;
    case GL_SPOT_DIRECTION: case GL_COLOR_INDEXES: return 3;
    default: return 1;
  }
}
static void floats_to_words(uint32_t* w, const GLfloat* v, unsigned n) {
  for (unsigned i = 0; i < n; i++) w[i] = gl_fbits(v[i]);
}

#define ENUM_SET(name, op)                                                 \
  GL_EXPORT void gl##name(GLenum e) {                                      \
    GL_ENTRY();                                                            \
    if (gl_recording) { const uint32_t w[1] = {e}; gl_note(op, w, 1, 0); } \
    REAL(name)(e);                                                         \
  }
ENUM_SET(ShadeModel, OP_SHADE_MODEL)
ENUM_SET(CullFace, OP_CULL_FACE)
ENUM_SET(FrontFace, OP_FRONT_FACE)
ENUM_SET(DepthFunc, OP_DEPTH_FUNC)
ENUM_SET(DrawBuffer, OP_DRAW_BUFFER)

#define ENUM2_SET(name, op, keys)                                                  \
  GL_EXPORT void gl##name(GLenum a, GLenum b) {                                    \
    GL_ENTRY();                                                                    \
    if (gl_recording) { const uint32_t w[2] = {a, b}; gl_note(op, w, 2, keys); }   \
    REAL(name)(a, b);                                                              \
  }
ENUM2_SET(BlendFunc, OP_BLEND_FUNC, 0)
ENUM2_SET(Hint, OP_HINT, 1)
ENUM2_SET(ColorMaterial, OP_COLOR_MATERIAL, 0)

GL_EXPORT void glEnable(GLenum cap) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[2] = {cap, 1}; if (!gl_note(OP_ENABLE, w, 2, 1)) gl_fixed_enable(cap, 1); }
  REAL(Enable)(cap);
}
GL_EXPORT void glDisable(GLenum cap) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[2] = {cap, 0}; if (!gl_note(OP_ENABLE, w, 2, 1)) gl_fixed_enable(cap, 0); }
  REAL(Disable)(cap);
}
GL_EXPORT void glClearColor(GLclampf r, GLclampf g, GLclampf b, GLclampf a) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[4] = {gl_fbits(r), gl_fbits(g), gl_fbits(b), gl_fbits(a)}; gl_note(OP_CLEAR_COLOR, w, 4, 0); }
  REAL(ClearColor)(r, g, b, a);
}
GL_EXPORT void glClearDepth(GLclampd d) {
  GL_ENTRY();
  if (gl_recording) { uint32_t w[2]; memcpy(w, &d, 8); gl_note(OP_CLEAR_DEPTH, w, 2, 0); }
  REAL(ClearDepth)(d);
}
GL_EXPORT void glViewport(GLint x, GLint y, GLsizei width, GLsizei height) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[4] = {(uint32_t)x, (uint32_t)y, (uint32_t)width, (uint32_t)height}; gl_note(OP_VIEWPORT, w, 4, 0); }
  REAL(Viewport)(x, y, width, height);
}

// Lights: a position or a spot direction is taken through the modelview when it is set, so it is
// kept in eye space, as GL keeps it.
static void note_light(GLenum light, GLenum pname, const GLfloat* v, unsigned n) {
  uint32_t w[6] = {light, pname};
  floats_to_words(w + 2, v, n);
  if (gl_note_in_list(OP_LIGHT, w, 2 + n)) return;
  if (pname == GL_POSITION || pname == GL_SPOT_DIRECTION) {
    float eye[4] = {v[0], v[1], v[2], n == 4 ? v[3] : 0};
    gl_eye_vector(eye, pname == GL_POSITION);
    floats_to_words(w + 2, eye, n);
  }
  gl_note_state(OP_LIGHT, w, 2 + n, 2);
}
GL_EXPORT void glLightfv(GLenum light, GLenum pname, const GLfloat* v) {
  GL_ENTRY();
  if (gl_recording) note_light(light, pname, v, light_values(pname));
  REAL(Lightfv)(light, pname, v);
}
GL_EXPORT void glLightf(GLenum light, GLenum pname, GLfloat v) {
  GL_ENTRY();
  if (gl_recording) note_light(light, pname, &v, 1);
  REAL(Lightf)(light, pname, v);
}
GL_EXPORT void glLightModelfv(GLenum pname, const GLfloat* v) {
  GL_ENTRY();
  if (gl_recording) {
    uint32_t w[5] = {pname};
    const unsigned n = pname == GL_LIGHT_MODEL_AMBIENT ? 4 : 1;
    floats_to_words(w + 1, v, n);
    gl_note(OP_LIGHT_MODEL, w, 1 + n, 1);
  }
  REAL(LightModelfv)(pname, v);
}
GL_EXPORT void glLightModeli(GLenum pname, GLint v) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[2] = {pname, gl_fbits((float)v)}; gl_note(OP_LIGHT_MODEL, w, 2, 1); }
  REAL(LightModeli)(pname, v);
}
static void note_material(GLenum face, GLenum pname, const GLfloat* v, unsigned n) {
  uint32_t w[6] = {face, pname};
  floats_to_words(w + 2, v, n);
  gl_note(OP_MATERIAL, w, 2 + n, 2);
}
GL_EXPORT void glMaterialfv(GLenum face, GLenum pname, const GLfloat* v) {
  GL_ENTRY();
  if (gl_recording) note_material(face, pname, v, pname == GL_SHININESS ? 1 : light_values(pname));
  REAL(Materialfv)(face, pname, v);
}
GL_EXPORT void glMaterialf(GLenum face, GLenum pname, GLfloat v) {
  GL_ENTRY();
  if (gl_recording) note_material(face, pname, &v, 1);
  REAL(Materialf)(face, pname, v);
}

// Textures (1D, 2D, 3D, cube maps, 1D and 2D arrays, rectangles): each object keeps its
// parameters and its images, level by level (a cube map's face by face).
GL_EXPORT void glBindTexture(GLenum target, GLuint name) {
  GL_ENTRY();
  if (gl_recording) {
    const uint32_t w[2] = {target, name};
    if (gl_texture_target_index(target) < 0)
      gl_unsupported("glBindTexture of a texture target the plugin does not record (multisample, buffer, cube map array)");
    else if (!gl_note(OP_BIND_TEXTURE, w, 2, 1))
      gl_core_bind_texture(target, name);  // the unit's binding, the name for a fresh context
  }
  REAL(BindTexture)(target, name);
}
GL_EXPORT void glDeleteTextures(GLsizei n, const GLuint* names) {
  GL_ENTRY();
  if (gl_recording) gl_note_delete_textures(n, names), gl_core_delete(KIND_TEXTURE, n, names);
  REAL(DeleteTextures)(n, names);
}
// glTexParameter* and glTexEnv*: the value kept as a float (enums such as GL_LINEAR are exact).
#define TARGET_PNAME_SET(name, op, type)                                                                \
  GL_EXPORT void gl##name(GLenum target, GLenum pname, type v) {                                        \
    GL_ENTRY();                                                                                         \
    if (gl_recording) { const uint32_t w[3] = {target, pname, gl_fbits((float)v)}; gl_note(op, w, 3, 2); } \
    REAL(name)(target, pname, v);                                                                       \
  }
TARGET_PNAME_SET(TexParameterf, OP_TEX_PARAMETER, GLfloat)
TARGET_PNAME_SET(TexParameteri, OP_TEX_PARAMETER, GLint)
// glTexEnv*: also per texture unit (gl_fixed.c), which a fresh context's replay sets last.
#define TEX_ENV_SET(name, type)                                                                         \
  GL_EXPORT void gl##name(GLenum target, GLenum pname, type v) {                                        \
    GL_ENTRY();                                                                                         \
    if (gl_recording) {                                                                                 \
      const uint32_t w[3] = {target, pname, gl_fbits((float)v)};                                        \
      if (!gl_note(OP_TEX_ENV, w, 3, 2)) gl_fixed_tex_env(target, pname, (float)v);                     \
    }                                                                                                   \
    REAL(name)(target, pname, v);                                                                       \
  }
TEX_ENV_SET(TexEnvf, GLfloat)
TEX_ENV_SET(TexEnvi, GLint)
GL_EXPORT void glPixelStorei(GLenum pname, GLint v) {
  GL_ENTRY();
  if (gl_recording) {
    if (pname == GL_UNPACK_ALIGNMENT) g_unpack_alignment = v;
    else if (pname != GL_PACK_ALIGNMENT && v != 0) gl_unsupported("glPixelStorei of an unpack layout other than the alignment");
    const uint32_t w[2] = {pname, (uint32_t)v};
    gl_note(OP_PIXEL_STORE, w, 2, 1);
  }
  REAL(PixelStorei)(pname, v);
}
size_t gl_image_bytes(GLsizei width, GLsizei height, GLenum format, GLenum type, GLint alignment) {
  size_t components;
  switch (format) {
    case GL_RGBA: case 0x80E1 /* GL_BGRA */: components = 4; break;
    case GL_RGB: case 0x80E0 /* GL_BGR */: components = 3; break;
    case GL_LUMINANCE_ALPHA: case 0x8227 /* GL_RG */: components = 2; break;
    case GL_LUMINANCE: case GL_ALPHA: case GL_RED: case GL_INTENSITY: case GL_DEPTH_COMPONENT: components = 1; break;
    default: return 0;
  }
  const size_t size = type == GL_UNSIGNED_BYTE ? 1 : type == GL_FLOAT ? 4 : 0;
  if (!size) return 0;
  const size_t align = (size_t)(alignment > 0 ? alignment : 1);
  const size_t row = ((size_t)width * components * size + align - 1) / align * align;
  return row * (size_t)height;
}
// glTexImage1D/2D/3D: one record, a 1D image of height and depth 1, a 2D one of depth 1. Proxy
// targets (GL_PROXY_TEXTURE_*) build nothing.
static void note_image(GLenum target, GLint level, GLint internal, GLsizei width, GLsizei height, GLsizei depth,
                       GLint border, GLenum format, GLenum type, const void* pixels) {
  if ((target >= GL_PROXY_TEXTURE_1D && target <= GL_PROXY_TEXTURE_2D) || target == GL_PROXY_TEXTURE_3D ||
      target == GL_PROXY_TEXTURE_CUBE_MAP || target == GL_PROXY_TEXTURE_1D_ARRAY ||
      target == GL_PROXY_TEXTURE_2D_ARRAY || target == GL_PROXY_TEXTURE_RECTANGLE)
    return;
  const size_t bytes = gl_image_bytes(width, height * depth, format, type, g_unpack_alignment);
  if (gl_texture_target_index(target) < 0) {
    gl_unsupported("glTexImage of a texture target the plugin does not record");
    return;
  }
  if (!bytes && width && height && depth) gl_unsupported("glTexImage of a format or type the plugin does not size");
  const uint32_t w[IMAGE_WORDS] = {target, (uint32_t)level, (uint32_t)internal, (uint32_t)width, (uint32_t)height,
                                   (uint32_t)depth, (uint32_t)border, format, type, (uint32_t)g_unpack_alignment};
  gl_note_image(w, pixels, pixels ? bytes : 0);
}
GL_EXPORT void glTexImage1D(GLenum target, GLint level, GLint internal, GLsizei width, GLint border, GLenum format,
                            GLenum type, const void* pixels) {
  GL_ENTRY();
  if (gl_recording) note_image(target, level, internal, width, 1, 1, border, format, type, pixels);
  REAL(TexImage1D)(target, level, internal, width, border, format, type, pixels);
}
GL_EXPORT void glTexImage2D(GLenum target, GLint level, GLint internal, GLsizei width, GLsizei height, GLint border,
                            GLenum format, GLenum type, const void* pixels) {
  GL_ENTRY();
  if (gl_recording) note_image(target, level, internal, width, height, 1, border, format, type, pixels);
  REAL(TexImage2D)(target, level, internal, width, height, border, format, type, pixels);
}
GL_EXPORT void glTexImage3D(GLenum target, GLint level, GLint internal, GLsizei width, GLsizei height, GLsizei depth,
                            GLint border, GLenum format, GLenum type, const void* pixels) {
  GL_ENTRY();
  if (gl_recording) note_image(target, level, internal, width, height, depth, border, format, type, pixels);
  CORE_REAL(void (*)(GLenum, GLint, GLint, GLsizei, GLsizei, GLsizei, GLint, GLenum, GLenum, const void*), TexImage3D)(
      target, level, internal, width, height, depth, border, format, type, pixels);
}

// Fog: the latest value per parameter (a colour: four), a state set like the others.
static void note_fog(GLenum pname, const GLfloat* v) {
  uint32_t w[5] = {pname};
  const unsigned n = pname == GL_FOG_COLOR ? 4 : 1;
  floats_to_words(w + 1, v, n);
  gl_note(OP_FOG, w, 1 + n, 1);
}
GL_EXPORT void glFogf(GLenum pname, GLfloat v) { GL_ENTRY(); if (gl_recording) note_fog(pname, &v); REAL(Fogf)(pname, v); }
GL_EXPORT void glFogi(GLenum pname, GLint v) {
  GL_ENTRY();
  if (gl_recording) { const GLfloat f = (GLfloat)v; note_fog(pname, &f); }
  REAL(Fogi)(pname, v);
}
GL_EXPORT void glFogfv(GLenum pname, const GLfloat* v) { GL_ENTRY(); if (gl_recording) note_fog(pname, v); REAL(Fogfv)(pname, v); }
GL_EXPORT void glFogiv(GLenum pname, const GLint* v) {
  GL_ENTRY();
  if (gl_recording) {  // a colour's integers map [-2^31, 2^31 - 1] onto [-1, 1], as GL does
    GLfloat f[4] = {(GLfloat)v[0]};
    if (pname == GL_FOG_COLOR) for (int i = 0; i < 4; i++) f[i] = (GLfloat)((2.0 * v[i] + 1) / 4294967295.0);
    note_fog(pname, f);
  }
  REAL(Fogiv)(pname, v);
}

// Texture coordinate generation, per texture unit (gl_fixed.c); inside a list, the list's.
static void note_tex_gen(GLenum coord, GLenum pname, const GLfloat* v) {
  const unsigned n = pname == GL_TEXTURE_GEN_MODE ? 1 : 4;
  uint32_t w[6] = {coord, pname};
  floats_to_words(w + 2, v, n);
  if (!gl_note_in_list(OP_TEX_GEN, w, 2 + n)) gl_fixed_tex_gen(coord, pname, v, n);
}
GL_EXPORT void glTexGeni(GLenum coord, GLenum pname, GLint v) {
  GL_ENTRY();
  if (gl_recording) { const GLfloat f = (GLfloat)v; note_tex_gen(coord, pname, &f); }
  REAL(TexGeni)(coord, pname, v);
}
GL_EXPORT void glTexGenf(GLenum coord, GLenum pname, GLfloat v) {
  GL_ENTRY();
  if (gl_recording) note_tex_gen(coord, pname, &v);
  REAL(TexGenf)(coord, pname, v);
}
GL_EXPORT void glTexGenfv(GLenum coord, GLenum pname, const GLfloat* v) {
  GL_ENTRY();
  if (gl_recording) note_tex_gen(coord, pname, v);
  REAL(TexGenfv)(coord, pname, v);
}
// The integer and double vector forms, as floats (a plane's coefficients, a mode's enum).
#define TEX_GEN_VECTOR(name, type)                                                         \
  GL_EXPORT void gl##name(GLenum coord, GLenum pname, const type* v) {                     \
    GL_ENTRY();                                                                            \
    if (gl_recording) {                                                                    \
      GLfloat f[4] = {(GLfloat)v[0]};                                                      \
      if (pname != GL_TEXTURE_GEN_MODE) for (int i = 1; i < 4; i++) f[i] = (GLfloat)v[i];  \
      note_tex_gen(coord, pname, f);                                                       \
    }                                                                                      \
    REAL(name)(coord, pname, v);                                                           \
  }
TEX_GEN_VECTOR(TexGeniv, GLint)
TEX_GEN_VECTOR(TexGendv, GLdouble)

// Immediate mode: kept inside display lists; outside, the current colour, normal and texture
// coordinate set between Begin/End pairs are state, and a Begin holds the replay until its End.
GL_EXPORT void glBegin(GLenum mode) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[1] = {mode}; if (!gl_note_in_list(OP_BEGIN, w, 1)) gl_note_begin(1); }
  REAL(Begin)(mode);
}
GL_EXPORT void glEnd(void) {
  if (gl_recording && !gl_note_in_list(OP_END, NULL, 0)) gl_note_begin(0);
  REAL(End)();
  GL_ENTRY();
}
#define VERTEX_DATA(name, op, params, count, ...)                                        \
  GL_EXPORT void gl##name params {                                                       \
    if (gl_recording) {                                                                  \
      const float v[] = {__VA_ARGS__};                                                   \
      uint32_t w[4];                                                                     \
      floats_to_words(w, v, count);                                                      \
      if (!gl_note_in_list(op, w, count) && op != OP_VERTEX2F && op != OP_VERTEX3F &&   \
          !gl_replay_blocked())                                                          \
        gl_note_state(op == OP_COLOR3F ? OP_COLOR4F : op, w, count, 0),                  \
        op == OP_COLOR4F ? gl_fixed_color_float() : (void)0;                             \
    }                                                                                    \
    REAL(name)(__VA_ARGS__);                                                             \
  }
VERTEX_DATA(Vertex2f, OP_VERTEX2F, (GLfloat x, GLfloat y), 2, x, y)
VERTEX_DATA(Vertex3f, OP_VERTEX3F, (GLfloat x, GLfloat y, GLfloat z), 3, x, y, z)
VERTEX_DATA(Normal3f, OP_NORMAL3F, (GLfloat x, GLfloat y, GLfloat z), 3, x, y, z)
VERTEX_DATA(TexCoord2f, OP_TEXCOORD2F, (GLfloat s, GLfloat t), 2, s, t)
VERTEX_DATA(Color4f, OP_COLOR4F, (GLfloat r, GLfloat g, GLfloat b, GLfloat a), 4, r, g, b, a)
GL_EXPORT void glColor3f(GLfloat r, GLfloat g, GLfloat b) {
  if (gl_recording) {
    const uint32_t w[4] = {gl_fbits(r), gl_fbits(g), gl_fbits(b), gl_fbits(1)};
    if (!gl_note_in_list(OP_COLOR3F, w, 3) && !gl_replay_blocked()) gl_note_state(OP_COLOR4F, w, 4, 0);
  }
  REAL(Color3f)(r, g, b);
}

// Display lists: their bodies are the log's largest part; a list compiled again or deleted drops
// its older body.
GL_EXPORT GLuint glGenLists(GLsizei range) {
  GL_ENTRY();
  const GLuint first = REAL(GenLists)(range);
  if (gl_recording && first) gl_note_gen_lists(first, range);
  return first;
}
GL_EXPORT void glNewList(GLuint list, GLenum mode) {
  GL_ENTRY();
  if (gl_recording) gl_note_new_list(list, mode);
  REAL(NewList)(list, mode);
}
GL_EXPORT void glEndList(void) {
  GL_ENTRY();
  if (gl_recording) gl_note_end_list();
  REAL(EndList)();
}
GL_EXPORT void glDeleteLists(GLuint list, GLsizei range) {
  GL_ENTRY();
  if (gl_recording) gl_note_delete_lists(list, range);
  REAL(DeleteLists)(list, range);
}
GL_EXPORT void glCallList(GLuint list) {
  GL_ENTRY();
  if (gl_recording) { const uint32_t w[1] = {list}; gl_note_in_list(OP_CALL_LIST, w, 1); }
  REAL(CallList)(list);
}

// Matrices.
GL_EXPORT void glMatrixMode(GLenum mode) {
  GL_ENTRY();
  if (gl_recording) gl_matrix_mode(mode);
  REAL(MatrixMode)(mode);
}
#define MATRIX_OP(name, op)                       \
  GL_EXPORT void gl##name(void) {                 \
    GL_ENTRY();                                   \
    if (gl_recording) gl_matrix_op(op, NULL);     \
    REAL(name)();                                 \
  }
MATRIX_OP(LoadIdentity, OP_LOAD_IDENTITY)
MATRIX_OP(PushMatrix, OP_PUSH_MATRIX)
MATRIX_OP(PopMatrix, OP_POP_MATRIX)
GL_EXPORT void glLoadMatrixf(const GLfloat* m) {
  GL_ENTRY();
  if (gl_recording) gl_matrix_op(OP_LOAD_MATRIX, m);
  REAL(LoadMatrixf)(m);
}
GL_EXPORT void glMultMatrixf(const GLfloat* m) {
  GL_ENTRY();
  if (gl_recording) gl_matrix_op(OP_MULT_MATRIX, m);
  REAL(MultMatrixf)(m);
}
GL_EXPORT void glLoadMatrixd(const GLdouble* m) {
  GL_ENTRY();
  if (gl_recording) { float f[16]; for (int i = 0; i < 16; i++) f[i] = (float)m[i]; gl_matrix_op(OP_LOAD_MATRIX, f); }
  REAL(LoadMatrixd)(m);
}
GL_EXPORT void glMultMatrixd(const GLdouble* m) {
  GL_ENTRY();
  if (gl_recording) { float f[16]; for (int i = 0; i < 16; i++) f[i] = (float)m[i]; gl_matrix_op(OP_MULT_MATRIX, f); }
  REAL(MultMatrixd)(m);
}
#define MATRIX_BOX(name, op)                                                                        \
  GL_EXPORT void gl##name(GLdouble l, GLdouble r, GLdouble b, GLdouble t, GLdouble n, GLdouble f) { \
    GL_ENTRY();                                                                                     \
    if (gl_recording) { const double v[6] = {l, r, b, t, n, f}; gl_matrix_frustum(op, v); }       \
    REAL(name)(l, r, b, t, n, f);                                                                   \
  }
MATRIX_BOX(Frustum, OP_FRUSTUM)
MATRIX_BOX(Ortho, OP_ORTHO)
#define MATRIX_TRANSFORM(name, op, type)                                                     \
  GL_EXPORT void gl##name(type x, type y, type z) {                                          \
    GL_ENTRY();                                                                              \
    if (gl_recording) gl_matrix_transform(op, 0, (float)x, (float)y, (float)z);              \
    REAL(name)(x, y, z);                                                                     \
  }
MATRIX_TRANSFORM(Translatef, OP_TRANSLATE, GLfloat)
MATRIX_TRANSFORM(Translated, OP_TRANSLATE, GLdouble)
MATRIX_TRANSFORM(Scalef, OP_SCALE, GLfloat)
MATRIX_TRANSFORM(Scaled, OP_SCALE, GLdouble)
GL_EXPORT void glRotatef(GLfloat a, GLfloat x, GLfloat y, GLfloat z) {
  GL_ENTRY();
  if (gl_recording) gl_matrix_transform(OP_ROTATE, a, x, y, z);
  REAL(Rotatef)(a, x, y, z);
}
GL_EXPORT void glRotated(GLdouble a, GLdouble x, GLdouble y, GLdouble z) {
  GL_ENTRY();
  if (gl_recording) gl_matrix_transform(OP_ROTATE, (float)a, (float)x, (float)y, (float)z);
  REAL(Rotated)(a, x, y, z);
}

// Calls that draw or read build no state, but must not run before the replay: a glClear into the
// fresh context would clear with its default colour. They only check for a pending replay.
GL_EXPORT void glClear(GLbitfield mask) { GL_ENTRY(); REAL(Clear)(mask); }
GL_EXPORT void glFlush(void) { GL_ENTRY(); REAL(Flush)(); GL_FRAME_ENDED(); }
GL_EXPORT void glFinish(void) { GL_ENTRY(); REAL(Finish)(); GL_FRAME_ENDED(); }
GL_EXPORT void glDrawArrays(GLenum mode, GLint first, GLsizei count) { GL_ENTRY(); REAL(DrawArrays)(mode, first, count); }
GL_EXPORT void glDrawElements(GLenum mode, GLsizei count, GLenum type, const void* indices) {
  GL_ENTRY();
  REAL(DrawElements)(mode, count, type, indices);
}
GL_EXPORT void glReadPixels(GLint x, GLint y, GLsizei width, GLsizei height, GLenum format, GLenum type, void* pixels) {
  GL_ENTRY();
  REAL(ReadPixels)(x, y, width, height, format, type, pixels);
  GL_FRAME_ENDED();
}

// Every interposed entry point: its name, where libGL's goes, and the plugin's wrapper.
#define ENTRY(name) {"gl" #name, (void**)&gl_real.name, (void*)gl##name}
static const struct { const char* name; void** real; void* wrapper; } g_entries[] = {
    ENTRY(Enable), ENTRY(Disable), ENTRY(ShadeModel), ENTRY(CullFace), ENTRY(FrontFace), ENTRY(DepthFunc),
    ENTRY(DrawBuffer), ENTRY(MatrixMode), ENTRY(BlendFunc), ENTRY(Hint), ENTRY(ColorMaterial), ENTRY(ClearColor),
    ENTRY(ClearDepth), ENTRY(Viewport), ENTRY(Lightfv), ENTRY(Lightf), ENTRY(LightModelfv), ENTRY(LightModeli),
    ENTRY(Materialfv), ENTRY(Materialf), ENTRY(TexEnvi), ENTRY(TexEnvf), ENTRY(BindTexture), ENTRY(DeleteTextures),
    ENTRY(TexParameteri), ENTRY(TexParameterf), ENTRY(TexImage2D), ENTRY(TexImage1D), ENTRY(Fogf), ENTRY(Fogi),
    ENTRY(Fogfv), ENTRY(Fogiv), ENTRY(TexGeni), ENTRY(TexGenf), ENTRY(TexGenfv), ENTRY(TexGeniv), ENTRY(TexGendv),
    ENTRY(PixelStorei), ENTRY(Begin), ENTRY(End),
    ENTRY(Vertex2f), ENTRY(Vertex3f), ENTRY(Normal3f), ENTRY(Color3f), ENTRY(Color4f), ENTRY(TexCoord2f),
    ENTRY(CallList), ENTRY(NewList), ENTRY(EndList), ENTRY(DeleteLists), ENTRY(GenLists), ENTRY(LoadIdentity),
    ENTRY(PushMatrix), ENTRY(PopMatrix), ENTRY(Translatef), ENTRY(Translated), ENTRY(Rotatef), ENTRY(Rotated),
    ENTRY(Scalef), ENTRY(Scaled), ENTRY(LoadMatrixf), ENTRY(MultMatrixf), ENTRY(LoadMatrixd), ENTRY(MultMatrixd),
    ENTRY(Frustum), ENTRY(Ortho), ENTRY(Clear), ENTRY(Flush), ENTRY(Finish), ENTRY(DrawArrays),
    ENTRY(DrawElements), ENTRY(ReadPixels),
};

void gl_resolve_real(void) {
  for (size_t i = 0; i < sizeof g_entries / sizeof g_entries[0]; i++)
    if (!*g_entries[i].real) *g_entries[i].real = gl_find_real(g_entries[i].name);
}

static void* wrapper_named_exactly(const char* name) {
  for (size_t i = 0; i < sizeof g_entries / sizeof g_entries[0]; i++)
    if (strcmp(g_entries[i].name, name) == 0) return g_entries[i].wrapper;
  void* wrapper = gl_core_wrapper_named(name);
  if (!wrapper) wrapper = gl_objects_wrapper_named(name);
  return wrapper ? wrapper : gl_fixed_wrapper_named(name);
}
// An ARB name of a function promoted to the core unchanged (glActiveTextureARB,
// glClientActiveTextureARB, glMultiTexCoord2fARB) gets the core function's wrapper.
void* gl_wrapper_named(const char* name) {
  void* wrapper = wrapper_named_exactly(name);
  const size_t n = strlen(name);
  if (wrapper || n < 4 || n > 63 || strcmp(name + n - 3, "ARB") != 0) return wrapper;
  char core[64];
  memcpy(core, name, n - 3), core[n - 3] = 0;
  return wrapper_named_exactly(core);
}
