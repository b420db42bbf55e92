// The pruned log of one GL context (README.md, "What is recorded"): display lists' bodies, the
// latest of each state set, texture objects with their images, and the matrix stacks. Runs in the
// program's threads, inside the GL calls (never on the checkpoint path): its memory is ordinary
// heap, saved with the process.
#include "gl_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gl_core.h"
#include "gl_plugin.h"

uint32_t gl_fbits(float f) { uint32_t w; memcpy(&w, &f, 4); return w; }
float gl_bitsf(uint32_t w) { float f; memcpy(&f, &w, 4); return f; }

// A growable byte buffer (a list's body, a texture's image).
struct bytes { uint8_t* data; size_t size, cap; };
static void bytes_append(struct bytes* b, const void* data, size_t size) {
  if (b->size + size > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->size + size) cap *= 2;
    uint8_t* grown = realloc(b->data, cap);
    GL_ASSERT(grown != NULL, "out of memory for the GL log");
    b->data = grown, b->cap = cap;
  }
  memcpy(b->data + b->size, data, size);
  b->size += size;
}
static void bytes_free(struct bytes* b) { free(b->data); b->data = NULL; b->size = b->cap = 0; }

struct call_head { uint16_t op, count; };  // followed by count words
static void append_call(struct bytes* b, enum gl_op op, const uint32_t* words, unsigned count) {
  struct call_head h = {(uint16_t)op, (uint16_t)count};
  bytes_append(b, &h, sizeof h);
  bytes_append(b, words, 4 * (size_t)count);
}

struct list { GLuint name; GLenum mode; struct bytes body; unsigned calls; };
struct set { uint16_t op, count, keys; uint32_t words[GL_MAX_WORDS]; };
struct texture { GLuint name; GLenum target; struct set params[16]; unsigned nparams; struct bytes images; };

static struct {
  struct list* lists; size_t nlists, caplists;
  struct list* compiling;  // NewList..EndList
  struct set* sets; size_t nsets, capsets;
  struct texture* textures; size_t ntextures, captextures;
  // Modelview, projection, then the texture matrix of each unit (GL keeps one per unit).
  float stacks[2 + TEXTURE_MATRIX_UNITS][32][16];
  int depth[2 + TEXTURE_MATRIX_UNITS], mode;  // mode: 0, 1, or 2 for GL_TEXTURE (of the active unit)
  unsigned texture_units_used;  // bit per unit whose texture matrix was set
  int in_begin;
  size_t noted_bytes;  // everything ever noted, for the pruning figure
} g;

static void identity(float* m) { memset(m, 0, 64); m[0] = m[5] = m[10] = m[15] = 1; }

void gl_record_reset(void) {
  for (size_t i = 0; i < g.nlists; i++) bytes_free(&g.lists[i].body);
  for (size_t i = 0; i < g.ntextures; i++) bytes_free(&g.textures[i].images);
  free(g.lists), free(g.sets), free(g.textures);
  memset(&g, 0, sizeof g);
  for (int m = 0; m < 2 + TEXTURE_MATRIX_UNITS; m++) identity(g.stacks[m][0]);
}
__attribute__((constructor)) static void gl_record_init(void) { gl_record_reset(); }

static void* grow(void* array, size_t* cap, size_t count, size_t element) {
  if (count < *cap) return array;
  *cap = *cap ? *cap * 2 : 16;
  void* grown = realloc(array, *cap * element);
  GL_ASSERT(grown != NULL, "out of memory for the GL log");
  return grown;
}

// The targets a texture object may have, in the order of gl_texture_target_index.
static const GLenum g_targets[TEXTURE_TARGETS] = {GL_TEXTURE_1D, GL_TEXTURE_2D, GL_TEXTURE_3D, GL_TEXTURE_CUBE_MAP,
                                                  GL_TEXTURE_1D_ARRAY, GL_TEXTURE_2D_ARRAY, GL_TEXTURE_RECTANGLE};
static const GLenum g_target_bindings[TEXTURE_TARGETS] = {
    GL_TEXTURE_BINDING_1D, GL_TEXTURE_BINDING_2D, GL_TEXTURE_BINDING_3D, GL_TEXTURE_BINDING_CUBE_MAP,
    GL_TEXTURE_BINDING_1D_ARRAY, GL_TEXTURE_BINDING_2D_ARRAY, GL_TEXTURE_BINDING_RECTANGLE};
int gl_texture_target_index(GLenum target) {
  if (target >= GL_TEXTURE_CUBE_MAP_POSITIVE_X && target <= GL_TEXTURE_CUBE_MAP_NEGATIVE_Z) target = GL_TEXTURE_CUBE_MAP;
  for (int i = 0; i < TEXTURE_TARGETS; i++) if (g_targets[i] == target) return i;
  return -1;
}
GLenum gl_texture_target_at(int index) { return g_targets[index]; }
GLenum gl_texture_binding_query(int index) { return g_target_bindings[index]; }

// A texture by its name; the default textures (name 0) are one per target.
static struct texture* texture_named(GLuint name, GLenum target, int create) {
  for (size_t i = 0; i < g.ntextures; i++)
    if (g.textures[i].name == name && (name || g.textures[i].target == target)) return &g.textures[i];
  if (!create) return NULL;
  g.textures = grow(g.textures, &g.captextures, g.ntextures, sizeof *g.textures);
  struct texture* t = &g.textures[g.ntextures++];
  memset(t, 0, sizeof *t);
  t->name = name;
  if (!name) t->target = target;
  return t;
}
// The texture a call on `target` (a cube map's face included) changes: the active unit's.
static struct texture* texture_bound(GLenum target) {
  const int index = gl_texture_target_index(target);
  if (index < 0) return NULL;
  struct texture* t = texture_named(gl_core_bound_texture(g_targets[index]), g_targets[index], 1);
  t->target = g_targets[index];
  return t;
}

static void upsert(struct set* sets, size_t* n, size_t cap, enum gl_op op, const uint32_t* words, unsigned count,
                   unsigned keys) {
  GL_ASSERT(count <= GL_MAX_WORDS && keys <= count, "a GL call with too many words to record");
  for (size_t i = 0; i < *n; i++) {
    struct set* s = &sets[i];
    if (s->op == op && s->keys == keys && memcmp(s->words, words, 4 * (size_t)keys) == 0) {
      // Set again: it moves to the end, so that sets whose keys overlap (GL_FRONT and
      // GL_FRONT_AND_BACK) replay in the order they were last made.
      memmove(s, s + 1, (*n - i - 1) * sizeof *s);
      (*n)--;
      break;
    }
  }
  if (*n >= cap) { gl_unsupported("more texture parameters than recorded (16)"); return; }
  struct set* s = &sets[(*n)++];
  s->op = (uint16_t)op, s->count = (uint16_t)count, s->keys = (uint16_t)keys;
  memcpy(s->words, words, 4 * (size_t)count);
}

int gl_note_in_list(enum gl_op op, const uint32_t* words, unsigned count) {
  if (!g.compiling) return 0;
  append_call(&g.compiling->body, op, words, count);
  g.compiling->calls++;
  g.noted_bytes += 4 + 4 * (size_t)count;
  return g.compiling->mode == GL_COMPILE;
}

int gl_note(enum gl_op op, const uint32_t* words, unsigned count, unsigned keys) {
  if (gl_note_in_list(op, words, count)) return 1;
  gl_note_state(op, words, count, keys);
  return 0;
}

void gl_note_state(enum gl_op op, const uint32_t* words, unsigned count, unsigned keys) {
  g.noted_bytes += 4 + 4 * (size_t)count;
  if (op == OP_TEX_PARAMETER) {  // a texture object's own state: it goes with the texture
    struct texture* t = texture_bound(words[0]);
    if (!t) { gl_unsupported("glTexParameter of a texture target the plugin does not record"); return; }
    size_t n = t->nparams;
    upsert(t->params, &n, 16, op, words, count, keys);
    t->nparams = (unsigned)n;
    return;
  }
  if (op == OP_BIND_TEXTURE && words[1]) texture_named(words[1], words[0], 1)->target = words[0];  // its first binding
  if (g.nsets >= g.capsets) g.sets = grow(g.sets, &g.capsets, g.nsets, sizeof *g.sets);
  upsert(g.sets, &g.nsets, g.capsets, op, words, count, keys);
}

void gl_note_image(const uint32_t* words, const void* pixels, size_t bytes) {
  if (g.compiling) { gl_unsupported("glTexImage inside a display list"); return; }
  struct texture* t = texture_bound(words[0]);
  if (!t) { gl_unsupported("glTexImage of a texture target the plugin does not record"); return; }
  g.noted_bytes += bytes;
  // A level (of a cube map's face) loaded again supersedes its older image: the images are
  // rebuilt without it.
  struct bytes kept = {0};
  for (size_t at = 0; at < t->images.size;) {
    const struct call_head* h = (const struct call_head*)(t->images.data + at);
    const uint32_t* w = (const uint32_t*)(h + 1);
    const size_t size = sizeof *h + 4 * (size_t)h->count + w[h->count - 1];
    if (w[0] != words[0] || w[1] != words[1]) bytes_append(&kept, h, size);
    at += size;
  }
  bytes_free(&t->images);
  t->images = kept;
  uint32_t all[IMAGE_WORDS + 1];
  memcpy(all, words, 4 * (size_t)IMAGE_WORDS);
  all[IMAGE_WORDS] = (uint32_t)bytes;  // the last word: how many bytes of pixels follow
  append_call(&t->images, OP_TEX_IMAGE, all, IMAGE_WORDS + 1);
  if (bytes) bytes_append(&t->images, pixels, bytes);
}

void gl_note_delete_textures(GLsizei n, const GLuint* names) {
  for (GLsizei i = 0; i < n; i++) {
    struct texture* t = names[i] ? texture_named(names[i], 0, 0) : NULL;
    if (!t) continue;
    bytes_free(&t->images);
    *t = g.textures[--g.ntextures];
  }
}

static struct list* list_named(GLuint name, int create) {
  for (size_t i = 0; i < g.nlists; i++)
    if (g.lists[i].name == name) return &g.lists[i];
  if (!create) return NULL;
  g.lists = grow(g.lists, &g.caplists, g.nlists, sizeof *g.lists);
  struct list* l = &g.lists[g.nlists++];
  memset(l, 0, sizeof *l);
  l->name = name;
  return l;
}
void gl_note_gen_lists(GLuint first, GLsizei range) {
  for (GLsizei i = 0; i < range; i++) list_named(first + (GLuint)i, 1);  // named, even if never filled
}
void gl_note_new_list(GLuint name, GLenum mode) {
  struct list* l = list_named(name, 1);
  l->body.size = 0, l->calls = 0;  // compiled again: the older body is superseded
  l->mode = mode;
  g.compiling = l;
}
void gl_note_end_list(void) {
  if (g.compiling) g.compiling->mode = GL_COMPILE;  // replayed as compiled, never executed again
  g.compiling = NULL;
}
void gl_note_delete_lists(GLuint first, GLsizei range) {
  for (size_t i = 0; i < g.nlists;) {
    if (g.lists[i].name >= first && g.lists[i].name - first < (GLuint)range && &g.lists[i] != g.compiling) {
      bytes_free(&g.lists[i].body);
      g.lists[i] = g.lists[--g.nlists];
    } else {
      i++;
    }
  }
}
void gl_note_begin(int inside) { g.in_begin = inside; }

// --- matrices (column-major, as GL) ---
static int mode_index(GLenum mode) { return mode == GL_PROJECTION ? 1 : mode == GL_TEXTURE ? 2 : 0; }
// The stack the matrix calls change: GL_TEXTURE's is the active unit's (a unit past those tracked
// was refused by gl_matrix_op).
static int stack_index(void) {
  if (g.mode < 2) return g.mode;
  const unsigned unit = gl_core_active_unit();
  return unit < TEXTURE_MATRIX_UNITS ? 2 + (int)unit : 2;
}
static float* top(void) { const int s = stack_index(); return g.stacks[s][g.depth[s]]; }
static void multiply(const float* r) {  // top = top * r
  float* m = top();
  float out[16];
  for (int c = 0; c < 4; c++)
    for (int row = 0; row < 4; row++)
      out[c * 4 + row] = m[row] * r[c * 4] + m[4 + row] * r[c * 4 + 1] + m[8 + row] * r[c * 4 + 2] + m[12 + row] * r[c * 4 + 3];
  memcpy(m, out, 64);
}

int gl_matrix_mode(GLenum mode) {
  const uint32_t w[1] = {mode};
  if (gl_note_in_list(OP_MATRIX_MODE, w, 1)) return 1;
  if (mode != GL_MODELVIEW && mode != GL_PROJECTION && mode != GL_TEXTURE) gl_unsupported("glMatrixMode of a color matrix");
  g.mode = mode_index(mode);
  return 0;
}

int gl_matrix_op(enum gl_op op, const float* m16) {
  uint32_t w[16];
  unsigned count = 0;
  if (m16) { memcpy(w, m16, 64); count = 16; }
  if (gl_note_in_list(op, w, count)) return 1;
  if (g.mode == 2) {
    if (gl_core_active_unit() >= TEXTURE_MATRIX_UNITS) gl_unsupported("a texture matrix of a unit past the eighth");
    g.texture_units_used |= 1u << (stack_index() - 2);
  }
  const int s = stack_index();
  switch (op) {
    case OP_LOAD_IDENTITY: identity(top()); break;
    case OP_LOAD_MATRIX: memcpy(top(), m16, 64); break;
    case OP_MULT_MATRIX: multiply(m16); break;
    case OP_PUSH_MATRIX:
      if (g.depth[s] < 31) { memcpy(g.stacks[s][g.depth[s] + 1], top(), 64); g.depth[s]++; }
      break;
    case OP_POP_MATRIX: if (g.depth[s] > 0) g.depth[s]--; break;
    default: break;
  }
  return 0;
}

int gl_matrix_frustum(enum gl_op op, const double* v) {
  uint32_t w[12];
  memcpy(w, v, 48);
  if (gl_note_in_list(op, w, 12)) return 1;
  if (g.mode == 2) g.texture_units_used |= 1u << (stack_index() - 2);
  const double l = v[0], r = v[1], b = v[2], t = v[3], n = v[4], f = v[5];
  float m[16] = {0};
  if (op == OP_FRUSTUM) {
    m[0] = (float)(2 * n / (r - l)), m[5] = (float)(2 * n / (t - b));
    m[8] = (float)((r + l) / (r - l)), m[9] = (float)((t + b) / (t - b)), m[10] = (float)(-(f + n) / (f - n));
    m[11] = -1, m[14] = (float)(-2 * f * n / (f - n));
  } else {
    m[0] = (float)(2 / (r - l)), m[5] = (float)(2 / (t - b)), m[10] = (float)(-2 / (f - n));
    m[12] = (float)(-(r + l) / (r - l)), m[13] = (float)(-(t + b) / (t - b)), m[14] = (float)(-(f + n) / (f - n));
    m[15] = 1;
  }
  multiply(m);
  return 0;
}

int gl_matrix_transform(enum gl_op op, float angle, float x, float y, float z) {
  const uint32_t w[4] = {gl_fbits(angle), gl_fbits(x), gl_fbits(y), gl_fbits(z)};
  if (op == OP_ROTATE ? gl_note_in_list(op, w, 4) : gl_note_in_list(op, w + 1, 3)) return 1;
  if (g.mode == 2) g.texture_units_used |= 1u << (stack_index() - 2);
  float m[16];
  identity(m);
  if (op == OP_TRANSLATE) {
    m[12] = x, m[13] = y, m[14] = z;
  } else if (op == OP_SCALE) {
    m[0] = x, m[5] = y, m[10] = z;
  } else {
    const float length = sqrtf(x * x + y * y + z * z);
    if (length == 0) return 0;
    x /= length, y /= length, z /= length;
    const float a = angle * (float)M_PI / 180.0f, c = cosf(a), s = sinf(a), k = 1 - c;
    m[0] = x * x * k + c, m[1] = y * x * k + z * s, m[2] = x * z * k - y * s;
    m[4] = x * y * k - z * s, m[5] = y * y * k + c, m[6] = y * z * k + x * s;
    m[8] = x * z * k + y * s, m[9] = y * z * k - x * s, m[10] = z * z * k + c;
  }
  multiply(m);
  return 0;
}

void gl_modelview(float m16[16]) { memcpy(m16, g.stacks[0][g.depth[0]], 64); }

void gl_eye_vector(float v[4], int is_position) {
  const float* m = g.stacks[0][g.depth[0]];
  float out[4];
  for (int row = 0; row < 4; row++)
    out[row] = m[row] * v[0] + m[4 + row] * v[1] + m[8 + row] * v[2] + (is_position ? m[12 + row] * v[3] : 0);
  memcpy(v, out, is_position ? 16 : 12);
}

void gl_record_stats(struct gl_record_stats* out) {
  memset(out, 0, sizeof *out);
  out->lists = g.nlists;
  for (size_t i = 0; i < g.nlists; i++) out->list_calls += g.lists[i].calls, out->list_bytes += g.lists[i].body.size;
  out->sets = g.nsets;
  out->textures = g.ntextures;
  for (size_t i = 0; i < g.ntextures; i++) out->texture_bytes += g.textures[i].images.size;
  out->noted_bytes = g.noted_bytes;
}

// --- replay ---
static double word_double(const uint32_t* w) { double d; memcpy(&d, w, 8); return d; }
static void replay_call(enum gl_op op, const uint32_t* w, unsigned count) {
  const struct gl_real* r = &gl_real;
  float f[16];
  for (unsigned i = 0; i < count && i < 16; i++) f[i] = gl_bitsf(w[i]);
  switch (op) {
    case OP_ENABLE: (w[1] ? r->Enable : r->Disable)(w[0]); break;
    case OP_SHADE_MODEL: r->ShadeModel(w[0]); break;
    case OP_CULL_FACE: r->CullFace(w[0]); break;
    case OP_FRONT_FACE: r->FrontFace(w[0]); break;
    case OP_DEPTH_FUNC: r->DepthFunc(w[0]); break;
    case OP_DRAW_BUFFER: r->DrawBuffer(w[0]); break;
    case OP_BLEND_FUNC: r->BlendFunc(w[0], w[1]); break;
    case OP_HINT: r->Hint(w[0], w[1]); break;
    case OP_COLOR_MATERIAL: r->ColorMaterial(w[0], w[1]); break;
    case OP_CLEAR_COLOR: r->ClearColor(f[0], f[1], f[2], f[3]); break;
    case OP_CLEAR_DEPTH: r->ClearDepth(word_double(w)); break;
    case OP_VIEWPORT: r->Viewport((GLint)w[0], (GLint)w[1], (GLsizei)w[2], (GLsizei)w[3]); break;
    case OP_LIGHT: r->Lightfv(w[0], w[1], f + 2); break;
    case OP_LIGHT_MODEL: r->LightModelfv(w[0], f + 1); break;
    case OP_MATERIAL: r->Materialfv(w[0], w[1], f + 2); break;
    case OP_TEX_ENV: r->TexEnvf(w[0], w[1], f[2]); break;
    case OP_TEX_PARAMETER: r->TexParameterf(w[0], w[1], f[2]); break;
    case OP_BIND_TEXTURE: r->BindTexture(w[0], w[1]); break;
    case OP_PIXEL_STORE: r->PixelStorei(w[0], (GLint)w[1]); break;
    case OP_BEGIN: r->Begin(w[0]); break;
    case OP_END: r->End(); break;
    case OP_VERTEX2F: r->Vertex2f(f[0], f[1]); break;
    case OP_VERTEX3F: r->Vertex3f(f[0], f[1], f[2]); break;
    case OP_NORMAL3F: r->Normal3f(f[0], f[1], f[2]); break;
    case OP_COLOR3F: r->Color3f(f[0], f[1], f[2]); break;
    case OP_COLOR4F: r->Color4f(f[0], f[1], f[2], f[3]); break;
    case OP_TEXCOORD2F: r->TexCoord2f(f[0], f[1]); break;
    case OP_CALL_LIST: r->CallList(w[0]); break;
    case OP_MATRIX_MODE: r->MatrixMode(w[0]); break;
    case OP_LOAD_IDENTITY: r->LoadIdentity(); break;
    case OP_PUSH_MATRIX: r->PushMatrix(); break;
    case OP_POP_MATRIX: r->PopMatrix(); break;
    case OP_TRANSLATE: r->Translatef(f[0], f[1], f[2]); break;
    case OP_SCALE: r->Scalef(f[0], f[1], f[2]); break;
    case OP_ROTATE: r->Rotatef(f[0], f[1], f[2], f[3]); break;
    case OP_LOAD_MATRIX: r->LoadMatrixf(f); break;
    case OP_MULT_MATRIX: r->MultMatrixf(f); break;
    case OP_FRUSTUM: case OP_ORTHO: {
      double d[6];
      memcpy(d, w, 48);
      (op == OP_FRUSTUM ? r->Frustum : r->Ortho)(d[0], d[1], d[2], d[3], d[4], d[5]);
      break;
    }
    case OP_FOG: r->Fogfv(w[0], f + 1); break;
    case OP_TEX_GEN: r->TexGenfv(w[0], w[1], f + 2); break;
    case OP_TEX_IMAGE: {  // words: IMAGE_WORDS, then the pixels' size
      const uint8_t* pixels = w[count - 1] ? (const uint8_t*)(w + count) : NULL;
      const GLenum target = gl_texture_target_at(gl_texture_target_index(w[0]));
      r->PixelStorei(GL_UNPACK_ALIGNMENT, (GLint)w[9]);
      if (target == GL_TEXTURE_1D)
        r->TexImage1D(w[0], (GLint)w[1], (GLint)w[2], (GLsizei)w[3], (GLint)w[6], w[7], w[8], pixels);
      else if (target == GL_TEXTURE_3D || target == GL_TEXTURE_2D_ARRAY)
        CORE_REAL(void (*)(GLenum, GLint, GLint, GLsizei, GLsizei, GLsizei, GLint, GLenum, GLenum, const void*), TexImage3D)(
            w[0], (GLint)w[1], (GLint)w[2], (GLsizei)w[3], (GLsizei)w[4], (GLsizei)w[5], (GLint)w[6], w[7], w[8], pixels);
      else
        r->TexImage2D(w[0], (GLint)w[1], (GLint)w[2], (GLsizei)w[3], (GLsizei)w[4], (GLint)w[6], w[7], w[8], pixels);
      break;
    }
  }
}

static void replay_body(const struct bytes* b) {
  for (size_t at = 0; at < b->size;) {
    const struct call_head* h = (const struct call_head*)(b->data + at);
    const uint32_t* w = (const uint32_t*)(h + 1);
    replay_call((enum gl_op)h->op, w, h->count);
    at += sizeof *h + 4 * (size_t)h->count + (h->op == OP_TEX_IMAGE ? w[h->count - 1] : 0);
  }
}

// Into the new context, in an order that gives each call what it needs: the lists (compiled, so
// they change nothing now), the textures, the state sets (lights' positions were kept in eye
// space, so with an identity modelview), the matrix stacks, then a list still being compiled.
static void replay_matrices(void);
void gl_replay_all(int with_matrices) {
  const struct gl_real* r = &gl_real;
  for (size_t i = 0; i < g.nlists; i++) {
    if (&g.lists[i] == g.compiling) continue;
    r->NewList(g.lists[i].name, GL_COMPILE);
    replay_body(&g.lists[i].body);
    r->EndList();
  }
  for (size_t i = 0; i < g.ntextures; i++) {
    struct texture* t = &g.textures[i];
    if (!t->target) continue;  // named, never bound
    r->BindTexture(t->target, t->name);
    for (unsigned p = 0; p < t->nparams; p++) replay_call((enum gl_op)t->params[p].op, t->params[p].words, t->params[p].count);
    replay_body(&t->images);
  }
  for (size_t i = 0; i < g.ntextures; i++) if (g.textures[i].target) r->BindTexture(g.textures[i].target, 0);
  r->PixelStorei(GL_UNPACK_ALIGNMENT, 4);  // the default; a recorded PixelStore follows
  if (with_matrices) r->MatrixMode(GL_MODELVIEW), r->LoadIdentity();
  for (size_t i = 0; i < g.nsets; i++) replay_call((enum gl_op)g.sets[i].op, g.sets[i].words, g.sets[i].count);
  if (with_matrices) replay_matrices();
  if (g.compiling) {
    r->NewList(g.compiling->name, g.compiling->mode);
    replay_body(&g.compiling->body);
  }
}

// The matrix stacks: a texture unit's only where the program set it (unit 0's always, so that a
// context without multitexture needs no glActiveTexture).
static void replay_matrices(void) {
  const struct gl_real* r = &gl_real;
  static const GLenum modes[3] = {GL_MODELVIEW, GL_PROJECTION, GL_TEXTURE};
  void (*active)(GLenum) = NULL;
  for (int s = 0; s < 2 + TEXTURE_MATRIX_UNITS; s++) {
    if (s > 2 && !(g.texture_units_used & (1u << (s - 2)))) continue;
    if (s > 2) {
      if (!active) active = CORE_REAL(void (*)(GLenum), ActiveTexture);
      active(GL_TEXTURE0 + (GLenum)(s - 2));
    }
    r->MatrixMode(modes[s < 2 ? s : 2]);
    for (int level = 0; level <= g.depth[s]; level++) {
      if (level > 0) r->PushMatrix();
      r->LoadMatrixf(g.stacks[s][level]);
    }
  }
  if (active) active(GL_TEXTURE0 + gl_core_active_unit());
  r->MatrixMode(modes[g.mode]);
  gl_fixed_replay_units();  // per-unit enables, environments, texture generation
}

// At the checkpoint, in the GL thread: each recorded level's image as the GL holds it now, in the
// format and type it was given in (a level given as NULL, then rendered into, gets its pixels),
// whatever the target: a cube map face by face, a 3D texture or an array with all its layers.
const char* gl_read_back_textures(void) {
  static char why[128];
  void (*get_image)(GLenum, GLint, GLenum, GLenum, void*) =
      (void (*)(GLenum, GLint, GLenum, GLenum, void*))gl_find_real("glGetTexImage");
  void (*get_integer)(GLenum, GLint*) = (void (*)(GLenum, GLint*))gl_find_real("glGetIntegerv");
  void (*bind_buffer)(GLenum, GLuint) = (void (*)(GLenum, GLuint))gl_find_real("glBindBuffer");
  if (!g.ntextures) return NULL;
  if (!get_image || !get_integer) return "textures, without glGetTexImage to read them back";
  // Only the targets in use are asked and restored (an older context has no 2D arrays: asking
  // would leave a GL error for the program to find).
  GLint bound[TEXTURE_TARGETS] = {0}, alignment = 4, pack_buffer = 0;
  unsigned used = 0;
  for (size_t i = 0; i < g.ntextures; i++)
    if (g.textures[i].images.size) used |= 1u << gl_texture_target_index(g.textures[i].target);
  for (int k = 0; k < TEXTURE_TARGETS; k++) if (used & (1u << k)) get_integer(gl_texture_binding_query(k), &bound[k]);
  get_integer(GL_PACK_ALIGNMENT, &alignment);
  get_integer(GL_PIXEL_PACK_BUFFER_BINDING, &pack_buffer);
  if (pack_buffer && bind_buffer) bind_buffer(GL_PIXEL_PACK_BUFFER, 0);
  for (size_t i = 0; i < g.ntextures; i++) {
    struct texture* t = &g.textures[i];
    if (!t->images.size) continue;
    gl_real.BindTexture(t->target, t->name);
    struct bytes now = {0};
    for (size_t at = 0; at < t->images.size;) {
      const struct call_head* h = (const struct call_head*)(t->images.data + at);
      uint32_t w[GL_MAX_WORDS];
      memcpy(w, h + 1, 4 * (size_t)h->count);
      at += sizeof *h + 4 * (size_t)h->count + w[h->count - 1];
      const size_t bytes = gl_image_bytes((GLsizei)w[3], (GLsizei)(w[4] * w[5]), w[7], w[8], (GLint)w[9]);
      if (!bytes) {
        snprintf(why, sizeof why, "texture %u, whose format 0x%x and type 0x%x the plugin cannot read back", t->name, w[7], w[8]);
        bytes_free(&now);
        return why;
      }
      void* pixels = malloc(bytes);
      GL_ASSERT(pixels, "out of memory reading a texture back");
      gl_real.PixelStorei(GL_PACK_ALIGNMENT, (GLint)w[9]);
      get_image(w[0], (GLint)w[1], w[7], w[8], pixels);
      w[h->count - 1] = (uint32_t)bytes;
      append_call(&now, OP_TEX_IMAGE, w, h->count);
      bytes_append(&now, pixels, bytes);
      free(pixels);
    }
    bytes_free(&t->images);
    t->images = now;
  }
  gl_real.PixelStorei(GL_PACK_ALIGNMENT, alignment);
  for (int k = 0; k < TEXTURE_TARGETS; k++) if (used & (1u << k)) gl_real.BindTexture(gl_texture_target_at(k), (GLuint)bound[k]);
  if (pack_buffer && bind_buffer) bind_buffer(GL_PIXEL_PACK_BUFFER, (GLuint)pack_buffer);
  return NULL;
}

// At the checkpoint, in the GL thread of a compatibility context: every level of every tracked
// stack as the GL holds it. The products tracked on the CPU are the GL's up to rounding (the
// driver computes a rotation its own way), and a texture matrix turned a little every frame
// carries that difference on: the replay must load the GL's own bits. Each stack is popped level
// by level to read it, then pushed and loaded back with the very values read.
const char* gl_read_back_matrices(void) {
  static char why[128];
  void (*get_float)(GLenum, GLfloat*) = (void (*)(GLenum, GLfloat*))gl_find_real("glGetFloatv");
  void (*get_integer)(GLenum, GLint*) = (void (*)(GLenum, GLint*))gl_find_real("glGetIntegerv");
  if (!get_float || !get_integer) return "matrix stacks, without glGetFloatv to read them back";
  static const GLenum modes[3] = {GL_MODELVIEW, GL_PROJECTION, GL_TEXTURE};
  static const GLenum values[3] = {GL_MODELVIEW_MATRIX, GL_PROJECTION_MATRIX, GL_TEXTURE_MATRIX};
  static const GLenum depths[3] = {GL_MODELVIEW_STACK_DEPTH, GL_PROJECTION_STACK_DEPTH, GL_TEXTURE_STACK_DEPTH};
  GLint mode = GL_MODELVIEW, active_unit = GL_TEXTURE0;
  get_integer(GL_MATRIX_MODE, &mode);
  void (*active)(GLenum) = NULL;
  if (g.texture_units_used & ~1u) {
    active = CORE_REAL(void (*)(GLenum), ActiveTexture);
    get_integer(GL_ACTIVE_TEXTURE, &active_unit);
  }
  for (int s = 0; s < 2 + TEXTURE_MATRIX_UNITS; s++) {
    if (s > 2 && !(g.texture_units_used & (1u << (s - 2)))) continue;
    const int kind = s < 2 ? s : 2;
    if (s >= 2 && active) active(GL_TEXTURE0 + (GLenum)(s - 2));
    gl_real.MatrixMode(modes[kind]);
    GLint depth = 0;
    get_integer(depths[kind], &depth);
    if (depth != g.depth[s] + 1) {
      snprintf(why, sizeof why, "a matrix stack (mode 0x%x) %d deep where the record has %d", modes[kind], depth, g.depth[s] + 1);
      return why;
    }
    for (int level = g.depth[s]; level >= 0; level--) {
      get_float(values[kind], g.stacks[s][level]);
      if (level > 0) gl_real.PopMatrix();
    }
    for (int level = 1; level <= g.depth[s]; level++) gl_real.PushMatrix(), gl_real.LoadMatrixf(g.stacks[s][level]);
  }
  if (active) active((GLenum)active_unit);
  gl_real.MatrixMode((GLenum)mode);
  return NULL;
}

int gl_replay_blocked(void) { return g.in_begin; }
