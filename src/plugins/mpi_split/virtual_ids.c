/* Virtual MPI handles (virtual_ids.h). */
#include "virtual_ids.h"

#include "lower_tls.h"

#include <stddef.h>

int stasis_mpi_ids_init(StasisMpiIdTable *table, int kind, StasisMpiIdEntry *storage, uint32_t capacity,
                        uint32_t predefined_count) {
  if (capacity == 0 || capacity > STASIS_MPI_INDEX_LIMIT || predefined_count > capacity || kind <= 0 || kind > 0xff)
    return -1;
  table->kind = kind;
  table->capacity = capacity;
  table->predefined_count = predefined_count;
  table->live_count = 0;
  table->free_head = capacity;
  table->next_unused = predefined_count;
  table->entries = storage;
  for (uint32_t i = 0; i < predefined_count; i++) {
    StasisMpiIdEntry blank = {0, 1, capacity, 0, 0};
    storage[i] = blank;
  }
  return 0;
}

int stasis_mpi_ids_add(StasisMpiIdTable *table, StasisMpiRealHandle real, int *id) {
  uint32_t index;
  if (table->free_head < table->capacity) {
    /* Reuse the most recently freed index: ids stay small and the table stays dense. */
    index = table->free_head;
    table->free_head = table->entries[index].next_free;
  } else if (table->next_unused < table->capacity) {
    index = table->next_unused++;
  } else {
    return -1;
  }
  StasisMpiIdEntry made = {real, 1, table->capacity, 0, 0};
  table->entries[index] = made;
  table->live_count++;
  *id = STASIS_MPI_VID(table->kind, (int)index);
  return 0;
}

int stasis_mpi_ids_remove(StasisMpiIdTable *table, int id) {
  int64_t index = stasis_mpi_ids_index(table, id);
  if (index < (int64_t)table->predefined_count) return -1; /* not live, or predefined */
  StasisMpiIdEntry *entry = &table->entries[index];
  entry->live = 0;
  entry->real = 0;
  entry->next_free = table->free_head;
  table->free_head = (uint32_t)index;
  table->live_count--;
  return 0;
}

int stasis_mpi_ids_bind(StasisMpiIdTable *table, int id, StasisMpiRealHandle real) {
  int64_t index = stasis_mpi_ids_index(table, id);
  if (index < 0) return -1;
  table->entries[index].real = real;
  return 0;
}

StasisMpiIdTable *stasis_mpi_handles_table(StasisMpiHandles *handles, int kind) {
  switch (kind) {
    case STASIS_MPI_KIND_COMM: return &handles->comms;
    case STASIS_MPI_KIND_DATATYPE: return &handles->datatypes;
    case STASIS_MPI_KIND_OP: return &handles->ops;
    case STASIS_MPI_KIND_GROUP: return &handles->groups;
    case STASIS_MPI_KIND_REQUEST: return &handles->requests;
    default: return NULL;
  }
}

int stasis_mpi_handles_bind_predefined(StasisMpiHandles *handles, const StasisMpiLower *lower, int *failed_kind,
                                       int *failed_index) {
  for (int kind = STASIS_MPI_KIND_COMM; kind <= STASIS_MPI_KIND_REQUEST; kind++) {
    StasisMpiIdTable *table = stasis_mpi_handles_table(handles, kind);
    for (uint32_t index = 0; index < table->predefined_count; index++) {
      StasisMpiRealHandle real = LOWER_CALL(lower, predefined, kind, (int)index);
      /* A null handle may be 0 in a library (MPICH's are not, Open MPI's are pointers); every
       * object that is not a null handle must exist. */
      if (real == 0 && index != 0) {
        *failed_kind = kind;
        *failed_index = (int)index;
        return -1;
      }
      table->entries[index].real = real;
    }
  }
  return 0;
}
