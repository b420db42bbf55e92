/* Info objects (part "mpinfo" of issue 17; README.md). An info object lives in the upper half
 * alone: its keys and values are static storage of libstasis_mpi.so, saved with the program and
 * the same after a restart under any library, with nothing to make again in a fresh lower half.
 * The calls that take an info (MPI_Win_create, MPI_Alloc_mem, ...) accept one and pass none on:
 * hints only, which a library may ignore. Ids are virtual ids of their own kind; MPI_INFO_ENV is
 * an empty, predefined object. No allocation: the table is fixed (INFO_CAPACITY objects of
 * INFO_KEYS pairs each), and a full one fails the call naming it. */
#include <string.h>

#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

enum { INFO_KEYS = 16 };
typedef struct InfoPair {
  char key[MPI_MAX_INFO_KEY + 1];
  char value[MPI_MAX_INFO_VAL + 1];
} InfoPair;
typedef struct InfoObject {
  int count;
  InfoPair pairs[INFO_KEYS];
} InfoObject;

static StasisMpiIdEntry info_entries[INFO_CAPACITY];
static StasisMpiIdTable infos;
static InfoObject info_objects[INFO_CAPACITY];

/* In a safe region: MPI_THREAD_MULTIPLE's threads take turns there. */
static void infos_ready(void) {
  if (!infos.entries)
    stasis_mpi_ids_init(&infos, STASIS_MPI_KIND_INFO, info_entries, INFO_CAPACITY, STASIS_MPI_PREDEFINED_INFO_COUNT);
}

/* The object of a live info id; NULL for MPI_INFO_NULL or another value. `writable`: not a
 * predefined one (MPI_INFO_ENV may be read, never changed). */
static InfoObject *info_object(MPI_Info info, int writable) {
  infos_ready();
  int64_t index = stasis_mpi_ids_index(&infos, info);
  if (index <= STASIS_MPI_INDEX_INFO_NULL || (writable && index < (int64_t)infos.predefined_count)) return NULL;
  return &info_objects[index];
}

static int find_key(const InfoObject *object, const char *key) {
  for (int i = 0; i < object->count; i++)
    if (strcmp(object->pairs[i].key, key) == 0) return i;
  return -1;
}

/* Runs `body` (which sets rc) on the object of `info` in a safe region; MPI_ERR_INFO when it is
 * not a live info (writable: one the program made). */
#define WITH_INFO(name, info, writable, ...)                                   \
  do {                                                                         \
    stasis_mpi_safe_point_enter(name);                                         \
    InfoObject *object = info_object(info, writable);                          \
    int rc = MPI_SUCCESS;                                                      \
    if (!object) rc = not_live(name, "info object", info, MPI_ERR_INFO);       \
    else { __VA_ARGS__; }                                                      \
    stasis_mpi_safe_point_leave();                                             \
    return rc;                                                                 \
  } while (0)

static int made_info(const char *name, const InfoObject *from, MPI_Info *made) {
  int id = 0, rc = MPI_SUCCESS;
  if (stasis_mpi_ids_add(&infos, 0, &id) != 0) {
    complain(name, "too many live info objects for the split layer's table (64)");
    rc = MPI_ERR_INTERN;
  } else {
    info_objects[stasis_mpi_ids_index(&infos, id)] = from ? *from : (InfoObject){0};
    *made = id;
  }
  return rc;
}

API int MPI_Info_create(MPI_Info *info) {
  if (!info) return MPI_ERR_ARG;
  stasis_mpi_safe_point_enter("MPI_Info_create");
  infos_ready();
  int rc = made_info("MPI_Info_create", NULL, info);
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo) {
  if (!newinfo) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_dup", info, 0, rc = made_info("MPI_Info_dup", object, newinfo));
}

API int MPI_Info_free(MPI_Info *info) {
  if (!info) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_free", *info, 1, {
    stasis_mpi_ids_remove(&infos, *info);
    *info = MPI_INFO_NULL;
  });
}

API int MPI_Info_set(MPI_Info info, const char *key, const char *value) {
  if (!key || !value) return MPI_ERR_ARG;
  size_t key_length = strlen(key), value_length = strlen(value);
  if (key_length == 0 || key_length > MPI_MAX_INFO_KEY) return MPI_ERR_INFO_KEY;
  if (value_length == 0 || value_length > MPI_MAX_INFO_VAL) return MPI_ERR_INFO_VALUE;
  WITH_INFO("MPI_Info_set", info, 1, {
    int at = find_key(object, key);
    if (at < 0 && object->count == INFO_KEYS) {
      complain("MPI_Info_set", "more keys in one info object than the split layer holds (16)");
      rc = MPI_ERR_INTERN;
    } else {
      if (at < 0) {
        at = object->count++;
        memcpy(object->pairs[at].key, key, key_length + 1);
      }
      memcpy(object->pairs[at].value, value, value_length + 1);
    }
  });
}

API int MPI_Info_delete(MPI_Info info, const char *key) {
  if (!key) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_delete", info, 1, {
    int at = find_key(object, key);
    if (at < 0) {
      rc = MPI_ERR_INFO_NOKEY;
    } else {
      /* Later keys move down: MPI_Info_get_nthkey keeps the order they were set in. */
      memmove(&object->pairs[at], &object->pairs[at + 1], (size_t)(object->count - at - 1) * sizeof object->pairs[0]);
      object->count--;
    }
  });
}

API int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag) {
  if (!key || !value || !flag || valuelen < 0) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_get", info, 0, {
    int at = find_key(object, key);
    *flag = at >= 0;
    if (at >= 0) { /* at most valuelen characters and the terminating null */
      size_t length = strlen(object->pairs[at].value);
      if (length > (size_t)valuelen) length = (size_t)valuelen;
      memcpy(value, object->pairs[at].value, length);
      value[length] = '\0';
    }
  });
}

API int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag) {
  if (!key || !valuelen || !flag) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_get_valuelen", info, 0, {
    int at = find_key(object, key);
    *flag = at >= 0;
    if (at >= 0) *valuelen = (int)strlen(object->pairs[at].value);
  });
}

API int MPI_Info_get_nkeys(MPI_Info info, int *nkeys) {
  if (!nkeys) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_get_nkeys", info, 0, *nkeys = object->count);
}

API int MPI_Info_get_nthkey(MPI_Info info, int n, char *key) {
  if (!key) return MPI_ERR_ARG;
  WITH_INFO("MPI_Info_get_nthkey", info, 0, {
    if (n < 0 || n >= object->count) rc = MPI_ERR_ARG;
    else memcpy(key, object->pairs[n].key, strlen(object->pairs[n].key) + 1);
  });
}
