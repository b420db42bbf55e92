/* Virtual MPI handles: the ids the upper half's program holds (abi/mpi.h), each mapped to the
 * library's real handle of the current lower half. A restart keeps every id and only rebinds
 * the real handles (replay_log.h), so the program never sees a library's handle.
 *
 * One table per kind, in memory the caller gives (static storage of the upper half, so it is
 * saved with the program). Lookups are O(1) and take no lock: the split mode supports
 * MPI_THREAD_SERIALIZED at most (README.md). Nothing here allocates or prints. */
#ifndef STASIS_MPI_VIRTUAL_IDS_H
#define STASIS_MPI_VIRTUAL_IDS_H

#include <stdint.h>

#include "abi/mpi.h"
#include "lower_half_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct StasisMpiIdEntry {
  StasisMpiRealHandle real;
  uint32_t live;
  uint32_t next_free;    /* free list link (index), when not live */
  uint32_t replay_epoch; /* the replay that last bound it (replay_log.c checks every live id was) */
  uint32_t reserved;
} StasisMpiIdEntry;

typedef struct StasisMpiIdTable {
  int kind;                   /* enum StasisMpiKind */
  uint32_t capacity;          /* at most 65536: the index has 16 bits in an id */
  uint32_t predefined_count;  /* indices [0, predefined_count) are the predefined objects */
  uint32_t live_count;        /* made by the program, predefined ones not counted */
  uint32_t free_head;         /* first free index, capacity when none */
  uint32_t next_unused;       /* indices from here on were never used */
  StasisMpiIdEntry *entries;
} StasisMpiIdTable;

#define STASIS_MPI_INDEX_BITS 16
#define STASIS_MPI_INDEX_LIMIT (1u << STASIS_MPI_INDEX_BITS)

/* Empties `table` over `storage` (capacity entries); the predefined ones are live, bound to 0
 * until stasis_mpi_ids_bind. Returns -1 when capacity is 0, over the limit, or below
 * predefined_count. */
int stasis_mpi_ids_init(StasisMpiIdTable *table, int kind, StasisMpiIdEntry *storage, uint32_t capacity,
                        uint32_t predefined_count);

/* Gives out a new id bound to `real`; -1 when the table is full. */
int stasis_mpi_ids_add(StasisMpiIdTable *table, StasisMpiRealHandle real, int *id);

/* Forgets a made id (never a predefined one); -1 when `id` is not a live made id of this kind. */
int stasis_mpi_ids_remove(StasisMpiIdTable *table, int id);

/* Rebinds a live id (predefined or made) to `real`; -1 when `id` is not live in this table. */
int stasis_mpi_ids_bind(StasisMpiIdTable *table, int id, StasisMpiRealHandle real);

/* The index of `id` in `table` when it is a live id of this kind, else -1. */
static inline int64_t stasis_mpi_ids_index(const StasisMpiIdTable *table, int id) {
  uint32_t bits = (uint32_t)id;
  uint32_t index = bits & (STASIS_MPI_INDEX_LIMIT - 1);
  if ((bits & 0xff000000u) != (uint32_t)STASIS_MPI_VID_TAG || ((bits >> 16) & 0xffu) != (uint32_t)table->kind ||
      index >= table->next_unused || !table->entries[index].live)
    return -1;
  return index;
}

/* The real handle of a live id: 0 and *real set, or -1 (not an id of this kind, or not live). */
static inline int stasis_mpi_ids_real(const StasisMpiIdTable *table, int id, StasisMpiRealHandle *real) {
  int64_t index = stasis_mpi_ids_index(table, id);
  if (index < 0) return -1;
  *real = table->entries[index].real;
  return 0;
}

/* Every kind's table of one process. */
typedef struct StasisMpiHandles {
  StasisMpiIdTable comms, datatypes, ops, groups, requests;
} StasisMpiHandles;

/* The table of `kind` in `handles`, or 0 for an unknown kind. */
StasisMpiIdTable *stasis_mpi_handles_table(StasisMpiHandles *handles, int kind);

/* Binds every predefined id of every kind to the lower half's object; -1 (and the kind and index
 * in *failed_kind, *failed_index) when the lower half has none for one of them. */
int stasis_mpi_handles_bind_predefined(StasisMpiHandles *handles, const StasisMpiLower *lower, int *failed_kind,
                                       int *failed_index);

#ifdef __cplusplus
}
#endif
#endif
