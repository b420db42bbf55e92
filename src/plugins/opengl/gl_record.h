// The OpenGL plugin's record of one context's GL state (README.md): what the program built with
// its calls, pruned as it goes, and replayed into the re-created context after a restart.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <GL/gl.h>

// A recorded call: its operation and its arguments as 32-bit words (floats by their bits,
// doubles as two words). Kept inside display lists' bodies and as the latest of each state set.
enum gl_op {
  OP_ENABLE = 1, OP_SHADE_MODEL, OP_CULL_FACE, OP_FRONT_FACE, OP_DEPTH_FUNC, OP_DRAW_BUFFER,
  OP_BLEND_FUNC, OP_HINT, OP_COLOR_MATERIAL, OP_CLEAR_COLOR, OP_CLEAR_DEPTH, OP_VIEWPORT,
  OP_LIGHT, OP_LIGHT_MODEL, OP_MATERIAL, OP_TEX_ENV, OP_BIND_TEXTURE, OP_PIXEL_STORE,
  OP_BEGIN, OP_END, OP_VERTEX2F, OP_VERTEX3F, OP_NORMAL3F, OP_COLOR3F, OP_COLOR4F, OP_TEXCOORD2F,
  OP_CALL_LIST, OP_MATRIX_MODE, OP_LOAD_IDENTITY, OP_PUSH_MATRIX, OP_POP_MATRIX, OP_TRANSLATE,
  OP_ROTATE, OP_SCALE, OP_LOAD_MATRIX, OP_MULT_MATRIX, OP_FRUSTUM, OP_ORTHO,
  OP_TEX_PARAMETER, OP_TEX_IMAGE, OP_FOG, OP_TEX_GEN,
};
enum { GL_MAX_WORDS = 20 };  // the most any recorded call but an image upload has

// The real entry points (libGL's, found behind the plugin), for the wrappers and the replay.
struct gl_real {
  void (*Enable)(GLenum), (*Disable)(GLenum), (*ShadeModel)(GLenum), (*CullFace)(GLenum);
  void (*FrontFace)(GLenum), (*DepthFunc)(GLenum), (*DrawBuffer)(GLenum), (*MatrixMode)(GLenum);
  void (*BlendFunc)(GLenum, GLenum), (*Hint)(GLenum, GLenum), (*ColorMaterial)(GLenum, GLenum);
  void (*ClearColor)(GLclampf, GLclampf, GLclampf, GLclampf), (*ClearDepth)(GLclampd);
  void (*Viewport)(GLint, GLint, GLsizei, GLsizei);
  void (*Lightfv)(GLenum, GLenum, const GLfloat*), (*Lightf)(GLenum, GLenum, GLfloat);
  void (*LightModelfv)(GLenum, const GLfloat*), (*LightModeli)(GLenum, GLint);
  void (*Materialfv)(GLenum, GLenum, const GLfloat*), (*Materialf)(GLenum, GLenum, GLfloat);
  void (*TexEnvi)(GLenum, GLenum, GLint), (*TexEnvf)(GLenum, GLenum, GLfloat);
  void (*BindTexture)(GLenum, GLuint), (*DeleteTextures)(GLsizei, const GLuint*);
  void (*TexParameteri)(GLenum, GLenum, GLint), (*TexParameterf)(GLenum, GLenum, GLfloat);
  void (*TexImage2D)(GLenum, GLint, GLint, GLsizei, GLsizei, GLint, GLenum, GLenum, const void*);
  void (*TexImage1D)(GLenum, GLint, GLint, GLsizei, GLint, GLenum, GLenum, const void*);
  void (*Fogfv)(GLenum, const GLfloat*), (*Fogf)(GLenum, GLfloat), (*Fogi)(GLenum, GLint), (*Fogiv)(GLenum, const GLint*);
  void (*TexGenfv)(GLenum, GLenum, const GLfloat*), (*TexGeni)(GLenum, GLenum, GLint), (*TexGenf)(GLenum, GLenum, GLfloat);
  void (*TexGendv)(GLenum, GLenum, const GLdouble*), (*TexGeniv)(GLenum, GLenum, const GLint*);
  void (*PixelStorei)(GLenum, GLint);
  void (*Begin)(GLenum), (*End)(void);
  void (*Vertex2f)(GLfloat, GLfloat), (*Vertex3f)(GLfloat, GLfloat, GLfloat);
  void (*Normal3f)(GLfloat, GLfloat, GLfloat), (*Color3f)(GLfloat, GLfloat, GLfloat);
  void (*Color4f)(GLfloat, GLfloat, GLfloat, GLfloat), (*TexCoord2f)(GLfloat, GLfloat);
  void (*CallList)(GLuint), (*NewList)(GLuint, GLenum), (*EndList)(void);
  void (*DeleteLists)(GLuint, GLsizei);
  GLuint (*GenLists)(GLsizei);
  void (*LoadIdentity)(void), (*PushMatrix)(void), (*PopMatrix)(void);
  void (*Translatef)(GLfloat, GLfloat, GLfloat), (*Translated)(GLdouble, GLdouble, GLdouble);
  void (*Rotatef)(GLfloat, GLfloat, GLfloat, GLfloat), (*Rotated)(GLdouble, GLdouble, GLdouble, GLdouble);
  void (*Scalef)(GLfloat, GLfloat, GLfloat), (*Scaled)(GLdouble, GLdouble, GLdouble);
  void (*LoadMatrixf)(const GLfloat*), (*MultMatrixf)(const GLfloat*);
  void (*LoadMatrixd)(const GLdouble*), (*MultMatrixd)(const GLdouble*);
  void (*Frustum)(GLdouble, GLdouble, GLdouble, GLdouble, GLdouble, GLdouble);
  void (*Ortho)(GLdouble, GLdouble, GLdouble, GLdouble, GLdouble, GLdouble);
  void (*Clear)(GLbitfield), (*Flush)(void), (*Finish)(void), (*DrawArrays)(GLenum, GLint, GLsizei);
  void (*DrawElements)(GLenum, GLsizei, GLenum, const void*);
  void (*ReadPixels)(GLint, GLint, GLsizei, GLsizei, GLenum, GLenum, void*);
};
extern struct gl_real gl_real;

// What the wrappers do on every call: an exchange (gl_in_frame), then one load and a branch each
// when nothing is to be done.
extern volatile int gl_recording;  // the current context is the recorded one (gl_plugin.c says which)
// Work for the program's GL thread at its next GL call: the replay after a restart
// (ATTEND_REPLAY), the read-back at a checkpoint (ATTEND_READ_BACK), for an indirect context
// parking between two frames at a checkpoint (ATTEND_PARK).
enum { ATTEND_REPLAY = 1, ATTEND_READ_BACK = 2, ATTEND_PARK = 4 };
extern volatile int gl_attention;
// 1 from any interposed GL call until a call that ends a frame (glXSwapBuffers, glReadPixels,
// glFinish, glFlush) has returned: a checkpoint of an indirect context waits for 0 (gl_plugin.c).
// Exchanged, not stored, so that either the GL thread sees a park asked or the checkpoint sees
// the frame begun.
extern volatile int gl_in_frame;
void gl_attend(int was_in_frame);
// Within a frame (all calls but a frame's first) a relaxed load: the full-barrier exchange, which
// orders the frame's start against a checkpoint that saw none, is needed only at that start.
#define GL_ENTRY()                                                                          \
  do {                                                                                      \
    const int was_in_frame_ = __atomic_load_n(&gl_in_frame, __ATOMIC_RELAXED)                \
                                  ? 1                                                       \
                                  : __atomic_exchange_n(&gl_in_frame, 1, __ATOMIC_SEQ_CST); \
    if (__builtin_expect(gl_attention, 0)) gl_attend(was_in_frame_);                        \
  } while (0)
// After the real call of one that ends a frame: what it drew has gone to the server.
#define GL_FRAME_ENDED() __atomic_store_n(&gl_in_frame, 0, __ATOMIC_SEQ_CST)

// Recording, called by the wrappers while gl_recording. gl_note: a call that sets state, keyed
// by its operation and its first `keys` words (the latest per key is kept); inside a display list
// it joins the list's body instead (and sets state too when the list is compiled and executed).
// Returns 1 when the call was only compiled into a list.
int gl_note(enum gl_op op, const uint32_t* words, unsigned count, unsigned keys);
void gl_note_state(enum gl_op op, const uint32_t* words, unsigned count, unsigned keys);  // outside any list
// A call that only counts inside a display list (Begin, Vertex, CallList...): 1 if compiled.
int gl_note_in_list(enum gl_op op, const uint32_t* words, unsigned count);
// A texture image (glTexImage1D/2D/3D): words {image target (a cube map's face), level, internal
// format, width, height, depth, border, format, type, unpack alignment}.
enum { IMAGE_WORDS = 10 };
void gl_note_image(const uint32_t* words, const void* pixels, size_t bytes);
// The texture targets recorded (1D, 2D, 3D, cube map, 1D and 2D arrays, rectangle): an index from
// 0, or -1 for another target. A cube map's faces count as GL_TEXTURE_CUBE_MAP.
enum { TEXTURE_TARGETS = 7 };
int gl_texture_target_index(GLenum target);
GLenum gl_texture_target_at(int index);
GLenum gl_texture_binding_query(int index);  // GL_TEXTURE_BINDING_* of the target
void gl_note_delete_textures(GLsizei n, const GLuint* names);
void gl_note_new_list(GLuint list, GLenum mode);
void gl_note_end_list(void);
void gl_note_delete_lists(GLuint first, GLsizei range);
void gl_note_gen_lists(GLuint first, GLsizei range);
void gl_note_begin(int inside);  // Begin (1) and End (0) outside lists: no replay in between
// The matrix stacks, tracked on the CPU: a frame's pushes, rotations and pops cost arithmetic,
// never a log entry. Each returns 1 when the call was only compiled into a list.
int gl_matrix_mode(GLenum mode);
int gl_matrix_op(enum gl_op op, const float* m16);  // LoadIdentity, Push, Pop, Load, Mult
int gl_matrix_frustum(enum gl_op op, const double* six);
int gl_matrix_transform(enum gl_op op, float angle, float x, float y, float z);
void gl_eye_vector(float v[4], int is_position);  // v times the modelview (lights' positions)

void gl_modelview(float m16[16]);  // the tracked modelview's top
enum { TEXTURE_MATRIX_UNITS = 8 };  // texture units whose GL_TEXTURE matrix stacks are tracked

// The 1.x fixed-function state of a fresh context (gl_fixed.c): per texture unit, client arrays.
void gl_fixed_tex_env(GLenum target, GLenum pname, GLfloat value);  // per active unit
void gl_fixed_enable(GLenum cap, int enabled);  // texture targets and texture generation, per active unit
void gl_fixed_tex_gen(GLenum coord, GLenum pname, const GLfloat* values, unsigned count);  // per active unit
void gl_fixed_replay_units(void);  // per-unit state, after gl_record.c's sets (indirect and fresh)
void gl_fixed_color_float(void);                                      // a glColor*f after any glColor4ubv
void* gl_fixed_wrapper_named(const char* name);
void gl_fixed_replay(void);

void gl_record_reset(void);  // the recorded context was destroyed
// Figures for the log line and the checkpoint's refusal.
struct gl_record_stats { size_t lists, list_calls, list_bytes, sets, textures, texture_bytes, noted_bytes; };
void gl_record_stats(struct gl_record_stats* out);
uint32_t gl_fbits(float f);
float gl_bitsf(uint32_t w);
