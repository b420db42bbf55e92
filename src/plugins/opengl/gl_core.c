// The record of a direct context's OpenGL 3.x objects and their replay into a fresh context
// (gl_core.h, README.md "Direct contexts: a fresh context"). Runs inside the program's GL calls
// (ordinary heap, in the image with the rest) and, at the checkpoint and after the restart, in the
// program's GL thread with its context current: never on the checkpoint thread.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <GL/glx.h>

#include "gl_core.h"
#include "gl_plugin.h"
#include "gl_record.h"

enum { MAX_ATTRIBS = 16, MAX_UNITS = 32, MAX_INDEXED = 36, MAX_ATTACHMENTS = 10, MAX_DRAW_BUFFERS = 8 };

struct name_set { GLuint* names; size_t n, cap; };
struct attrib { int enabled, integer, set; GLint size; GLenum type; GLboolean normalized; GLsizei stride;
                uintptr_t offset; GLuint buffer, divisor; };
struct vertex_array { GLuint name; GLuint elements; struct attrib attribs[MAX_ATTRIBS]; };
struct buffer { GLuint name; GLsizeiptr size; GLenum usage; void* data; int defined, mapped; };
struct attachment { GLenum point, kind; GLuint object; GLint level; };
struct framebuffer { GLuint name; struct attachment at[MAX_ATTACHMENTS]; unsigned nat; GLenum draw[MAX_DRAW_BUFFERS];
                     GLsizei ndraw; };
struct renderbuffer { GLuint name; GLsizei samples, width, height; GLenum format; };
struct shader { GLuint name; GLenum type; char* source; int compiled; };
struct stage { GLenum type; char* source; };  // a shader as the program was linked with it
struct binding_name { int fragment; GLuint index; char* name; };
struct queried { int block; GLint location; char* name; };  // what the program asked and holds
struct uniform { GLint location; int kind; GLsizei count; size_t bytes; void* values; };
struct program {
  GLuint name; GLuint attached[8]; unsigned nattached;
  struct binding_name* bindings; size_t nbindings;
  struct stage* stages; size_t nstages; int linked;
  struct queried* queried; size_t nqueried;
  struct uniform* uniforms; size_t nuniforms;
  GLuint block_binding[24]; unsigned char block_set[24];
};
struct indexed { GLuint buffer; GLintptr offset; GLsizeiptr size; int set, ranged; };
struct core_set { int op; uint32_t words[4]; unsigned count; };

static struct {
  struct name_set gen[KIND_COUNT];  // names handed out by glGen* and not deleted
  struct buffer* buffers; size_t nbuffers;
  struct vertex_array* arrays; size_t narrays;
  struct framebuffer* fbs; size_t nfbs;
  struct renderbuffer* rbs; size_t nrbs;
  struct shader* shaders; size_t nshaders;
  struct program* programs; size_t nprograms;
  // Current bindings.
  GLuint array_buffer, uniform_buffer, copy_read, copy_write, pack, unpack, texture_buffer;
  GLuint vertex_array, program, draw_fb, read_fb, renderbuffer;
  GLenum active_unit;
  GLuint unit_texture[TEXTURE_TARGETS][MAX_UNITS];  // per target (gl_texture_target_index) and unit
  struct indexed ubo[MAX_INDEXED];
  struct vertex_array default_array;  // VAO 0 (compatibility profile): its attribs
  GLfloat attrib_value[MAX_ATTRIBS][4];  // glVertexAttrib*f: used where an attribute's array is off
  unsigned attrib_value_set;             // bit per attribute
  struct core_set sets[16]; unsigned nsets;
} c;

#define REMOVE(array, n, entry) ((array)[(entry) - (array)] = (array)[--(n)])

static char* copy_text(const char* text, size_t length) {
  char* out = malloc(length + 1);
  GL_ASSERT(out, "out of memory for the record");
  memcpy(out, text, length);
  out[length] = 0;
  return out;
}

void* gl_core_find(const char* name) {
  void* f = gl_find_real(name);
  if (!f) {
    __GLXextFuncPtr (*proc)(const GLubyte*) = gl_find_real("glXGetProcAddressARB");
    if (proc) f = (void*)proc((const GLubyte*)name);
  }
  return f;
}

// --- names ---
static void name_add(struct name_set* s, GLuint name) {
  for (size_t i = 0; i < s->n; i++) if (s->names[i] == name) return;
  GROW(s->names, s->n, s->cap);
  s->names[s->n++] = name;
}
static void name_drop(struct name_set* s, GLuint name) {
  for (size_t i = 0; i < s->n; i++) if (s->names[i] == name) { s->names[i] = s->names[--s->n]; return; }
}
void gl_core_gen(int kind, GLsizei n, const GLuint* names) {
  for (GLsizei i = 0; i < n; i++) name_add(&c.gen[kind], names[i]);
}

static struct buffer* buffer_bound(GLenum target);
void gl_core_delete(int kind, GLsizei n, const GLuint* names) {
  for (GLsizei i = 0; i < n; i++) {
    const GLuint name = names[i];
    if (!name) continue;
    name_drop(&c.gen[kind], name);
    if (kind == KIND_BUFFER) {
      struct buffer* b = FIND_OR_ADD(c.buffers, c.nbuffers, name, 0);
      if (b) free(b->data), REMOVE(c.buffers, c.nbuffers, b);
      GLuint* bound[] = {&c.array_buffer, &c.uniform_buffer, &c.copy_read, &c.copy_write, &c.pack, &c.unpack,
                         &c.texture_buffer};
      for (size_t k = 0; k < sizeof bound / sizeof bound[0]; k++) if (*bound[k] == name) *bound[k] = 0;
      for (int k = 0; k < MAX_INDEXED; k++) if (c.ubo[k].buffer == name) c.ubo[k].set = 0;
    } else if (kind == KIND_VERTEX_ARRAY) {
      struct vertex_array* v = FIND_OR_ADD(c.arrays, c.narrays, name, 0);
      if (v) REMOVE(c.arrays, c.narrays, v);
      if (c.vertex_array == name) c.vertex_array = 0;
    } else if (kind == KIND_FRAMEBUFFER) {
      struct framebuffer* f = FIND_OR_ADD(c.fbs, c.nfbs, name, 0);
      if (f) REMOVE(c.fbs, c.nfbs, f);
      if (c.draw_fb == name) c.draw_fb = 0;
      if (c.read_fb == name) c.read_fb = 0;
    } else if (kind == KIND_RENDERBUFFER) {
      struct renderbuffer* r = FIND_OR_ADD(c.rbs, c.nrbs, name, 0);
      if (r) REMOVE(c.rbs, c.nrbs, r);
      if (c.renderbuffer == name) c.renderbuffer = 0;
    } else if (kind == KIND_TEXTURE) {
      for (int k = 0; k < TEXTURE_TARGETS; k++)
        for (int u = 0; u < MAX_UNITS; u++) if (c.unit_texture[k][u] == name) c.unit_texture[k][u] = 0;
    } else if (kind == KIND_SAMPLER) {
      gl_objects_delete_sampler(name);
    } else if (kind == KIND_QUERY) {
      gl_objects_delete_query(name);
    }
  }
}

// --- buffers ---
static GLuint* buffer_binding(GLenum target) {
  static GLuint none;
  struct vertex_array* v = c.vertex_array ? FIND_OR_ADD(c.arrays, c.narrays, c.vertex_array, 1) : &c.default_array;
  switch (target) {
    case GL_ARRAY_BUFFER: return &c.array_buffer;
    case GL_ELEMENT_ARRAY_BUFFER: return &v->elements;
    case GL_UNIFORM_BUFFER: return &c.uniform_buffer;
    case GL_COPY_READ_BUFFER: return &c.copy_read;
    case GL_COPY_WRITE_BUFFER: return &c.copy_write;
    case GL_PIXEL_PACK_BUFFER: return &c.pack;
    case GL_PIXEL_UNPACK_BUFFER: return &c.unpack;
    case GL_TEXTURE_BUFFER: return &c.texture_buffer;
    default:
      gl_unsupported("a buffer target the plugin does not record (transform feedback, ...)");
      none = 0;
      return &none;
  }
}
static struct buffer* buffer_bound(GLenum target) {
  const GLuint name = *buffer_binding(target);
  return name ? FIND_OR_ADD(c.buffers, c.nbuffers, name, 1) : NULL;
}
void gl_core_bind_buffer(GLenum target, GLuint name) {
  *buffer_binding(target) = name;
  if (name) name_add(&c.gen[KIND_BUFFER], name);
}
// No copy of the data: the contents are read back at the checkpoint (gl_core_read_back).
void gl_core_buffer_data(GLenum target, GLsizeiptr size, GLenum usage) {
  struct buffer* b = buffer_bound(target);
  if (!b) return;
  b->size = size, b->usage = usage, b->defined = 1;
}
void gl_core_buffer_mapped(GLenum target, int mapped) {
  struct buffer* b = buffer_bound(target);
  if (b) b->mapped = mapped;
}
void gl_core_bind_buffer_range(GLenum target, GLuint index, GLuint buffer, GLintptr offset, GLsizeiptr size) {
  gl_core_bind_buffer(target, buffer);  // they bind the generic point too
  if (target != GL_UNIFORM_BUFFER) return;  // (refused by gl_core_bind_buffer)
  if (index >= MAX_INDEXED) { gl_unsupported("a uniform-buffer binding point above 35"); return; }
  c.ubo[index] = (struct indexed){buffer, offset, size, 1, size != 0};
}

// --- vertex arrays ---
static struct vertex_array* array_bound(void) {
  return c.vertex_array ? FIND_OR_ADD(c.arrays, c.narrays, c.vertex_array, 1) : &c.default_array;
}
void gl_core_bind_vertex_array(GLuint name) {
  c.vertex_array = name;
  if (name) name_add(&c.gen[KIND_VERTEX_ARRAY], name), FIND_OR_ADD(c.arrays, c.narrays, name, 1);
}
void gl_core_attrib_pointer(GLuint index, GLint size, GLenum type, GLboolean normalized, GLsizei stride,
                            const void* pointer, int integer) {
  if (index >= MAX_ATTRIBS) return;  // GL refuses it too
  if (!c.array_buffer) gl_unsupported("a vertex attribute array in client memory (no buffer bound)");
  struct attrib* a = &array_bound()->attribs[index];
  a->set = 1, a->size = size, a->type = type, a->normalized = normalized, a->stride = stride;
  a->offset = (uintptr_t)pointer, a->integer = integer, a->buffer = c.array_buffer;
}
void gl_core_attrib_enable(GLuint index, int enabled) {
  if (index < MAX_ATTRIBS) array_bound()->attribs[index].enabled = enabled;
}
void gl_core_attrib_divisor(GLuint index, GLuint divisor) {
  if (index < MAX_ATTRIBS) array_bound()->attribs[index].divisor = divisor;
}

void gl_core_attrib_value(GLuint index, const GLfloat* xyzw) {
  if (index >= MAX_ATTRIBS) return;
  memcpy(c.attrib_value[index], xyzw, sizeof c.attrib_value[index]);
  c.attrib_value_set |= 1u << index;
}

// --- shaders and programs ---
void gl_core_create_shader(GLuint name, GLenum type) {
  if (name) FIND_OR_ADD(c.shaders, c.nshaders, name, 1)->type = type;
}
void gl_core_shader_source(GLuint name, GLsizei count, const GLchar* const* strings, const GLint* lengths) {
  struct shader* s = FIND_OR_ADD(c.shaders, c.nshaders, name, 0);
  if (!s) return;
  size_t total = 0;
  for (GLsizei i = 0; i < count; i++) total += lengths && lengths[i] >= 0 ? (size_t)lengths[i] : strlen(strings[i]);
  char* all = malloc(total + 1);
  GL_ASSERT(all, "out of memory for the record");
  size_t at = 0;
  for (GLsizei i = 0; i < count; i++) {
    const size_t n = lengths && lengths[i] >= 0 ? (size_t)lengths[i] : strlen(strings[i]);
    memcpy(all + at, strings[i], n);
    at += n;
  }
  all[at] = 0;
  free(s->source);
  s->source = all;
  s->compiled = 0;
}
void gl_core_compile_shader(GLuint name) {
  struct shader* s = FIND_OR_ADD(c.shaders, c.nshaders, name, 0);
  if (s) s->compiled = 1;
}
// A deleted shader still attached lives on in the GL; the programs linked with it keep its source
// in their stages, which is all a replay needs.
void gl_core_delete_shader(GLuint name) {
  struct shader* s = FIND_OR_ADD(c.shaders, c.nshaders, name, 0);
  if (!s) return;
  free(s->source);
  REMOVE(c.shaders, c.nshaders, s);
  for (size_t p = 0; p < c.nprograms; p++) {
    struct program* pr = &c.programs[p];
    for (unsigned i = 0; i < pr->nattached; i++) if (pr->attached[i] == name) pr->attached[i] = pr->attached[--pr->nattached];
  }
}
void gl_core_create_program(GLuint name) {
  if (name) FIND_OR_ADD(c.programs, c.nprograms, name, 1);
}
static void free_program(struct program* p) {
  for (size_t i = 0; i < p->nbindings; i++) free(p->bindings[i].name);
  for (size_t i = 0; i < p->nstages; i++) free(p->stages[i].source);
  for (size_t i = 0; i < p->nqueried; i++) free(p->queried[i].name);
  for (size_t i = 0; i < p->nuniforms; i++) free(p->uniforms[i].values);
  free(p->bindings), free(p->stages), free(p->queried), free(p->uniforms);
}
void gl_core_delete_program(GLuint name) {
  struct program* p = FIND_OR_ADD(c.programs, c.nprograms, name, 0);
  if (!p) return;
  free_program(p);
  REMOVE(c.programs, c.nprograms, p);
  if (c.program == name) c.program = 0;  // (GL keeps a current program until unused: replayed as 0)
}
void gl_core_attach_shader(GLuint program, GLuint shader, int attach) {
  struct program* p = FIND_OR_ADD(c.programs, c.nprograms, program, 0);
  if (!p) return;
  for (unsigned i = 0; i < p->nattached; i++)
    if (p->attached[i] == shader) { if (!attach) p->attached[i] = p->attached[--p->nattached]; return; }
  if (!attach) return;
  if (p->nattached == 8) { gl_unsupported("a GLSL program with more than 8 shaders attached"); return; }
  p->attached[p->nattached++] = shader;
}
void gl_core_bind_location(GLuint program, int fragment, GLuint index, const GLchar* name) {
  struct program* p = FIND_OR_ADD(c.programs, c.nprograms, program, 0);
  if (!p) return;
  for (size_t i = 0; i < p->nbindings; i++)
    if (p->bindings[i].fragment == fragment && strcmp(p->bindings[i].name, name) == 0) { p->bindings[i].index = index; return; }
  p->bindings = realloc(p->bindings, (p->nbindings + 1) * sizeof *p->bindings);
  GL_ASSERT(p->bindings, "out of memory for the record");
  p->bindings[p->nbindings++] = (struct binding_name){fragment, index, copy_text(name, strlen(name))};
}
// A link takes the attached shaders as they are: their sources become the program's stages; its
// uniforms and block bindings start over, as in GL.
void gl_core_link_program(GLuint program) {
  struct program* p = FIND_OR_ADD(c.programs, c.nprograms, program, 0);
  if (!p) return;
  for (size_t i = 0; i < p->nstages; i++) free(p->stages[i].source);
  for (size_t i = 0; i < p->nuniforms; i++) free(p->uniforms[i].values);
  p->nstages = p->nuniforms = 0;
  memset(p->block_set, 0, sizeof p->block_set);
  p->stages = realloc(p->stages, (p->nattached + 1) * sizeof *p->stages);
  GL_ASSERT(p->stages, "out of memory for the record");
  for (unsigned i = 0; i < p->nattached; i++) {
    struct shader* s = FIND_OR_ADD(c.shaders, c.nshaders, p->attached[i], 0);
    if (!s || !s->source || !s->compiled) continue;  // the link fails in GL as well
    p->stages[p->nstages++] = (struct stage){s->type, copy_text(s->source, strlen(s->source))};
  }
  p->linked = 1;
}
void gl_core_use_program(GLuint program) { c.program = program; }
void gl_core_uniform_block_binding(GLuint program, GLuint block, GLuint binding) {
  struct program* p = FIND_OR_ADD(c.programs, c.nprograms, program, 0);
  if (!p) return;
  if (block >= 24) { gl_unsupported("a uniform block index above 23"); return; }
  p->block_binding[block] = binding, p->block_set[block] = 1;
}
void gl_core_location_named(GLuint program, int block, const GLchar* name, GLint location) {
  struct program* p = FIND_OR_ADD(c.programs, c.nprograms, program, 0);
  if (!p || location < 0) return;
  for (size_t i = 0; i < p->nqueried; i++) if (p->queried[i].block == block && strcmp(p->queried[i].name, name) == 0) return;
  p->queried = realloc(p->queried, (p->nqueried + 1) * sizeof *p->queried);
  GL_ASSERT(p->queried, "out of memory for the record");
  p->queried[p->nqueried++] = (struct queried){block, location, copy_text(name, strlen(name))};
}
// The latest value per location: a uniform set every frame costs a search and a copy of its
// value, never a log entry.
void gl_core_uniform(int kind, GLint location, GLsizei count, const void* values, size_t bytes) {
  struct program* p = c.program ? FIND_OR_ADD(c.programs, c.nprograms, c.program, 0) : NULL;
  if (!p || location < 0) return;
  struct uniform* u = NULL;
  for (size_t i = 0; i < p->nuniforms; i++) if (p->uniforms[i].location == location) { u = &p->uniforms[i]; break; }
  if (!u) {
    p->uniforms = realloc(p->uniforms, (p->nuniforms + 1) * sizeof *p->uniforms);
    GL_ASSERT(p->uniforms, "out of memory for the record");
    u = &p->uniforms[p->nuniforms++];
    memset(u, 0, sizeof *u);
    u->location = location;
  }
  if (u->bytes < bytes) {
    u->values = realloc(u->values, bytes);
    GL_ASSERT(u->values, "out of memory for the record");
  }
  memcpy(u->values, values, bytes);
  u->kind = kind, u->count = count, u->bytes = bytes;
}

// --- textures' bindings (their objects: gl_record.c), framebuffers, renderbuffers ---
void gl_core_active_texture(GLenum unit) { c.active_unit = unit - GL_TEXTURE0; }
GLenum gl_core_active_unit(void) { return c.active_unit; }
GLuint gl_core_array_buffer(void) { return c.array_buffer; }
void gl_core_bind_texture(GLenum target, GLuint name) {
  if (name) name_add(&c.gen[KIND_TEXTURE], name);
  const int k = gl_texture_target_index(target);
  if (k < 0) gl_unsupported("a texture target the plugin does not record");
  else if (c.active_unit >= MAX_UNITS) gl_unsupported("a texture unit past the 32nd");
  else c.unit_texture[k][c.active_unit] = name;
}
GLuint gl_core_bound_texture(GLenum target) {
  const int k = gl_texture_target_index(target);
  return k >= 0 && c.active_unit < MAX_UNITS ? c.unit_texture[k][c.active_unit] : 0;
}
void gl_core_bind_framebuffer(GLenum target, GLuint name) {
  if (name) name_add(&c.gen[KIND_FRAMEBUFFER], name), FIND_OR_ADD(c.fbs, c.nfbs, name, 1);
  if (target == GL_FRAMEBUFFER || target == GL_DRAW_FRAMEBUFFER) c.draw_fb = name;
  if (target == GL_FRAMEBUFFER || target == GL_READ_FRAMEBUFFER) c.read_fb = name;
}
void gl_core_framebuffer_attach(GLenum target, GLenum point, GLenum kind, GLuint object, GLint level) {
  const GLuint bound = target == GL_READ_FRAMEBUFFER ? c.read_fb : c.draw_fb;
  struct framebuffer* f = bound ? FIND_OR_ADD(c.fbs, c.nfbs, bound, 1) : NULL;
  if (!f) return;
  for (unsigned i = 0; i < f->nat; i++)
    if (f->at[i].point == point) { f->at[i] = (struct attachment){point, kind, object, level}; return; }
  if (f->nat == MAX_ATTACHMENTS) { gl_unsupported("a framebuffer with more than 10 attachments"); return; }
  f->at[f->nat++] = (struct attachment){point, kind, object, level};
}
void gl_core_draw_buffers(GLsizei n, const GLenum* buffers) {
  struct framebuffer* f = c.draw_fb ? FIND_OR_ADD(c.fbs, c.nfbs, c.draw_fb, 1) : NULL;
  if (!f) return;
  if (n > MAX_DRAW_BUFFERS) { gl_unsupported("glDrawBuffers of more than 8 buffers"); return; }
  memcpy(f->draw, buffers, (size_t)n * sizeof *buffers);
  f->ndraw = n;
}
void gl_core_bind_renderbuffer(GLuint name) {
  c.renderbuffer = name;
  if (name) name_add(&c.gen[KIND_RENDERBUFFER], name), FIND_OR_ADD(c.rbs, c.nrbs, name, 1);
}
void gl_core_renderbuffer_storage(GLsizei samples, GLenum format, GLsizei width, GLsizei height) {
  struct renderbuffer* r = c.renderbuffer ? FIND_OR_ADD(c.rbs, c.nrbs, c.renderbuffer, 1) : NULL;
  if (r) r->samples = samples, r->format = format, r->width = width, r->height = height;
}
void gl_core_set(enum gl_core_set op, const uint32_t* words, unsigned count) {
  // Keyed by the operation (a stencil function or operation: by its face, the first word).
  const int keyed = op == SET_STENCIL_FUNC || op == SET_STENCIL_OP || op == SET_STENCIL_MASK;
  unsigned i = 0;
  while (i < c.nsets && !(c.sets[i].op == (int)op && (!keyed || c.sets[i].words[0] == words[0]))) i++;
  if (i == c.nsets) {
    if (c.nsets == sizeof c.sets / sizeof c.sets[0]) { gl_unsupported("more fixed-state kinds than recorded"); return; }
    c.nsets++;
  }
  c.sets[i].op = (int)op, c.sets[i].count = count;
  memcpy(c.sets[i].words, words, 4 * (size_t)count);
}

// --- the checkpoint ---
const char* gl_core_read_back(void) {
  static char why[96];
  const char* objects = gl_objects_read_back();  // queries in flight or with results unread
  if (objects) return objects;
  GLint read_binding = 0;
  CORE_REAL(void (*)(GLenum, GLint*), GetIntegerv)(GL_COPY_READ_BUFFER_BINDING, &read_binding);
  for (size_t i = 0; i < c.nbuffers; i++) {
    struct buffer* b = &c.buffers[i];
    if (!b->defined) continue;
    if (b->mapped) {
      snprintf(why, sizeof why, "buffer %u is mapped (its contents and the program's pointer cannot come back)", b->name);
      return why;
    }
    free(b->data);
    b->data = NULL;
    if (!b->size) continue;
    b->data = malloc((size_t)b->size);
    GL_ASSERT(b->data, "out of memory reading a buffer back");
    CORE_REAL(void (*)(GLenum, GLuint), BindBuffer)(GL_COPY_READ_BUFFER, b->name);
    CORE_REAL(void (*)(GLenum, GLintptr, GLsizeiptr, void*), GetBufferSubData)(GL_COPY_READ_BUFFER, 0, b->size, b->data);
  }
  CORE_REAL(void (*)(GLenum, GLuint), BindBuffer)(GL_COPY_READ_BUFFER, (GLuint)read_binding);
  return NULL;
}

void gl_core_stats(struct gl_core_stats* out) {
  memset(out, 0, sizeof *out);
  out->buffers = c.nbuffers, out->vertex_arrays = c.narrays, out->programs = c.nprograms;
  out->framebuffers = c.nfbs, out->renderbuffers = c.nrbs;
  for (size_t i = 0; i < c.nbuffers; i++) out->buffer_bytes += c.buffers[i].data ? (size_t)c.buffers[i].size : 0;
  for (size_t i = 0; i < c.nprograms; i++) {
    for (size_t s = 0; s < c.programs[i].nstages; s++) out->source_bytes += strlen(c.programs[i].stages[s].source);
    out->uniforms += c.programs[i].nuniforms;
  }
  for (size_t i = 0; i < c.nshaders; i++) out->source_bytes += c.shaders[i].source ? strlen(c.shaders[i].source) : 0;
}

// --- the replay, into a fresh context ---
static void die_name(const char* what, GLuint name) {
  char message[160];
  snprintf(message, sizeof message, "the fresh context did not hand out the %s name %u the program holds", what, name);
  gl_fatal(message);
}
static int contains(const GLuint* names, size_t n, GLuint name) {
  for (size_t i = 0; i < n; i++) if (names[i] == name) return 1;
  return 0;
}
// Core profile makes objects only under names from glGen*: generate up to the largest name
// needed (a fresh context hands them out from 1), check each needed one came, delete the others.
static void regain_names(int kind, const char* gen_name, const char* delete_name, const char* what) {
  const struct name_set* s = &c.gen[kind];
  GLuint most = 0;
  for (size_t i = 0; i < s->n; i++) if (s->names[i] > most) most = s->names[i];
  if (!most) return;
  if (most > (1u << 20)) die_name(what, most);
  void (*gen)(GLsizei, GLuint*) = (void (*)(GLsizei, GLuint*))gl_core_find(gen_name);
  void (*del)(GLsizei, const GLuint*) = (void (*)(GLsizei, const GLuint*))gl_core_find(delete_name);
  GL_ASSERT(gen && del, "libGL has no glGen*/glDelete* of an object the program made");
  GLuint* got = calloc(most, sizeof *got);
  GL_ASSERT(got, "out of memory for the replay");
  gen((GLsizei)most, got);
  for (size_t k = 0; k < s->n; k++) if (!contains(got, most, s->names[k])) die_name(what, s->names[k]);
  size_t spares = 0;
  for (GLuint i = 0; i < most; i++) if (!contains(s->names, s->n, got[i])) got[spares++] = got[i];
  if (spares) del((GLsizei)spares, got);
  free(got);
}

// Programs and shaders share one namespace and have no glGen*: create, in the order of the
// names, until each needed one comes; the others (spares) are deleted at the end of the replay.
struct needed_name { GLuint name; GLenum shader_type; };  // shader_type 0: a program
static int by_name(const void* a, const void* b) {
  const GLuint x = ((const struct needed_name*)a)->name, y = ((const struct needed_name*)b)->name;
  return x < y ? -1 : x > y;
}
static GLuint* regain_program_names(size_t* nspares) {
  GLuint (*create_program)(void) = CORE_REAL(GLuint (*)(void), CreateProgram);
  GLuint (*create_shader)(GLenum) = CORE_REAL(GLuint (*)(GLenum), CreateShader);
  const size_t n = c.nprograms + c.nshaders;
  struct needed_name* needed = calloc(n + 1, sizeof *needed);
  GLuint* spares = NULL;
  size_t nsp = 0, cap = 0;
  GL_ASSERT(needed, "out of memory for the replay");
  for (size_t i = 0; i < c.nprograms; i++) needed[i] = (struct needed_name){c.programs[i].name, 0};
  for (size_t i = 0; i < c.nshaders; i++) needed[c.nprograms + i] = (struct needed_name){c.shaders[i].name, c.shaders[i].type};
  qsort(needed, n, sizeof *needed, by_name);
  for (size_t i = 0; i < n; i++) {
    for (;;) {
      const GLuint got = needed[i].shader_type ? create_shader(needed[i].shader_type) : create_program();
      if (got == needed[i].name) break;
      if (!got || got > needed[i].name) die_name(needed[i].shader_type ? "shader" : "program", needed[i].name);
      GROW(spares, nsp, cap);
      spares[nsp++] = got;
    }
  }
  free(needed);
  *nspares = nsp;
  return spares;
}

static void replay_uniform(const struct uniform* u) {
  const int type = (u->kind >> 4) & 15, components = u->kind & 15;
  const GLboolean transpose = (u->kind >> 8) & 1;
  const GLint at = u->location;
  const GLsizei n = u->count;
  const void* v = u->values;
  static const char* const vector_names[3][4] = {{"glUniform1fv", "glUniform2fv", "glUniform3fv", "glUniform4fv"},
                                                 {"glUniform1iv", "glUniform2iv", "glUniform3iv", "glUniform4iv"},
                                                 {"glUniform1uiv", "glUniform2uiv", "glUniform3uiv", "glUniform4uiv"}};
  static const char* const matrix_names[3] = {"glUniformMatrix2fv", "glUniformMatrix3fv", "glUniformMatrix4fv"};
  GL_ASSERT(components >= 1 && components <= 4 && type <= UNIFORM_MATRIX, "a recorded uniform of no known kind");
  if (type == UNIFORM_MATRIX) {
    GL_ASSERT(components >= 2, "a recorded matrix uniform of no known size");
    void (*set)(GLint, GLsizei, GLboolean, const GLfloat*) =
        (void (*)(GLint, GLsizei, GLboolean, const GLfloat*))gl_core_find(matrix_names[components - 2]);
    GL_ASSERT(set, "libGL has no glUniformMatrix*fv");
    set(at, n, transpose, v);
    return;
  }
  void (*set)(GLint, GLsizei, const void*) = (void (*)(GLint, GLsizei, const void*))gl_core_find(vector_names[type][components - 1]);
  GL_ASSERT(set, "libGL has no glUniform*v");
  set(at, n, v);
}

static void replay_program(struct program* p) {
  GLuint (*create_shader)(GLenum) = CORE_REAL(GLuint (*)(GLenum), CreateShader);
  void (*source)(GLuint, GLsizei, const GLchar* const*, const GLint*) =
      CORE_REAL(void (*)(GLuint, GLsizei, const GLchar* const*, const GLint*), ShaderSource);
  void (*compile)(GLuint) = CORE_REAL(void (*)(GLuint), CompileShader);
  void (*attach)(GLuint, GLuint) = CORE_REAL(void (*)(GLuint, GLuint), AttachShader);
  void (*detach)(GLuint, GLuint) = CORE_REAL(void (*)(GLuint, GLuint), DetachShader);
  void (*delete_shader)(GLuint) = CORE_REAL(void (*)(GLuint), DeleteShader);
  for (size_t i = 0; i < p->nbindings; i++) {
    if (p->bindings[i].fragment)
      CORE_REAL(void (*)(GLuint, GLuint, const GLchar*), BindFragDataLocation)(p->name, p->bindings[i].index, p->bindings[i].name);
    else
      CORE_REAL(void (*)(GLuint, GLuint, const GLchar*), BindAttribLocation)(p->name, p->bindings[i].index, p->bindings[i].name);
  }
  if (p->linked) {
    GLuint temporary[16];
    size_t n = p->nstages < 16 ? p->nstages : 16;
    for (size_t i = 0; i < n; i++) {
      temporary[i] = create_shader(p->stages[i].type);
      const GLchar* text = p->stages[i].source;
      source(temporary[i], 1, &text, NULL);
      compile(temporary[i]);
      attach(p->name, temporary[i]);
    }
    CORE_REAL(void (*)(GLuint), LinkProgram)(p->name);
    GLint linked = 0;
    CORE_REAL(void (*)(GLuint, GLenum, GLint*), GetProgramiv)(p->name, GL_LINK_STATUS, &linked);
    if (!linked) {
      char message[128];
      snprintf(message, sizeof message, "the GLSL program %u no longer links in the fresh context", p->name);
      gl_fatal(message);
    }
    for (size_t i = 0; i < n; i++) detach(p->name, temporary[i]), delete_shader(temporary[i]);
  }
  for (unsigned i = 0; i < p->nattached; i++) attach(p->name, p->attached[i]);
  // The program holds the locations it asked for: the relinked program must have them there.
  for (size_t i = 0; i < p->nqueried; i++) {
    const struct queried* q = &p->queried[i];
    const GLint now = q->block ? (GLint)CORE_REAL(GLuint (*)(GLuint, const GLchar*), GetUniformBlockIndex)(p->name, q->name)
                               : CORE_REAL(GLint (*)(GLuint, const GLchar*), GetUniformLocation)(p->name, q->name);
    if (now != q->location) {
      char message[200];
      snprintf(message, sizeof message, "the uniform%s %s of program %u is at %d after the relink; the program holds %d",
               q->block ? " block" : "", q->name, p->name, now, q->location);
      gl_fatal(message);
    }
  }
  for (GLuint b = 0; b < 24; b++)
    if (p->block_set[b]) CORE_REAL(void (*)(GLuint, GLuint, GLuint), UniformBlockBinding)(p->name, b, p->block_binding[b]);
  if (p->nuniforms) {
    CORE_REAL(void (*)(GLuint), UseProgram)(p->name);
    for (size_t i = 0; i < p->nuniforms; i++) replay_uniform(&p->uniforms[i]);
  }
}

static void replay_vertex_array(const struct vertex_array* v) {
  void (*bind_buffer)(GLenum, GLuint) = CORE_REAL(void (*)(GLenum, GLuint), BindBuffer);
  CORE_REAL(void (*)(GLuint), BindVertexArray)(v->name);
  for (GLuint i = 0; i < MAX_ATTRIBS; i++) {
    const struct attrib* a = &v->attribs[i];
    if (a->set) {
      bind_buffer(GL_ARRAY_BUFFER, a->buffer);
      if (a->integer)
        CORE_REAL(void (*)(GLuint, GLint, GLenum, GLsizei, const void*), VertexAttribIPointer)(i, a->size, a->type, a->stride, (const void*)a->offset);
      else
        CORE_REAL(void (*)(GLuint, GLint, GLenum, GLboolean, GLsizei, const void*), VertexAttribPointer)(
            i, a->size, a->type, a->normalized, a->stride, (const void*)a->offset);
    }
    if (a->enabled) CORE_REAL(void (*)(GLuint), EnableVertexAttribArray)(i);
    if (a->divisor) CORE_REAL(void (*)(GLuint, GLuint), VertexAttribDivisor)(i, a->divisor);
  }
  bind_buffer(GL_ELEMENT_ARRAY_BUFFER, v->elements);
}

static void replay_framebuffer(const struct framebuffer* f) {
  CORE_REAL(void (*)(GLenum, GLuint), BindFramebuffer)(GL_FRAMEBUFFER, f->name);
  for (unsigned i = 0; i < f->nat; i++) {
    const struct attachment* a = &f->at[i];
    if (a->kind == GL_RENDERBUFFER)
      CORE_REAL(void (*)(GLenum, GLenum, GLenum, GLuint), FramebufferRenderbuffer)(GL_FRAMEBUFFER, a->point, GL_RENDERBUFFER, a->object);
    else
      CORE_REAL(void (*)(GLenum, GLenum, GLenum, GLuint, GLint), FramebufferTexture2D)(GL_FRAMEBUFFER, a->point, a->kind, a->object, a->level);
  }
  if (f->ndraw) CORE_REAL(void (*)(GLsizei, const GLenum*), DrawBuffers)(f->ndraw, f->draw);
}

static void replay_set(const struct core_set* s) {
  const uint32_t* w = s->words;
  float f[4];
  for (unsigned i = 0; i < 4; i++) f[i] = gl_bitsf(w[i]);
  switch (s->op) {
    case SET_DEPTH_MASK: CORE_REAL(void (*)(GLboolean), DepthMask)((GLboolean)w[0]); break;
    case SET_COLOR_MASK: CORE_REAL(void (*)(GLboolean, GLboolean, GLboolean, GLboolean), ColorMask)(w[0], w[1], w[2], w[3]); break;
    case SET_BLEND_SEPARATE: CORE_REAL(void (*)(GLenum, GLenum, GLenum, GLenum), BlendFuncSeparate)(w[0], w[1], w[2], w[3]); break;
    case SET_BLEND_EQUATION: CORE_REAL(void (*)(GLenum, GLenum), BlendEquationSeparate)(w[0], w[1]); break;
    case SET_SCISSOR: CORE_REAL(void (*)(GLint, GLint, GLsizei, GLsizei), Scissor)(w[0], w[1], w[2], w[3]); break;
    case SET_CLEAR_STENCIL: CORE_REAL(void (*)(GLint), ClearStencil)((GLint)w[0]); break;
    case SET_POLYGON_OFFSET: CORE_REAL(void (*)(GLfloat, GLfloat), PolygonOffset)(f[0], f[1]); break;
    case SET_STENCIL_FUNC: CORE_REAL(void (*)(GLenum, GLenum, GLint, GLuint), StencilFuncSeparate)(w[0], w[1], (GLint)w[2], w[3]); break;
    case SET_STENCIL_OP: CORE_REAL(void (*)(GLenum, GLenum, GLenum, GLenum), StencilOpSeparate)(w[0], w[1], w[2], w[3]); break;
    case SET_STENCIL_MASK: CORE_REAL(void (*)(GLenum, GLuint), StencilMaskSeparate)(w[0], w[1]); break;
    default: gl_fatal("a recorded 3.x state set of no known kind");
  }
}

void gl_core_replay(int with_matrices) {
  void (*bind_buffer)(GLenum, GLuint) = CORE_REAL(void (*)(GLenum, GLuint), BindBuffer);
  regain_names(KIND_BUFFER, "glGenBuffers", "glDeleteBuffers", "buffer");
  regain_names(KIND_VERTEX_ARRAY, "glGenVertexArrays", "glDeleteVertexArrays", "vertex array");
  regain_names(KIND_FRAMEBUFFER, "glGenFramebuffers", "glDeleteFramebuffers", "framebuffer");
  regain_names(KIND_RENDERBUFFER, "glGenRenderbuffers", "glDeleteRenderbuffers", "renderbuffer");
  regain_names(KIND_TEXTURE, "glGenTextures", "glDeleteTextures", "texture");
  regain_names(KIND_SAMPLER, "glGenSamplers", "glDeleteSamplers", "sampler");
  regain_names(KIND_QUERY, "glGenQueries", "glDeleteQueries", "query");
  size_t nspares = 0;
  GLuint* spares = regain_program_names(&nspares);
  for (size_t i = 0; i < c.nbuffers; i++) {
    const struct buffer* b = &c.buffers[i];
    if (!b->defined) continue;
    bind_buffer(GL_COPY_WRITE_BUFFER, b->name);
    CORE_REAL(void (*)(GLenum, GLsizeiptr, const void*, GLenum), BufferData)(GL_COPY_WRITE_BUFFER, b->size, b->data, b->usage);
  }
  gl_replay_all(with_matrices);  // the textures with their images, the 1.x state sets
  for (size_t i = 0; i < c.nrbs; i++) {
    const struct renderbuffer* r = &c.rbs[i];
    CORE_REAL(void (*)(GLenum, GLuint), BindRenderbuffer)(GL_RENDERBUFFER, r->name);
    if (r->format)
      CORE_REAL(void (*)(GLenum, GLsizei, GLenum, GLsizei, GLsizei), RenderbufferStorageMultisample)(
          GL_RENDERBUFFER, r->samples, r->format, r->width, r->height);
  }
  for (size_t i = 0; i < c.nshaders; i++) {
    const struct shader* s = &c.shaders[i];
    const GLchar* text = s->source;
    if (text) CORE_REAL(void (*)(GLuint, GLsizei, const GLchar* const*, const GLint*), ShaderSource)(s->name, 1, &text, NULL);
    if (text && s->compiled) CORE_REAL(void (*)(GLuint), CompileShader)(s->name);
  }
  for (size_t i = 0; i < c.nprograms; i++) replay_program(&c.programs[i]);
  for (size_t i = 0; i < c.narrays; i++) replay_vertex_array(&c.arrays[i]);
  for (size_t i = 0; i < c.nfbs; i++) replay_framebuffer(&c.fbs[i]);
  for (GLuint i = 0; i < MAX_INDEXED; i++) {
    const struct indexed* x = &c.ubo[i];
    if (!x->set) continue;
    if (x->ranged)
      CORE_REAL(void (*)(GLenum, GLuint, GLuint, GLintptr, GLsizeiptr), BindBufferRange)(GL_UNIFORM_BUFFER, i, x->buffer, x->offset, x->size);
    else
      CORE_REAL(void (*)(GLenum, GLuint, GLuint), BindBufferBase)(GL_UNIFORM_BUFFER, i, x->buffer);
  }
  if (with_matrices) gl_fixed_replay();  // a compatibility context's client arrays, per-unit state
  // The bindings as the program left them.
  const struct { GLenum target; GLuint name; } targets[] = {
      {GL_ARRAY_BUFFER, c.array_buffer}, {GL_UNIFORM_BUFFER, c.uniform_buffer}, {GL_COPY_READ_BUFFER, c.copy_read},
      {GL_COPY_WRITE_BUFFER, c.copy_write}, {GL_PIXEL_PACK_BUFFER, c.pack}, {GL_PIXEL_UNPACK_BUFFER, c.unpack},
      {GL_TEXTURE_BUFFER, c.texture_buffer}};
  if (!with_matrices) CORE_REAL(void (*)(GLuint), BindVertexArray)(0);
  else replay_vertex_array(&c.default_array);  // a compatibility context's attributes outside any VAO
  CORE_REAL(void (*)(GLuint), BindVertexArray)(c.vertex_array);
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) bind_buffer(targets[i].target, targets[i].name);
  void (*active)(GLenum) = CORE_REAL(void (*)(GLenum), ActiveTexture);
  // Unit 0 gets every target in use (gl_record.c's sets bound them all there), the others theirs.
  int in_use[TEXTURE_TARGETS] = {0};
  for (int k = 0; k < TEXTURE_TARGETS; k++)
    for (GLenum u = 0; u < MAX_UNITS; u++) in_use[k] |= c.unit_texture[k][u] != 0 || gl_texture_target_at(k) == GL_TEXTURE_2D;
  for (GLenum u = 0; u < MAX_UNITS; u++)
    for (int k = 0; k < TEXTURE_TARGETS; k++)
      if (c.unit_texture[k][u] || (u == 0 && in_use[k]))
        active(GL_TEXTURE0 + u), gl_real.BindTexture(gl_texture_target_at(k), c.unit_texture[k][u]);
  active(GL_TEXTURE0 + c.active_unit);
  CORE_REAL(void (*)(GLuint), UseProgram)(c.program);
  CORE_REAL(void (*)(GLenum, GLuint), BindFramebuffer)(GL_DRAW_FRAMEBUFFER, c.draw_fb);
  CORE_REAL(void (*)(GLenum, GLuint), BindFramebuffer)(GL_READ_FRAMEBUFFER, c.read_fb);
  CORE_REAL(void (*)(GLenum, GLuint), BindRenderbuffer)(GL_RENDERBUFFER, c.renderbuffer);
  for (unsigned i = 0; i < c.nsets; i++) replay_set(&c.sets[i]);
  gl_objects_replay();  // samplers with their bindings, queries (gl_objects.c)
  for (GLuint i = 0; i < MAX_ATTRIBS; i++)
    if (c.attrib_value_set & (1u << i)) CORE_REAL(void (*)(GLuint, const GLfloat*), VertexAttrib4fv)(i, c.attrib_value[i]);
  for (size_t i = 0; i < nspares; i++) {
    if (CORE_REAL(GLboolean (*)(GLuint), IsProgram)(spares[i])) CORE_REAL(void (*)(GLuint), DeleteProgram)(spares[i]);
    else CORE_REAL(void (*)(GLuint), DeleteShader)(spares[i]);
  }
  free(spares);
  const GLenum error = CORE_REAL(GLenum (*)(void), GetError)();
  if (error != GL_NO_ERROR) {
    char message[96];
    snprintf(message, sizeof message, "the replay into the fresh context raised GL error 0x%x", error);
    gl_fatal(message);
  }
}
