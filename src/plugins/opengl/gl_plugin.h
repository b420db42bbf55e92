// The OpenGL plugin's own parts that the record and the wrappers share (README.md).
#pragma once
#include <stddef.h>

#include <GL/gl.h>

// A broken invariant of the record ends the program with a message: a silently wrong replay
// would be worse.
void gl_fatal(const char* what);
#define GL_ASSERT(condition, what) \
  do { if (!(condition)) gl_fatal(what); } while (0)
// Something the program did that the record cannot bring back: the next checkpoint is refused
// naming it (the first one said), the program runs on.
void gl_unsupported(const char* what);
void gl_replay_all(int with_matrices);  // with_matrices 0: a core-profile context
// The textures' images as the GL holds them now (rendered into, sub-images): NULL or why not.
const char* gl_read_back_textures(void);
// The matrix stacks as the GL holds them (a compatibility context): NULL or why not.
const char* gl_read_back_matrices(void);
size_t gl_image_bytes(GLsizei width, GLsizei height, GLenum format, GLenum type, GLint alignment);
int gl_replay_blocked(void);  // between Begin and End: the replay waits for End
// The wrapper of an entry point the plugin records, by name (glXGetProcAddress), or NULL.
void* gl_wrapper_named(const char* name);
void gl_resolve_real(void);
void* gl_find_real(const char* name);  // libGL's own entry point of that name
// An entry point the plugin does not record: a thunk that notes its calls (gl_unrecorded.c), or
// NULL (none left, or not on this machine: asking for it is then refused).
void* gl_unrecorded_thunk(const char* name, void* real);
const char* gl_unrecorded_called(void);  // the first such entry point called, or NULL
