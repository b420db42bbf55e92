// The OpenGL 3.x entry points the plugin interposes (README.md, "Direct contexts: a fresh
// context"): each calls libGL's own; while recording it first notes what the call built
// (gl_core.c). Per-frame calls (binds, uniforms, sub-data) cost a branch and, while recording,
// a latest-value update: never a log entry or a copy of buffer data.
#define _GNU_SOURCE
#include <string.h>

#include "gl_core.h"
#include "gl_plugin.h"
#include "gl_record.h"

#define GL_EXPORT __attribute__((visibility("default")))

// A wrapper: `record` runs while recording, before libGL's own.
#define WRAP_VOID(name, params, args, record)                  \
  GL_EXPORT void gl##name params {                             \
    GL_ENTRY();                                                \
    if (gl_recording) { record; }                              \
    CORE_REAL(void(*) params, name) args;                      \
  }
// One whose result the record needs: `record` runs after libGL's, with `result`.
#define WRAP_RESULT(type, name, params, args, record)          \
  GL_EXPORT type gl##name params {                             \
    GL_ENTRY();                                                \
    type const result = CORE_REAL(type(*) params, name) args;  \
    if (gl_recording) { record; }                              \
    return result;                                             \
  }
// glGen* and glDelete*: the names a fresh context must hand out again.
#define WRAP_NAMES(gen, del, kind)                                                         \
  GL_EXPORT void gl##gen(GLsizei n, GLuint* names) {                                       \
    GL_ENTRY();                                                                            \
    CORE_REAL(void (*)(GLsizei, GLuint*), gen)(n, names);                                  \
    if (gl_recording) gl_core_gen(kind, n, names);                                         \
  }                                                                                        \
  GL_EXPORT void gl##del(GLsizei n, const GLuint* names) {                                 \
    GL_ENTRY();                                                                            \
    if (gl_recording) gl_core_delete(kind, n, names);                                      \
    CORE_REAL(void (*)(GLsizei, const GLuint*), del)(n, names);                            \
  }
WRAP_NAMES(GenBuffers, DeleteBuffers, KIND_BUFFER)
WRAP_NAMES(GenVertexArrays, DeleteVertexArrays, KIND_VERTEX_ARRAY)
WRAP_NAMES(GenFramebuffers, DeleteFramebuffers, KIND_FRAMEBUFFER)
WRAP_NAMES(GenRenderbuffers, DeleteRenderbuffers, KIND_RENDERBUFFER)
WRAP_NAMES(GenSamplers, DeleteSamplers, KIND_SAMPLER)
WRAP_NAMES(GenQueries, DeleteQueries, KIND_QUERY)
GL_EXPORT void glGenTextures(GLsizei n, GLuint* names) {
  GL_ENTRY();
  CORE_REAL(void (*)(GLsizei, GLuint*), GenTextures)(n, names);
  if (gl_recording) gl_core_gen(KIND_TEXTURE, n, names);
}

// Buffers.
WRAP_VOID(BindBuffer, (GLenum target, GLuint name), (target, name), gl_core_bind_buffer(target, name))
WRAP_VOID(BufferData, (GLenum target, GLsizeiptr size, const void* data, GLenum usage), (target, size, data, usage),
          gl_core_buffer_data(target, size, usage))
WRAP_VOID(BindBufferBase, (GLenum target, GLuint index, GLuint name), (target, index, name),
          gl_core_bind_buffer_range(target, index, name, 0, 0))
WRAP_VOID(BindBufferRange, (GLenum target, GLuint index, GLuint name, GLintptr offset, GLsizeiptr size),
          (target, index, name, offset, size), gl_core_bind_buffer_range(target, index, name, offset, size))
WRAP_RESULT(void*, MapBuffer, (GLenum target, GLenum access), (target, access),
            if (result) gl_core_buffer_mapped(target, 1))
WRAP_RESULT(void*, MapBufferRange, (GLenum target, GLintptr offset, GLsizeiptr length, GLbitfield access),
            (target, offset, length, access), if (result) gl_core_buffer_mapped(target, 1))
WRAP_RESULT(GLboolean, UnmapBuffer, (GLenum target), (target), gl_core_buffer_mapped(target, 0))
// glBufferSubData is not interposed: the contents come back from the GL at the checkpoint.

// Vertex arrays.
WRAP_VOID(BindVertexArray, (GLuint name), (name), gl_core_bind_vertex_array(name))
WRAP_VOID(VertexAttribPointer, (GLuint i, GLint size, GLenum type, GLboolean normalized, GLsizei stride, const void* p),
          (i, size, type, normalized, stride, p), gl_core_attrib_pointer(i, size, type, normalized, stride, p, 0))
WRAP_VOID(VertexAttribIPointer, (GLuint i, GLint size, GLenum type, GLsizei stride, const void* p),
          (i, size, type, stride, p), gl_core_attrib_pointer(i, size, type, GL_FALSE, stride, p, 1))
WRAP_VOID(EnableVertexAttribArray, (GLuint i), (i), gl_core_attrib_enable(i, 1))
WRAP_VOID(DisableVertexAttribArray, (GLuint i), (i), gl_core_attrib_enable(i, 0))
WRAP_VOID(VertexAttribDivisor, (GLuint i, GLuint divisor), (i, divisor), gl_core_attrib_divisor(i, divisor))

// A generic attribute's current value (where its array is off): the latest per attribute.
#define ATTRIB_VALUE(suffix, params, ...)                                                    \
  GL_EXPORT void glVertexAttrib##suffix params {                                            \
    GL_ENTRY();                                                                             \
    const GLfloat v[4] = {__VA_ARGS__};                                                     \
    if (gl_recording) gl_core_attrib_value(i, v);                                           \
    CORE_REAL(void (*)(GLuint, const GLfloat*), VertexAttrib4fv)(i, v);                     \
  }
ATTRIB_VALUE(1f, (GLuint i, GLfloat x), x, 0, 0, 1)
ATTRIB_VALUE(2f, (GLuint i, GLfloat x, GLfloat y), x, y, 0, 1)
ATTRIB_VALUE(3f, (GLuint i, GLfloat x, GLfloat y, GLfloat z), x, y, z, 1)
ATTRIB_VALUE(4f, (GLuint i, GLfloat x, GLfloat y, GLfloat z, GLfloat w), x, y, z, w)
ATTRIB_VALUE(1fv, (GLuint i, const GLfloat* p), p[0], 0, 0, 1)
ATTRIB_VALUE(2fv, (GLuint i, const GLfloat* p), p[0], p[1], 0, 1)
ATTRIB_VALUE(3fv, (GLuint i, const GLfloat* p), p[0], p[1], p[2], 1)
ATTRIB_VALUE(4fv, (GLuint i, const GLfloat* p), p[0], p[1], p[2], p[3])

// Shaders and programs.
WRAP_RESULT(GLuint, CreateShader, (GLenum type), (type), gl_core_create_shader(result, type))
WRAP_VOID(ShaderSource, (GLuint shader, GLsizei count, const GLchar* const* strings, const GLint* lengths),
          (shader, count, strings, lengths), gl_core_shader_source(shader, count, strings, lengths))
WRAP_VOID(CompileShader, (GLuint shader), (shader), gl_core_compile_shader(shader))
WRAP_VOID(DeleteShader, (GLuint shader), (shader), gl_core_delete_shader(shader))
WRAP_RESULT(GLuint, CreateProgram, (void), (), gl_core_create_program(result))
WRAP_VOID(DeleteProgram, (GLuint program), (program), gl_core_delete_program(program))
WRAP_VOID(AttachShader, (GLuint program, GLuint shader), (program, shader), gl_core_attach_shader(program, shader, 1))
WRAP_VOID(DetachShader, (GLuint program, GLuint shader), (program, shader), gl_core_attach_shader(program, shader, 0))
WRAP_VOID(BindAttribLocation, (GLuint program, GLuint index, const GLchar* name), (program, index, name),
          gl_core_bind_location(program, 0, index, name))
WRAP_VOID(BindFragDataLocation, (GLuint program, GLuint index, const GLchar* name), (program, index, name),
          gl_core_bind_location(program, 1, index, name))
WRAP_VOID(LinkProgram, (GLuint program), (program), gl_core_link_program(program))
WRAP_VOID(UseProgram, (GLuint program), (program), gl_core_use_program(program))
WRAP_VOID(UniformBlockBinding, (GLuint program, GLuint block, GLuint binding), (program, block, binding),
          gl_core_uniform_block_binding(program, block, binding))
WRAP_RESULT(GLint, GetUniformLocation, (GLuint program, const GLchar* name), (program, name),
            gl_core_location_named(program, 0, name, result))
WRAP_RESULT(GLuint, GetUniformBlockIndex, (GLuint program, const GLchar* name), (program, name),
            gl_core_location_named(program, 1, name, result == GL_INVALID_INDEX ? -1 : (GLint)result))

// Uniforms: the latest value per location of the current program.
#define UNIFORM_SCALARS(suffix, ctype, type, n, ...)                                                    \
  GL_EXPORT void glUniform##suffix(GLint at, __VA_ARGS__) {                                            \
    GL_ENTRY();                                                                                        \
    const ctype values[n] = {UNIFORM_ARGS_##n};                                                        \
    if (gl_recording) gl_core_uniform(UNIFORM_KIND(type, n), at, 1, values, sizeof values);           \
    CORE_REAL(void (*)(GLint, GLsizei, const ctype*), Uniform##suffix##v)(at, 1, values);              \
  }
#define UNIFORM_ARGS_1 x
#define UNIFORM_ARGS_2 x, y
#define UNIFORM_ARGS_3 x, y, z
#define UNIFORM_ARGS_4 x, y, z, w
UNIFORM_SCALARS(1f, GLfloat, UNIFORM_FLOAT, 1, GLfloat x)
UNIFORM_SCALARS(2f, GLfloat, UNIFORM_FLOAT, 2, GLfloat x, GLfloat y)
UNIFORM_SCALARS(3f, GLfloat, UNIFORM_FLOAT, 3, GLfloat x, GLfloat y, GLfloat z)
UNIFORM_SCALARS(4f, GLfloat, UNIFORM_FLOAT, 4, GLfloat x, GLfloat y, GLfloat z, GLfloat w)
UNIFORM_SCALARS(1i, GLint, UNIFORM_INT, 1, GLint x)
UNIFORM_SCALARS(2i, GLint, UNIFORM_INT, 2, GLint x, GLint y)
UNIFORM_SCALARS(3i, GLint, UNIFORM_INT, 3, GLint x, GLint y, GLint z)
UNIFORM_SCALARS(4i, GLint, UNIFORM_INT, 4, GLint x, GLint y, GLint z, GLint w)
UNIFORM_SCALARS(1ui, GLuint, UNIFORM_UINT, 1, GLuint x)
#define UNIFORM_VECTOR(suffix, ctype, type, n)                                                          \
  GL_EXPORT void glUniform##suffix##v(GLint at, GLsizei count, const ctype* values) {                  \
    GL_ENTRY();                                                                                         \
    if (gl_recording && count > 0)                                                                      \
      gl_core_uniform(UNIFORM_KIND(type, n), at, count, values, (size_t)count * n * sizeof(ctype));    \
    CORE_REAL(void (*)(GLint, GLsizei, const ctype*), Uniform##suffix##v)(at, count, values);          \
  }
UNIFORM_VECTOR(1f, GLfloat, UNIFORM_FLOAT, 1)
UNIFORM_VECTOR(2f, GLfloat, UNIFORM_FLOAT, 2)
UNIFORM_VECTOR(3f, GLfloat, UNIFORM_FLOAT, 3)
UNIFORM_VECTOR(4f, GLfloat, UNIFORM_FLOAT, 4)
UNIFORM_VECTOR(1i, GLint, UNIFORM_INT, 1)
UNIFORM_VECTOR(2i, GLint, UNIFORM_INT, 2)
UNIFORM_VECTOR(3i, GLint, UNIFORM_INT, 3)
UNIFORM_VECTOR(4i, GLint, UNIFORM_INT, 4)
UNIFORM_VECTOR(1ui, GLuint, UNIFORM_UINT, 1)
#define UNIFORM_MATRIX_FV(side)                                                                          \
  GL_EXPORT void glUniformMatrix##side##fv(GLint at, GLsizei count, GLboolean transpose, const GLfloat* v) { \
    GL_ENTRY();                                                                                          \
    if (gl_recording && count > 0)                                                                       \
      gl_core_uniform(UNIFORM_KIND(UNIFORM_MATRIX, side) | (transpose ? 0x100 : 0), at, count, v,         \
                      (size_t)count * side * side * sizeof(GLfloat));                                    \
    CORE_REAL(void (*)(GLint, GLsizei, GLboolean, const GLfloat*), UniformMatrix##side##fv)(at, count, transpose, v); \
  }
UNIFORM_MATRIX_FV(2)
UNIFORM_MATRIX_FV(3)
UNIFORM_MATRIX_FV(4)

// Texture units, framebuffers, renderbuffers.
WRAP_VOID(ActiveTexture, (GLenum unit), (unit), gl_core_active_texture(unit))
WRAP_VOID(BindFramebuffer, (GLenum target, GLuint name), (target, name), gl_core_bind_framebuffer(target, name))
WRAP_VOID(FramebufferTexture2D, (GLenum target, GLenum point, GLenum textarget, GLuint texture, GLint level),
          (target, point, textarget, texture, level),
          if (textarget != GL_TEXTURE_2D && textarget != GL_TEXTURE_RECTANGLE &&
              (textarget < GL_TEXTURE_CUBE_MAP_POSITIVE_X || textarget > GL_TEXTURE_CUBE_MAP_NEGATIVE_Z))
            gl_unsupported("a framebuffer attachment of a texture target other than 2D, rectangle or a cube map face");
          gl_core_framebuffer_attach(target, point, textarget, texture, level))
WRAP_VOID(FramebufferRenderbuffer, (GLenum target, GLenum point, GLenum rbtarget, GLuint rb), (target, point, rbtarget, rb),
          gl_core_framebuffer_attach(target, point, GL_RENDERBUFFER, rb, 0))
WRAP_VOID(DrawBuffers, (GLsizei n, const GLenum* buffers), (n, buffers), gl_core_draw_buffers(n, buffers))
WRAP_VOID(BindRenderbuffer, (GLenum target, GLuint name), (target, name), gl_core_bind_renderbuffer(name))
WRAP_VOID(RenderbufferStorage, (GLenum target, GLenum format, GLsizei width, GLsizei height), (target, format, width, height),
          gl_core_renderbuffer_storage(0, format, width, height))
WRAP_VOID(RenderbufferStorageMultisample, (GLenum target, GLsizei samples, GLenum format, GLsizei width, GLsizei height),
          (target, samples, format, width, height), gl_core_renderbuffer_storage(samples, format, width, height))

// The fixed state OpenGL 3.x programs set beside gl_wrappers.c's.
#define WORDS(...) const uint32_t w[] = {__VA_ARGS__}
WRAP_VOID(DepthMask, (GLboolean flag), (flag), WORDS(flag); gl_core_set(SET_DEPTH_MASK, w, 1))
WRAP_VOID(ColorMask, (GLboolean r, GLboolean g, GLboolean b, GLboolean a), (r, g, b, a),
          WORDS(r, g, b, a); gl_core_set(SET_COLOR_MASK, w, 4))
WRAP_VOID(BlendFuncSeparate, (GLenum a, GLenum b, GLenum c, GLenum d), (a, b, c, d),
          WORDS(a, b, c, d); gl_core_set(SET_BLEND_SEPARATE, w, 4))
WRAP_VOID(BlendEquation, (GLenum mode), (mode), WORDS(mode, mode); gl_core_set(SET_BLEND_EQUATION, w, 2))
WRAP_VOID(BlendEquationSeparate, (GLenum rgb, GLenum alpha), (rgb, alpha), WORDS(rgb, alpha); gl_core_set(SET_BLEND_EQUATION, w, 2))
WRAP_VOID(Scissor, (GLint x, GLint y, GLsizei width, GLsizei height), (x, y, width, height),
          WORDS((uint32_t)x, (uint32_t)y, (uint32_t)width, (uint32_t)height); gl_core_set(SET_SCISSOR, w, 4))
WRAP_VOID(ClearStencil, (GLint s), (s), WORDS((uint32_t)s); gl_core_set(SET_CLEAR_STENCIL, w, 1))
WRAP_VOID(PolygonOffset, (GLfloat factor, GLfloat units), (factor, units),
          WORDS(gl_fbits(factor), gl_fbits(units)); gl_core_set(SET_POLYGON_OFFSET, w, 2))
WRAP_VOID(StencilFunc, (GLenum f, GLint ref, GLuint mask), (f, ref, mask),
          WORDS(GL_FRONT_AND_BACK, f, (uint32_t)ref, mask); gl_core_set(SET_STENCIL_FUNC, w, 4))
WRAP_VOID(StencilOp, (GLenum fail, GLenum zfail, GLenum zpass), (fail, zfail, zpass),
          WORDS(GL_FRONT_AND_BACK, fail, zfail, zpass); gl_core_set(SET_STENCIL_OP, w, 4))
WRAP_VOID(StencilMask, (GLuint mask), (mask), WORDS(GL_FRONT_AND_BACK, mask); gl_core_set(SET_STENCIL_MASK, w, 2))

#define ENTRY(name) {"gl" #name, (void*)gl##name}
static const struct { const char* name; void* wrapper; } g_core_entries[] = {
    ENTRY(GenBuffers), ENTRY(DeleteBuffers), ENTRY(GenVertexArrays), ENTRY(DeleteVertexArrays),
    ENTRY(GenFramebuffers), ENTRY(DeleteFramebuffers), ENTRY(GenRenderbuffers), ENTRY(DeleteRenderbuffers),
    ENTRY(GenTextures), ENTRY(BindBuffer), ENTRY(BufferData), ENTRY(BindBufferBase), ENTRY(BindBufferRange),
    ENTRY(MapBuffer), ENTRY(MapBufferRange), ENTRY(UnmapBuffer), ENTRY(BindVertexArray), ENTRY(VertexAttribPointer),
    ENTRY(VertexAttribIPointer), ENTRY(EnableVertexAttribArray), ENTRY(DisableVertexAttribArray),
    ENTRY(VertexAttribDivisor), ENTRY(VertexAttrib1f), ENTRY(VertexAttrib2f), ENTRY(VertexAttrib3f),
    ENTRY(VertexAttrib4f), ENTRY(VertexAttrib1fv), ENTRY(VertexAttrib2fv), ENTRY(VertexAttrib3fv), ENTRY(VertexAttrib4fv),
    ENTRY(CreateShader), ENTRY(ShaderSource), ENTRY(CompileShader), ENTRY(DeleteShader),
    ENTRY(CreateProgram), ENTRY(DeleteProgram), ENTRY(AttachShader), ENTRY(DetachShader), ENTRY(BindAttribLocation),
    ENTRY(BindFragDataLocation), ENTRY(LinkProgram), ENTRY(UseProgram), ENTRY(UniformBlockBinding),
    ENTRY(GetUniformLocation), ENTRY(GetUniformBlockIndex), ENTRY(Uniform1f), ENTRY(Uniform2f), ENTRY(Uniform3f),
    ENTRY(Uniform4f), ENTRY(Uniform1i), ENTRY(Uniform2i), ENTRY(Uniform3i), ENTRY(Uniform4i), ENTRY(Uniform1ui),
    ENTRY(Uniform1fv), ENTRY(Uniform2fv), ENTRY(Uniform3fv), ENTRY(Uniform4fv), ENTRY(Uniform1iv), ENTRY(Uniform2iv),
    ENTRY(Uniform3iv), ENTRY(Uniform4iv), ENTRY(Uniform1uiv), ENTRY(UniformMatrix2fv), ENTRY(UniformMatrix3fv),
    ENTRY(UniformMatrix4fv), ENTRY(ActiveTexture), ENTRY(BindFramebuffer), ENTRY(FramebufferTexture2D),
    ENTRY(FramebufferRenderbuffer), ENTRY(DrawBuffers), ENTRY(BindRenderbuffer), ENTRY(RenderbufferStorage),
    ENTRY(RenderbufferStorageMultisample), ENTRY(DepthMask), ENTRY(ColorMask), ENTRY(BlendFuncSeparate),
    ENTRY(BlendEquation), ENTRY(BlendEquationSeparate), ENTRY(Scissor), ENTRY(ClearStencil), ENTRY(PolygonOffset),
    ENTRY(StencilFunc), ENTRY(StencilOp), ENTRY(StencilMask), ENTRY(TexImage3D), ENTRY(GenSamplers),
    ENTRY(DeleteSamplers), ENTRY(GenQueries), ENTRY(DeleteQueries),
};

void* gl_core_wrapper_named(const char* name) {
  for (size_t i = 0; i < sizeof g_core_entries / sizeof g_core_entries[0]; i++)
    if (strcmp(g_core_entries[i].name, name) == 0) return g_core_entries[i].wrapper;
  return NULL;
}
