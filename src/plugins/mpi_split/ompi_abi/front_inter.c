/* The Open MPI ABI front's intercommunicators (../upper_intercomm.c) and matched probes
 * (../upper_mprobe.c): Open MPI's signatures
 * forwarding to the split layer, as front.c does, through a table of their own (resolved as
 * handles.c resolves ompi_abi_split), kept apart for clean merges.
 *
 * This file must not include abi/mpi.h: its MPI_* take Stasis's int handles. */

#include "../abi/stasis_mpi_predefined.h"
#include "ompi_abi.h"

typedef OmpiAbiHandle MPI_Handle;

#define EXPORTED __attribute__((visibility("default")))
#define FORWARDED(name) extern __typeof__(name) P##name EXPORTED __attribute__((alias(#name)));

static struct {
  int (*Intercomm_create)(int, int, int, int, int, int *);
  int (*Intercomm_merge)(int, int, int *);
  int (*Comm_test_inter)(int, int *);
  int (*Comm_remote_size)(int, int *);
  int (*Comm_remote_group)(int, int *);
  int (*Mprobe)(int, int, int, int *, MPI_Status *);
  int (*Improbe)(int, int, int, int *, int *, MPI_Status *);
  int (*Mrecv)(void *, int, int, int *, MPI_Status *);
  int (*Imrecv)(void *, int, int, int *, int *);
} split;

#define RESOLVE(name) OMPI_ABI_RESOLVE(split, name)

__attribute__((constructor)) static void resolve_intercomms(void) {
  RESOLVE(Intercomm_create); RESOLVE(Intercomm_merge); RESOLVE(Comm_test_inter); RESOLVE(Comm_remote_size);
  RESOLVE(Comm_remote_group); RESOLVE(Mprobe); RESOLVE(Improbe); RESOLVE(Mrecv); RESOLVE(Imrecv);
}

/* Open MPI's MPI_MESSAGE_NULL and MPI_MESSAGE_NO_PROC (handles.c defines them, predefined.def;
 * taken through the GOT, as the other predefined objects are) and the handles of matched
 * messages: one slot per slot of the split layer's table, its message id written into it. */
extern char ompi_message_null[], ompi_message_no_proc[];
static OmpiAbiObject message_slots[STASIS_MPI_MESSAGE_SLOTS];

static MPI_Handle message_handle(const char *function, int id) {
  uint32_t slot = (uint32_t)id & 0xffffu;
  if (((uint32_t)id & 0xffff0000u) != (uint32_t)STASIS_MPI_MESSAGE_TAG || slot >= STASIS_MPI_MESSAGE_SLOTS)
    ompi_abi_fatal(function, "the split layer handed out a message id the front has no place for");
  if (slot == 0) return (MPI_Handle)(void *)ompi_message_null;
  if (slot == 1) return (MPI_Handle)(void *)ompi_message_no_proc;
  OmpiAbiObject object = {OMPI_ABI_MAGIC, id, "a matched message"};
  message_slots[slot] = object;
  return &message_slots[slot];
}

static int message_id(const char *function, MPI_Handle handle) {
  if ((void *)handle == (void *)ompi_message_null) return STASIS_MPI_MESSAGE_TAG;
  if ((void *)handle == (void *)ompi_message_no_proc) return STASIS_MPI_MESSAGE_TAG | 1;
  if (handle < &message_slots[2] || handle >= &message_slots[STASIS_MPI_MESSAGE_SLOTS] ||
      handle->magic != OMPI_ABI_MAGIC)
    ompi_abi_fatal(function, "a message handle the front did not give out");
  return handle->vid;
}

EXPORTED int MPI_Intercomm_create(MPI_Handle local_comm, int local_leader, MPI_Handle peer_comm, int remote_leader,
                                  int tag, MPI_Handle *newintercomm) {
  MAKES(newintercomm,
        split.Intercomm_create(VID(local_comm), local_leader, VID(peer_comm), remote_leader, tag, &made));
}
FORWARDED(MPI_Intercomm_create)
EXPORTED int MPI_Intercomm_merge(MPI_Handle intercomm, int high, MPI_Handle *newintracomm) {
  MAKES(newintracomm, split.Intercomm_merge(VID(intercomm), high, &made));
}
FORWARDED(MPI_Intercomm_merge)
EXPORTED int MPI_Comm_test_inter(MPI_Handle comm, int *flag) { return CLASS(split.Comm_test_inter(VID(comm), flag)); }
FORWARDED(MPI_Comm_test_inter)
EXPORTED int MPI_Comm_remote_size(MPI_Handle comm, int *size) { return CLASS(split.Comm_remote_size(VID(comm), size)); }
FORWARDED(MPI_Comm_remote_size)
EXPORTED int MPI_Comm_remote_group(MPI_Handle comm, MPI_Handle *group) {
  MAKES(group, split.Comm_remote_group(VID(comm), &made));
}
FORWARDED(MPI_Comm_remote_group)

EXPORTED int MPI_Mprobe(int source, int tag, MPI_Handle comm, MPI_Handle *message, MPI_Status *status) {
  int id = STASIS_MPI_MESSAGE_TAG;
  int rc = CLASS(STATUSES_FILLED(status, 1, split.Mprobe(source, tag, VID(comm), &id, status)));
  if (rc == OMPI_ABI_SUCCESS) *message = message_handle(__func__, id);
  return rc;
}
FORWARDED(MPI_Mprobe)
EXPORTED int MPI_Improbe(int source, int tag, MPI_Handle comm, int *flag, MPI_Handle *message, MPI_Status *status) {
  int id = STASIS_MPI_MESSAGE_TAG;
  int rc = CLASS(STATUSES_FILLED(status, *flag ? 1 : 0, split.Improbe(source, tag, VID(comm), flag, &id, status)));
  if (rc == OMPI_ABI_SUCCESS && *flag) *message = message_handle(__func__, id);
  return rc;
}
FORWARDED(MPI_Improbe)
EXPORTED int MPI_Mrecv(void *buf, int count, MPI_Handle datatype, MPI_Handle *message, MPI_Status *status) {
  int id = message_id(__func__, *message);
  int rc = CLASS(STATUSES_FILLED(status, 1, split.Mrecv(buf, count, VID(datatype), &id, status)));
  *message = message_handle(__func__, id);
  return rc;
}
FORWARDED(MPI_Mrecv)
EXPORTED int MPI_Imrecv(void *buf, int count, MPI_Handle datatype, MPI_Handle *message, MPI_Handle *request) {
  int id = message_id(__func__, *message);
  int made = 0;
  int rc = CLASS(split.Imrecv(buf, count, VID(datatype), &id, &made));
  *message = message_handle(__func__, id);
  if (rc == OMPI_ABI_SUCCESS) *request = HANDLE(made);
  return rc;
}
FORWARDED(MPI_Imrecv)
