// The pruned log of one GL context (README.md, "What is recorded"): display lists' bodies, the
// latest of each state set, texture objects with their images, and the matrix stacks. Runs in the
// program's threads, inside the GL calls (never on the checkpoint path): its memory is ordinary
// heap, saved with the process.
#include "gl_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  GLuint bound_2d;  // the texture GL_TEXTURE_2D's parameters and images go to
  float stacks[3][32][16];
  int depth[3], mode;
  int in_begin;
  size_t noted_bytes;  // everything ever noted, for the pruning figure
} g;

static void identity(float* m) { memset(m, 0, 64); m[0] = m[5] = m[10] = m[15] = 1; }

void gl_record_reset(void) {
  for (size_t i = 0; i < g.nlists; i++) bytes_free(&g.lists[i].body);
  for (size_t i = 0; i < g.ntextures; i++) bytes_free(&g.textures[i].images);
  free(g.lists), free(g.sets), free(g.textures);
  memset(&g, 0, sizeof g);
  for (int m = 0; m < 3; m++) identity(g.stacks[m][0]);
}
__attribute__((constructor)) static void gl_record_init(void) { gl_record_reset(); }

static void* grow(void* array, size_t* cap, size_t count, size_t element) {
  if (count < *cap) return array;
  *cap = *cap ? *cap * 2 : 16;
  void* grown = realloc(array, *cap * element);
  GL_ASSERT(grown != NULL, "out of memory for the GL log");
  return grown;
}

static struct texture* texture_named(GLuint name, int create) {
  for (size_t i = 0; i < g.ntextures; i++)
    if (g.textures[i].name == name) return &g.textures[i];
  if (!create) return NULL;
  g.textures = grow(g.textures, &g.captextures, g.ntextures, sizeof *g.textures);
  struct texture* t = &g.textures[g.ntextures++];
  memset(t, 0, sizeof *t);
  t->name = name;
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
    struct texture* t = texture_named(g.bound_2d, 1);
    t->target = words[0];
    size_t n = t->nparams;
    upsert(t->params, &n, 16, op, words, count, keys);
    t->nparams = (unsigned)n;
    return;
  }
  if (op == OP_BIND_TEXTURE && words[0] == GL_TEXTURE_2D) {
    g.bound_2d = words[1];
    if (words[1]) texture_named(words[1], 1)->target = GL_TEXTURE_2D;
  }
  if (g.nsets >= g.capsets) g.sets = grow(g.sets, &g.capsets, g.nsets, sizeof *g.sets);
  upsert(g.sets, &g.nsets, g.capsets, op, words, count, keys);
}

void gl_note_image(const uint32_t* words, unsigned count, const void* pixels, size_t bytes) {
  if (g.compiling) { gl_unsupported("glTexImage2D inside a display list"); return; }
  g.noted_bytes += bytes;
  struct texture* t = texture_named(g.bound_2d, 1);
  t->target = GL_TEXTURE_2D;
  // A level loaded again supersedes its older image: the images are rebuilt without it.
  struct bytes kept = {0};
  for (size_t at = 0; at < t->images.size;) {
    const struct call_head* h = (const struct call_head*)(t->images.data + at);
    const uint32_t* w = (const uint32_t*)(h + 1);
    const size_t size = sizeof *h + 4 * (size_t)h->count + w[h->count - 1];
    if (w[1] != words[1]) bytes_append(&kept, h, size);
    at += size;
  }
  bytes_free(&t->images);
  t->images = kept;
  uint32_t all[GL_MAX_WORDS];
  memcpy(all, words, 4 * (size_t)count);
  all[count] = (uint32_t)bytes;  // the last word: how many bytes of pixels follow
  append_call(&t->images, OP_TEX_IMAGE_2D, all, count + 1);
  if (bytes) bytes_append(&t->images, pixels, bytes);
}

void gl_note_delete_textures(GLsizei n, const GLuint* names) {
  for (GLsizei i = 0; i < n; i++) {
    struct texture* t = texture_named(names[i], 0);
    if (!t) continue;
    bytes_free(&t->images);
    *t = g.textures[--g.ntextures];
    if (g.bound_2d == names[i]) g.bound_2d = 0;
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
static float* top(void) { return g.stacks[g.mode][g.depth[g.mode]]; }
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
  switch (op) {
    case OP_LOAD_IDENTITY: identity(top()); break;
    case OP_LOAD_MATRIX: memcpy(top(), m16, 64); break;
    case OP_MULT_MATRIX: multiply(m16); break;
    case OP_PUSH_MATRIX:
      if (g.depth[g.mode] < 31) { memcpy(g.stacks[g.mode][g.depth[g.mode] + 1], top(), 64); g.depth[g.mode]++; }
      break;
    case OP_POP_MATRIX: if (g.depth[g.mode] > 0) g.depth[g.mode]--; break;
    default: break;
  }
  return 0;
}

int gl_matrix_frustum(enum gl_op op, const double* v) {
  uint32_t w[12];
  memcpy(w, v, 48);
  if (gl_note_in_list(op, w, 12)) return 1;
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
    case OP_TEX_IMAGE_2D: {
      const uint8_t* pixels = w[count - 1] ? (const uint8_t*)(w + count) : NULL;
      r->PixelStorei(GL_UNPACK_ALIGNMENT, (GLint)w[8]);
      r->TexImage2D(w[0], (GLint)w[1], (GLint)w[2], (GLsizei)w[3], (GLsizei)w[4], (GLint)w[5], w[6], w[7], pixels);
      break;
    }
  }
}

static void replay_body(const struct bytes* b) {
  for (size_t at = 0; at < b->size;) {
    const struct call_head* h = (const struct call_head*)(b->data + at);
    const uint32_t* w = (const uint32_t*)(h + 1);
    replay_call((enum gl_op)h->op, w, h->count);
    at += sizeof *h + 4 * (size_t)h->count + (h->op == OP_TEX_IMAGE_2D ? w[h->count - 1] : 0);
  }
}

// Into the new context, in an order that gives each call what it needs: the lists (compiled, so
// they change nothing now), the textures, the state sets (lights' positions were kept in eye
// space, so with an identity modelview), the matrix stacks, then a list still being compiled.
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
  r->BindTexture(GL_TEXTURE_2D, 0);
  r->PixelStorei(GL_UNPACK_ALIGNMENT, 4);  // the default; a recorded PixelStore follows
  if (with_matrices) r->MatrixMode(GL_MODELVIEW), r->LoadIdentity();
  for (size_t i = 0; i < g.nsets; i++) replay_call((enum gl_op)g.sets[i].op, g.sets[i].words, g.sets[i].count);
  static const GLenum modes[3] = {GL_MODELVIEW, GL_PROJECTION, GL_TEXTURE};
  for (int m = 0; m < 3 && with_matrices; m++) {
    r->MatrixMode(modes[m]);
    for (int level = 0; level <= g.depth[m]; level++) {
      if (level > 0) r->PushMatrix();
      r->LoadMatrixf(g.stacks[m][level]);
    }
  }
  if (with_matrices) r->MatrixMode(modes[g.mode]);
  if (g.compiling) {
    r->NewList(g.compiling->name, g.compiling->mode);
    replay_body(&g.compiling->body);
  }
}

// At the checkpoint, in the GL thread: each recorded level's image as the GL holds it now, in the
// format and type it was given in (a level given as NULL, then rendered into, gets its pixels).
const char* gl_read_back_textures(void) {
  static char why[128];
  void (*get_image)(GLenum, GLint, GLenum, GLenum, void*) =
      (void (*)(GLenum, GLint, GLenum, GLenum, void*))gl_find_real("glGetTexImage");
  void (*get_integer)(GLenum, GLint*) = (void (*)(GLenum, GLint*))gl_find_real("glGetIntegerv");
  void (*bind_buffer)(GLenum, GLuint) = (void (*)(GLenum, GLuint))gl_find_real("glBindBuffer");
  if (!g.ntextures) return NULL;
  if (!get_image || !get_integer) return "textures, without glGetTexImage to read them back";
  GLint bound = 0, alignment = 4, pack_buffer = 0;
  get_integer(GL_TEXTURE_BINDING_2D, &bound);
  get_integer(GL_PACK_ALIGNMENT, &alignment);
  get_integer(GL_PIXEL_PACK_BUFFER_BINDING, &pack_buffer);
  if (pack_buffer && bind_buffer) bind_buffer(GL_PIXEL_PACK_BUFFER, 0);
  for (size_t i = 0; i < g.ntextures; i++) {
    struct texture* t = &g.textures[i];
    if (!t->images.size) continue;
    gl_real.BindTexture(GL_TEXTURE_2D, t->name);
    struct bytes now = {0};
    for (size_t at = 0; at < t->images.size;) {
      const struct call_head* h = (const struct call_head*)(t->images.data + at);
      uint32_t w[GL_MAX_WORDS];
      memcpy(w, h + 1, 4 * (size_t)h->count);
      at += sizeof *h + 4 * (size_t)h->count + w[h->count - 1];
      const size_t bytes = gl_image_bytes((GLsizei)w[3], (GLsizei)w[4], w[6], w[7], (GLint)w[8]);
      if (!bytes) {
        snprintf(why, sizeof why, "texture %u, whose format 0x%x and type 0x%x the plugin cannot read back", t->name, w[6], w[7]);
        bytes_free(&now);
        return why;
      }
      void* pixels = malloc(bytes);
      GL_ASSERT(pixels, "out of memory reading a texture back");
      gl_real.PixelStorei(GL_PACK_ALIGNMENT, (GLint)w[8]);
      get_image(w[0], (GLint)w[1], w[6], w[7], pixels);
      w[h->count - 1] = (uint32_t)bytes;
      append_call(&now, OP_TEX_IMAGE_2D, w, h->count);
      bytes_append(&now, pixels, bytes);
      free(pixels);
    }
    bytes_free(&t->images);
    t->images = now;
  }
  gl_real.PixelStorei(GL_PACK_ALIGNMENT, alignment);
  gl_real.BindTexture(GL_TEXTURE_2D, (GLuint)bound);
  if (pack_buffer && bind_buffer) bind_buffer(GL_PIXEL_PACK_BUFFER, (GLuint)pack_buffer);
  return NULL;
}

int gl_replay_blocked(void) { return g.in_begin; }
