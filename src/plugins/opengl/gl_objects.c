// Sampler and query objects of a recorded context (README.md, "Direct contexts: a fresh
// context"): their wrappers, their record, what the checkpoint reads back and their replay. Their
// names are gl_core.c's (KIND_SAMPLER, KIND_QUERY), regained in a fresh context with the others.
//
// Samplers: each one's parameters (the latest per parameter) and the sampler bound to each
// texture unit. Queries: which query is active per target (glBeginQuery..glEndQuery) and, at the
// checkpoint, the result of every ended query, which the program may not have read yet: from then
// until the query is begun again, glGetQueryObject* answers from the record, so the same answer
// comes before and after a restart (a fresh context has no result for it). A query active at the
// checkpoint is ended there, its count so far kept, and begun again (in the fresh context too):
// the result the program reads at last is that count added to the rest (ORed for the
// any-samples targets). Per-frame calls (begin, end, reading results, binding samplers) update a
// slot: no log entry.
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "gl_core.h"
#include "gl_plugin.h"
#include "gl_record.h"

#define GL_EXPORT __attribute__((visibility("default")))
enum { SAMPLER_UNITS = 32, SAMPLER_PARAMS = 16, QUERY_TARGETS = 6 };

struct sampler_param { GLenum pname; int is_float; unsigned count; uint32_t words[4]; };
struct sampler { GLuint name; struct sampler_param params[SAMPLER_PARAMS]; unsigned nparams; };
struct query { GLuint name; GLenum target; int ended, result_saved; GLuint64 result, partial; };

static const GLenum g_query_targets[QUERY_TARGETS] = {
    GL_SAMPLES_PASSED, GL_ANY_SAMPLES_PASSED, GL_ANY_SAMPLES_PASSED_CONSERVATIVE, GL_PRIMITIVES_GENERATED,
    GL_TRANSFORM_FEEDBACK_PRIMITIVES_WRITTEN, GL_TIME_ELAPSED};

static struct {
  struct sampler* samplers; size_t nsamplers;
  GLuint unit_sampler[SAMPLER_UNITS];
  struct query* queries; size_t nqueries;
  GLuint active[QUERY_TARGETS];  // the query begun per target, 0 where none
  size_t saved;                  // queries answered from the record
} o;

static int query_target_index(GLenum target) {
  for (int i = 0; i < QUERY_TARGETS; i++) if (g_query_targets[i] == target) return i;
  return -1;
}
static int is_boolean(GLenum target) { return target == GL_ANY_SAMPLES_PASSED || target == GL_ANY_SAMPLES_PASSED_CONSERVATIVE; }

// --- samplers (glGenSamplers and glDeleteSamplers: gl_core_wrappers.c, the names) ---
void gl_objects_delete_sampler(GLuint name) {
  struct sampler* s = FIND_OR_ADD(o.samplers, o.nsamplers, name, 0);
  if (s) *s = o.samplers[--o.nsamplers];
  for (int u = 0; u < SAMPLER_UNITS; u++) if (o.unit_sampler[u] == name) o.unit_sampler[u] = 0;
}
GL_EXPORT void glBindSampler(GLuint unit, GLuint sampler) {
  GL_ENTRY();
  if (gl_recording) {
    if (unit < SAMPLER_UNITS) o.unit_sampler[unit] = sampler;
    else gl_unsupported("a sampler bound to a texture unit past the 32nd");
  }
  CORE_REAL(void (*)(GLuint, GLuint), BindSampler)(unit, sampler);
}
static void note_sampler_param(GLuint name, GLenum pname, int is_float, const void* values) {
  struct sampler* s = FIND_OR_ADD(o.samplers, o.nsamplers, name, name != 0);
  if (!s) return;
  unsigned i = 0;
  while (i < s->nparams && s->params[i].pname != pname) i++;
  if (i == SAMPLER_PARAMS) { gl_unsupported("more sampler parameters than recorded (16)"); return; }
  if (i == s->nparams) s->nparams++;
  struct sampler_param* p = &s->params[i];
  p->pname = pname, p->is_float = is_float, p->count = pname == GL_TEXTURE_BORDER_COLOR ? 4 : 1;
  memcpy(p->words, values, 4 * (size_t)p->count);
}
GL_EXPORT void glSamplerParameteri(GLuint sampler, GLenum pname, GLint v) {
  GL_ENTRY();
  if (gl_recording) note_sampler_param(sampler, pname, 0, &v);
  CORE_REAL(void (*)(GLuint, GLenum, GLint), SamplerParameteri)(sampler, pname, v);
}
GL_EXPORT void glSamplerParameterf(GLuint sampler, GLenum pname, GLfloat v) {
  GL_ENTRY();
  if (gl_recording) note_sampler_param(sampler, pname, 1, &v);
  CORE_REAL(void (*)(GLuint, GLenum, GLfloat), SamplerParameterf)(sampler, pname, v);
}
GL_EXPORT void glSamplerParameteriv(GLuint sampler, GLenum pname, const GLint* v) {
  GL_ENTRY();
  if (gl_recording) note_sampler_param(sampler, pname, 0, v);
  CORE_REAL(void (*)(GLuint, GLenum, const GLint*), SamplerParameteriv)(sampler, pname, v);
}
GL_EXPORT void glSamplerParameterfv(GLuint sampler, GLenum pname, const GLfloat* v) {
  GL_ENTRY();
  if (gl_recording) note_sampler_param(sampler, pname, 1, v);
  CORE_REAL(void (*)(GLuint, GLenum, const GLfloat*), SamplerParameterfv)(sampler, pname, v);
}

// --- queries ---
// glGenQueries and glDeleteQueries: gl_core_wrappers.c (the names), which calls this for each one
// deleted.
void gl_objects_delete_query(GLuint name) {
  struct query* q = FIND_OR_ADD(o.queries, o.nqueries, name, 0);
  if (!q) return;
  for (int t = 0; t < QUERY_TARGETS; t++) if (o.active[t] == q->name) o.active[t] = 0;
  if (q->result_saved) o.saved--;
  *q = o.queries[--o.nqueries];
}
// A query begun again (or a timestamp taken again) has a new result: the record's is dropped.
static struct query* query_restarted(GLuint name, GLenum target) {
  struct query* q = FIND_OR_ADD(o.queries, o.nqueries, name, name != 0);
  if (!q) return NULL;
  if (q->result_saved) o.saved--;
  q->target = target, q->ended = 0, q->result_saved = 0, q->partial = 0;
  return q;
}
GL_EXPORT void glBeginQuery(GLenum target, GLuint name) {
  GL_ENTRY();
  if (gl_recording) {
    const int t = query_target_index(target);
    if (t < 0) gl_unsupported("a query of a target the plugin does not record");
    else if (query_restarted(name, target)) o.active[t] = name;
  }
  CORE_REAL(void (*)(GLenum, GLuint), BeginQuery)(target, name);
}
GL_EXPORT void glEndQuery(GLenum target) {
  GL_ENTRY();
  if (gl_recording) {
    const int t = query_target_index(target);
    struct query* q = t >= 0 && o.active[t] ? FIND_OR_ADD(o.queries, o.nqueries, o.active[t], 0) : NULL;
    if (q) q->ended = 1;
    if (t >= 0) o.active[t] = 0;
  }
  CORE_REAL(void (*)(GLenum), EndQuery)(target);
}
GL_EXPORT void glQueryCounter(GLuint name, GLenum target) {
  GL_ENTRY();
  if (gl_recording) {
    struct query* q = query_restarted(name, target);
    if (q) q->ended = 1;
  }
  CORE_REAL(void (*)(GLuint, GLenum), QueryCounter)(name, target);
}

// libGL's result of a query, waiting for it (GL 3.3's 64-bit form where there is one).
static GLuint64 real_result(GLuint name, GLenum pname) {
  static void (*get64)(GLuint, GLenum, GLuint64*);
  static int looked;
  if (!looked) get64 = (void (*)(GLuint, GLenum, GLuint64*))gl_core_find("glGetQueryObjectui64v"), looked = 1;
  if (get64) { GLuint64 v = 0; get64(name, pname, &v); return v; }
  GLuint v = 0;
  CORE_REAL(void (*)(GLuint, GLenum, GLuint*), GetQueryObjectuiv)(name, pname, &v);
  return v;
}
// The answer the program gets where the record has something to say: 1 and *value, else 0.
static int recorded_answer(GLuint name, GLenum pname, GLuint64* value) {
  if (!gl_recording || (!o.saved && !o.nqueries)) return 0;
  const struct query* q = FIND_OR_ADD(o.queries, o.nqueries, name, 0);
  if (!q) return 0;
  const int result = pname == GL_QUERY_RESULT || pname == GL_QUERY_RESULT_NO_WAIT;
  if (q->result_saved) {
    if (pname == GL_QUERY_RESULT_AVAILABLE) { *value = 1; return 1; }
    if (result) { *value = q->result; return 1; }
    return 0;
  }
  if (!q->partial || !result) return 0;
  if (pname == GL_QUERY_RESULT_NO_WAIT && !real_result(name, GL_QUERY_RESULT_AVAILABLE)) return -1;  // nothing written
  const GLuint64 rest = real_result(name, GL_QUERY_RESULT);
  *value = is_boolean(q->target) ? (rest || q->partial) : rest + q->partial;
  return 1;
}
#define GET_QUERY_OBJECT(suffix, type)                                                               \
  GL_EXPORT void glGetQueryObject##suffix(GLuint name, GLenum pname, type* params) {                 \
    GL_ENTRY();                                                                                      \
    GLuint64 value = 0;                                                                              \
    const int answered = recorded_answer(name, pname, &value);                                       \
    if (answered > 0) *params = (type)value;                                                         \
    else if (answered == 0) CORE_REAL(void (*)(GLuint, GLenum, type*), GetQueryObject##suffix)(name, pname, params); \
  }
GET_QUERY_OBJECT(iv, GLint)
GET_QUERY_OBJECT(uiv, GLuint)
GET_QUERY_OBJECT(i64v, GLint64)
GET_QUERY_OBJECT(ui64v, GLuint64)

// At the checkpoint, in the GL thread: the result of each ended query not yet saved; an active
// query's count so far (ended, counted, begun again).
const char* gl_objects_read_back(void) {
  for (size_t i = 0; i < o.nqueries; i++) {
    struct query* q = &o.queries[i];
    if (q->ended && !q->result_saved) q->result = real_result(q->name, GL_QUERY_RESULT), q->result_saved = 1, o.saved++;
  }
  for (int t = 0; t < QUERY_TARGETS; t++) {
    struct query* q = o.active[t] ? FIND_OR_ADD(o.queries, o.nqueries, o.active[t], 0) : NULL;
    if (!q) continue;
    CORE_REAL(void (*)(GLenum), EndQuery)(g_query_targets[t]);
    const GLuint64 so_far = real_result(q->name, GL_QUERY_RESULT);
    q->partial = is_boolean(q->target) ? (q->partial || so_far) : q->partial + so_far;
    CORE_REAL(void (*)(GLenum, GLuint), BeginQuery)(g_query_targets[t], q->name);
  }
  return NULL;
}

// Into the fresh context, its names regained: samplers with their parameters and units, then the
// active queries begun again (the last thing before the program's own calls).
void gl_objects_replay(void) {
  for (size_t i = 0; i < o.nsamplers; i++) {
    const struct sampler* s = &o.samplers[i];
    for (unsigned k = 0; k < s->nparams; k++) {
      const struct sampler_param* p = &s->params[k];
      if (p->is_float)
        CORE_REAL(void (*)(GLuint, GLenum, const GLfloat*), SamplerParameterfv)(s->name, p->pname, (const GLfloat*)p->words);
      else
        CORE_REAL(void (*)(GLuint, GLenum, const GLint*), SamplerParameteriv)(s->name, p->pname, (const GLint*)p->words);
    }
  }
  for (GLuint u = 0; u < SAMPLER_UNITS; u++)
    if (o.unit_sampler[u]) CORE_REAL(void (*)(GLuint, GLuint), BindSampler)(u, o.unit_sampler[u]);
  for (int t = 0; t < QUERY_TARGETS; t++)
    if (o.active[t]) CORE_REAL(void (*)(GLenum, GLuint), BeginQuery)(g_query_targets[t], o.active[t]);
}

void gl_objects_stats(struct gl_objects_stats* out) {
  out->samplers = o.nsamplers, out->queries = o.nqueries, out->carried_results = o.saved;
}

#define ENTRY(name) {"gl" #name, (void*)gl##name}
static const struct { const char* name; void* wrapper; } g_object_entries[] = {
    ENTRY(BindSampler), ENTRY(SamplerParameteri), ENTRY(SamplerParameterf), ENTRY(SamplerParameteriv),
    ENTRY(SamplerParameterfv), ENTRY(BeginQuery), ENTRY(EndQuery), ENTRY(QueryCounter), ENTRY(GetQueryObjectiv),
    ENTRY(GetQueryObjectuiv), ENTRY(GetQueryObjecti64v), ENTRY(GetQueryObjectui64v),
};
void* gl_objects_wrapper_named(const char* name) {
  for (size_t i = 0; i < sizeof g_object_entries / sizeof g_object_entries[0]; i++)
    if (strcmp(g_object_entries[i].name, name) == 0) return g_object_entries[i].wrapper;
  return NULL;
}
