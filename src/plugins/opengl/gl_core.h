// The OpenGL plugin's record of the OpenGL 3.x objects of a direct context (README.md, "Direct
// contexts: a fresh context"): buffers, vertex arrays, shaders and programs with their uniforms,
// renderbuffers, framebuffers, indexed uniform-buffer bindings, the current bindings and the
// fixed state 3.x adds. Textures and the 1.x state sets stay in gl_record.c. Nothing here copies
// on a draw call: buffer and texture contents are read back from the GL at the checkpoint.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <GL/gl.h>
#include <GL/glext.h>

// Core entry points, found on first use (libGL's export, else its glXGetProcAddressARB).
void* gl_core_find(const char* name);
#define CORE_REAL(type, name)                                         \
  ({                                                                  \
    static __typeof__((type)0) real_##name;                           \
    if (!real_##name) real_##name = (type)gl_core_find("gl" #name);   \
    GL_ASSERT(real_##name, "libGL has no gl" #name);                  \
    real_##name;                                                      \
  })

#define GROW(array, n, cap)                                                               \
  do {                                                                                    \
    if ((n) >= (cap)) {                                                                   \
      (cap) = (cap) ? 2 * (cap) : 8;                                                      \
      (array) = realloc((array), (cap) * sizeof *(array));                                \
      GL_ASSERT((array), "out of memory for the record");                                 \
    }                                                                                     \
  } while (0)
// Finds the entry named `name` in an array of structs with a `name` member, adding a zeroed one.
#define FIND_OR_ADD(array, n, name_, add)                                                 \
  ({                                                                                      \
    __typeof__(&(array)[0]) found_ = NULL;                                                \
    for (size_t i_ = 0; i_ < (n); i_++)                                                   \
      if ((array)[i_].name == (name_)) { found_ = &(array)[i_]; break; }                  \
    if (!found_ && (add)) {                                                               \
      (array) = realloc((array), ((n) + 1) * sizeof *(array));                            \
      GL_ASSERT((array), "out of memory for the record");                                 \
      found_ = &(array)[(n)++];                                                           \
      memset(found_, 0, sizeof *found_);                                                  \
      found_->name = (name_);                                                             \
    }                                                                                     \
    found_;                                                                               \
  })

void* gl_core_wrapper_named(const char* name);  // glXGetProcAddress: the plugin's 3.x wrapper, or NULL

// Recording, called by the wrappers while gl_recording (gl_core_wrappers.c).
void gl_core_gen(int kind, GLsizei n, const GLuint* names);
void gl_core_delete(int kind, GLsizei n, const GLuint* names);
enum gl_core_kind { KIND_BUFFER, KIND_VERTEX_ARRAY, KIND_FRAMEBUFFER, KIND_RENDERBUFFER, KIND_TEXTURE, KIND_SAMPLER,
                    KIND_QUERY, KIND_COUNT };
void gl_core_bind_buffer(GLenum target, GLuint name);
void gl_core_buffer_data(GLenum target, GLsizeiptr size, GLenum usage);
void gl_core_buffer_mapped(GLenum target, int mapped);
void gl_core_bind_buffer_range(GLenum target, GLuint index, GLuint buffer, GLintptr offset, GLsizeiptr size);
void gl_core_bind_vertex_array(GLuint name);
void gl_core_attrib_pointer(GLuint index, GLint size, GLenum type, GLboolean normalized, GLsizei stride,
                            const void* pointer, int integer);
void gl_core_attrib_enable(GLuint index, int enabled);
void gl_core_attrib_divisor(GLuint index, GLuint divisor);
void gl_core_attrib_value(GLuint index, const GLfloat* xyzw);  // glVertexAttrib*f: the current value
void gl_core_create_shader(GLuint name, GLenum type);
void gl_core_shader_source(GLuint shader, GLsizei count, const GLchar* const* strings, const GLint* lengths);
void gl_core_compile_shader(GLuint shader);
void gl_core_delete_shader(GLuint shader);
void gl_core_create_program(GLuint name);
void gl_core_delete_program(GLuint program);
void gl_core_attach_shader(GLuint program, GLuint shader, int attach);
void gl_core_bind_location(GLuint program, int fragment, GLuint index, const GLchar* name);
void gl_core_link_program(GLuint program);
void gl_core_use_program(GLuint program);
void gl_core_uniform_block_binding(GLuint program, GLuint block, GLuint binding);
void gl_core_location_named(GLuint program, int block, const GLchar* name, GLint location);
// A uniform's latest value in the current program. `kind`: UNIFORM_KIND(type, components) (a
// matrix: its side), with 0x100 for a transposed matrix.
enum { UNIFORM_FLOAT, UNIFORM_INT, UNIFORM_UINT, UNIFORM_MATRIX };
#define UNIFORM_KIND(type, components) ((type) << 4 | (components))
void gl_core_uniform(int kind, GLint location, GLsizei count, const void* values, size_t bytes);
void gl_core_active_texture(GLenum unit);
GLenum gl_core_active_unit(void);    // from 0
GLuint gl_core_array_buffer(void);   // bound to GL_ARRAY_BUFFER
void gl_core_bind_texture(GLenum target, GLuint name);
GLuint gl_core_bound_texture(GLenum target);  // the active unit's texture of that target (a cube face's: the cube map's)
void gl_core_bind_framebuffer(GLenum target, GLuint name);
void gl_core_framebuffer_attach(GLenum target, GLenum attachment, GLenum kind, GLuint object, GLint level);
void gl_core_draw_buffers(GLsizei n, const GLenum* buffers);
void gl_core_bind_renderbuffer(GLuint name);
void gl_core_renderbuffer_storage(GLsizei samples, GLenum format, GLsizei width, GLsizei height);
// The fixed state OpenGL 3.x adds to gl_record.c's sets: the latest per operation and key.
enum gl_core_set { SET_DEPTH_MASK = 1, SET_COLOR_MASK, SET_BLEND_SEPARATE, SET_BLEND_EQUATION, SET_SCISSOR,
                   SET_CLEAR_STENCIL, SET_POLYGON_OFFSET, SET_STENCIL_FUNC, SET_STENCIL_OP, SET_STENCIL_MASK };
void gl_core_set(enum gl_core_set op, const uint32_t* words, unsigned count);

// In the program's GL thread, its context current. Read back what the GL holds and the record
// cannot rebuild from calls (every buffer's contents; textures: gl_record.c); returns NULL or what
// made it impossible.
const char* gl_core_read_back(void);
// Into a fresh context: names first, then the objects, then the bindings and the state.
void gl_core_replay(int with_matrices);  // with_matrices: a compatibility context (1.x matrix stacks)
// Sampler and query objects (gl_objects.c): their names are gl_core.c's (KIND_SAMPLER, KIND_QUERY).
void* gl_objects_wrapper_named(const char* name);
void gl_objects_delete_sampler(GLuint name);
void gl_objects_delete_query(GLuint name);
const char* gl_objects_read_back(void);  // in the GL thread at the checkpoint: NULL or why not
void gl_objects_replay(void);            // after the names are regained and the textures made
struct gl_objects_stats { size_t samplers, queries, carried_results; };
void gl_objects_stats(struct gl_objects_stats* out);
struct gl_core_stats { size_t buffers, buffer_bytes, vertex_arrays, programs, source_bytes, uniforms, framebuffers,
                       renderbuffers; };
void gl_core_stats(struct gl_core_stats* out);
