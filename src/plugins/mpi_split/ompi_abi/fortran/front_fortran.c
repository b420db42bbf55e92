/* The Fortran front (README.md): libmpi_mpifh.so.40's bindings, as programs compiled with Open
 * MPI's mpif.h or `use mpi` call them (mpi_send_, every argument by reference, the error code
 * last), forwarding straight to the split layer (libstasis_mpi.so). A Fortran handle is an int
 * (fortran_handles.h): Open MPI's number for a predefined object, the virtual id for a made one,
 * so no Open MPI internals (ompi_attr_*, f2c tables, ompi_mpi_state) are needed. Every binding
 * carries Open MPI's names for it (mpi_x, mpi_x_, mpi_x__, MPI_X and their pmpi_/PMPI_ forms,
 * ompi_x_f), made by FORWARDED (generate_fortran_lists.py reads those lines, and ROOTED and
 * ALL's, which end in FORWARDED). */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "fortran_front.h"

/* mpif.h's sentinels: common blocks whose addresses stand for MPI_IN_PLACE, MPI_BOTTOM and the
 * ignored statuses. A program compiled with mpif.h defines them itself and its copies interpose
 * (taken through the GOT here); these serve one that does not. */
EXPORTED Fint mpi_fortran_in_place_, mpi_fortran_bottom_, mpi_fortran_errcodes_ignore_, mpi_fortran_unweighted_,
    mpi_fortran_weights_empty_;
EXPORTED Fint mpi_fortran_status_ignore_[6], mpi_fortran_statuses_ignore_[6];
EXPORTED char mpi_fortran_argv_null_, mpi_fortran_argvs_null_;

BINDING(init)(Fint *ierr) {
  *ierr = fortran_split.Init(NULL, NULL);
  fortran_mark_up(*ierr == MPI_SUCCESS);
}
FORWARDED(init, INIT)
BINDING(init_thread)(Fint *required, Fint *provided, Fint *ierr) {
  *ierr = fortran_split.Init_thread(NULL, NULL, *required, provided);
  fortran_mark_up(*ierr == MPI_SUCCESS);
}
FORWARDED(init_thread, INIT_THREAD)
/* LOGICAL under gfortran: a 4-byte int, .TRUE. is 1. */
BINDING(initialized)(Fint *flag, Fint *ierr) {
  int c_flag = 0;
  *ierr = fortran_split.Initialized(&c_flag);
  *flag = c_flag != 0;
}
FORWARDED(initialized, INITIALIZED)
BINDING(finalized)(Fint *flag, Fint *ierr) {
  int c_flag = 0;
  *ierr = fortran_split.Finalized(&c_flag);
  *flag = c_flag != 0;
}
FORWARDED(finalized, FINALIZED)
BINDING(finalize)(Fint *ierr) {
  *ierr = fortran_split.Finalize();
  fortran_mark_up(0);
}
FORWARDED(finalize, FINALIZE)
BINDING(abort)(Fint *comm, Fint *code, Fint *ierr) { *ierr = fortran_split.Abort(COMM(comm), *code); }
FORWARDED(abort, ABORT)
EXPORTED double ompi_wtime_f(void) { return fortran_split.Wtime(); }
FORWARDED(wtime, WTIME)
EXPORTED double ompi_wtick_f(void) { return fortran_split.Wtick(); }
FORWARDED(wtick, WTICK)
/* A CHARACTER*(*) result: its length comes last, hidden; the rest of it is blanks, as Fortran
 * pads. `fill` writes the C string (MPI_MAX_LIBRARY_VERSION_STRING, 256, at most) and its length. */
static void fortran_string(int (*fill)(char *, int *), char *text, Fint *length, size_t text_length, Fint *ierr) {
  char c_text[512] = "";
  int c_length = 0;
  *ierr = fill(c_text, &c_length);
  if (*ierr != MPI_SUCCESS) return;
  if ((size_t)c_length > text_length) c_length = (int)text_length;
  memcpy(text, c_text, (size_t)c_length);
  memset(text + c_length, ' ', text_length - (size_t)c_length);
  *length = c_length;
}
BINDING(get_processor_name)(char *name, Fint *length, Fint *ierr, size_t name_length) {
  fortran_string(fortran_split.Get_processor_name, name, length, name_length, ierr);
}
FORWARDED(get_processor_name, GET_PROCESSOR_NAME)
BINDING(get_library_version)(char *version, Fint *length, Fint *ierr, size_t version_length) {
  fortran_string(fortran_split.Get_library_version, version, length, version_length, ierr);
}
FORWARDED(get_library_version, GET_LIBRARY_VERSION)
/* One flat address space: an address (INTEGER(KIND=MPI_ADDRESS_KIND), 8 bytes) is the location's
 * value, as in every MPI on x86-64; answered here, no library needed. */
BINDING(get_address)(void *location, long long *address, Fint *ierr) {
  *address = (long long)(intptr_t)location;
  *ierr = MPI_SUCCESS;
}
FORWARDED(get_address, GET_ADDRESS)

BINDING(comm_rank)(Fint *comm, Fint *rank, Fint *ierr) { *ierr = fortran_split.Comm_rank(COMM(comm), rank); }
FORWARDED(comm_rank, COMM_RANK)
BINDING(comm_size)(Fint *comm, Fint *size, Fint *ierr) { *ierr = fortran_split.Comm_size(COMM(comm), size); }
FORWARDED(comm_size, COMM_SIZE)
BINDING(comm_dup)(Fint *comm, Fint *copy, Fint *ierr) { MAKES(copy, fortran_split.Comm_dup(COMM(comm), &made)); }
FORWARDED(comm_dup, COMM_DUP)
BINDING(comm_split)(Fint *comm, Fint *color, Fint *key, Fint *part, Fint *ierr) {
  MAKES(part, fortran_split.Comm_split(COMM(comm), *color, *key, &made));
}
FORWARDED(comm_split, COMM_SPLIT)
BINDING(comm_create)(Fint *comm, Fint *group, Fint *made_comm, Fint *ierr) {
  MAKES(made_comm, fortran_split.Comm_create(COMM(comm), GROUP(group), &made));
}
FORWARDED(comm_create, COMM_CREATE)
BINDING(comm_free)(Fint *comm, Fint *ierr) { THROUGH(COMM, comm, fortran_split.Comm_free(&id)); }
FORWARDED(comm_free, COMM_FREE)
BINDING(comm_group)(Fint *comm, Fint *group, Fint *ierr) {
  MAKES(group, fortran_split.Comm_group(COMM(comm), &made));
}
FORWARDED(comm_group, COMM_GROUP)
BINDING(group_size)(Fint *group, Fint *size, Fint *ierr) { *ierr = fortran_split.Group_size(GROUP(group), size); }
FORWARDED(group_size, GROUP_SIZE)
BINDING(group_rank)(Fint *group, Fint *rank, Fint *ierr) { *ierr = fortran_split.Group_rank(GROUP(group), rank); }
FORWARDED(group_rank, GROUP_RANK)
BINDING(group_free)(Fint *group, Fint *ierr) { THROUGH(GROUP, group, fortran_split.Group_free(&id)); }
FORWARDED(group_free, GROUP_FREE)
BINDING(group_incl)(Fint *group, Fint *n, Fint *ranks, Fint *newgroup, Fint *ierr) {
  MAKES(newgroup, fortran_split.Group_incl(GROUP(group), *n, ranks, &made));
}
FORWARDED(group_incl, GROUP_INCL)

BINDING(type_contiguous)(Fint *count, Fint *old, Fint *made_type, Fint *ierr) {
  MAKES(made_type, fortran_split.Type_contiguous(*count, TYPE(old), &made));
}
FORWARDED(type_contiguous, TYPE_CONTIGUOUS)
BINDING(type_vector)(Fint *count, Fint *length, Fint *stride, Fint *old, Fint *made_type, Fint *ierr) {
  MAKES(made_type, fortran_split.Type_vector(*count, *length, *stride, TYPE(old), &made));
}
FORWARDED(type_vector, TYPE_VECTOR)
BINDING(type_commit)(Fint *datatype, Fint *ierr) { THROUGH(TYPE, datatype, fortran_split.Type_commit(&id)); }
FORWARDED(type_commit, TYPE_COMMIT)
BINDING(type_free)(Fint *datatype, Fint *ierr) { THROUGH(TYPE, datatype, fortran_split.Type_free(&id)); }
FORWARDED(type_free, TYPE_FREE)
BINDING(type_size)(Fint *datatype, Fint *size, Fint *ierr) {
  *ierr = fortran_split.Type_size(TYPE(datatype), size);
}
FORWARDED(type_size, TYPE_SIZE)
BINDING(get_count)(Fint *status, Fint *datatype, Fint *count, Fint *ierr) {
  *ierr = fortran_split.Get_count((MPI_Status *)status, TYPE(datatype), count);
}
FORWARDED(get_count, GET_COUNT)

BINDING(send)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Send(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm));
}
FORWARDED(send, SEND)
BINDING(ssend)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Ssend(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm));
}
FORWARDED(ssend, SSEND)
BINDING(recv)(void *buf, Fint *count, Fint *datatype, Fint *source, Fint *tag, Fint *comm, Fint *status, Fint *ierr) {
  *ierr = fortran_split.Recv(buffer(buf), *count, TYPE(datatype), *source, *tag, COMM(comm), status_of(status));
}
FORWARDED(recv, RECV)
BINDING(sendrecv)(void *sendbuf, Fint *sendcount, Fint *sendtype, Fint *dest, Fint *sendtag, void *recvbuf,
                  Fint *recvcount, Fint *recvtype, Fint *source, Fint *recvtag, Fint *comm, Fint *status, Fint *ierr) {
  *ierr = fortran_split.Sendrecv(buffer(sendbuf), *sendcount, TYPE(sendtype), *dest, *sendtag, buffer(recvbuf),
                                 *recvcount, TYPE(recvtype), *source, *recvtag, COMM(comm), status_of(status));
}
FORWARDED(sendrecv, SENDRECV)
BINDING(isend)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Isend(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm), &made));
}
FORWARDED(isend, ISEND)
BINDING(issend)(void *buf, Fint *count, Fint *datatype, Fint *dest, Fint *tag, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Issend(buffer(buf), *count, TYPE(datatype), *dest, *tag, COMM(comm), &made));
}
FORWARDED(issend, ISSEND)
BINDING(irecv)(void *buf, Fint *count, Fint *datatype, Fint *source, Fint *tag, Fint *comm, Fint *request, Fint *ierr) {
  MAKES(request, fortran_split.Irecv(buffer(buf), *count, TYPE(datatype), *source, *tag, COMM(comm), &made));
}
FORWARDED(irecv, IRECV)
BINDING(probe)(Fint *source, Fint *tag, Fint *comm, Fint *status, Fint *ierr) {
  *ierr = fortran_split.Probe(*source, *tag, COMM(comm), status_of(status));
}
FORWARDED(probe, PROBE)
BINDING(iprobe)(Fint *source, Fint *tag, Fint *comm, Fint *flag, Fint *status, Fint *ierr) {
  int c_flag = 0;
  *ierr = fortran_split.Iprobe(*source, *tag, COMM(comm), &c_flag, status_of(status));
  *flag = c_flag != 0;
}
FORWARDED(iprobe, IPROBE)

BINDING(wait)(Fint *request, Fint *status, Fint *ierr) {
  THROUGH(REQUEST, request, fortran_split.Wait(&id, status_of(status)));
}
FORWARDED(wait, WAIT)
BINDING(test)(Fint *request, Fint *flag, Fint *status, Fint *ierr) {
  int c_flag = 0;
  THROUGH(REQUEST, request, fortran_split.Test(&id, &c_flag, status_of(status)));
  *flag = c_flag != 0;
}
FORWARDED(test, TEST)
BINDING(waitall)(Fint *count, Fint *requests, Fint *statuses, Fint *ierr) {
  WITH_REQUEST_IDS(count, requests, fortran_split.Waitall(*count, ids, status_of(statuses)));
}
FORWARDED(waitall, WAITALL)
/* Fortran counts from 1: the index a wait gives is one more than C's (MPI_UNDEFINED stays). */
BINDING(waitany)(Fint *count, Fint *requests, Fint *index, Fint *status, Fint *ierr) {
  WITH_REQUEST_IDS(count, requests, fortran_split.Waitany(*count, ids, index, status_of(status)));
  if (*ierr == MPI_SUCCESS && *index != MPI_UNDEFINED) *index += 1;
}
FORWARDED(waitany, WAITANY)

BINDING(barrier)(Fint *comm, Fint *ierr) { *ierr = fortran_split.Barrier(COMM(comm)); }
FORWARDED(barrier, BARRIER)
BINDING(bcast)(void *buf, Fint *count, Fint *datatype, Fint *root, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Bcast(buffer(buf), *count, TYPE(datatype), *root, COMM(comm));
}
FORWARDED(bcast, BCAST)
BINDING(allreduce)(void *sendbuf, void *recvbuf, Fint *count, Fint *datatype, Fint *op, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Allreduce(buffer(sendbuf), buffer(recvbuf), *count, TYPE(datatype), OP(op), COMM(comm));
}
FORWARDED(allreduce, ALLREDUCE)
BINDING(reduce)(void *sendbuf, void *recvbuf, Fint *count, Fint *datatype, Fint *op, Fint *root, Fint *comm,
                Fint *ierr) {
  *ierr = fortran_split.Reduce(buffer(sendbuf), buffer(recvbuf), *count, TYPE(datatype), OP(op), *root, COMM(comm));
}
FORWARDED(reduce, REDUCE)
BINDING(scan)(void *sendbuf, void *recvbuf, Fint *count, Fint *datatype, Fint *op, Fint *comm, Fint *ierr) {
  *ierr = fortran_split.Scan(buffer(sendbuf), buffer(recvbuf), *count, TYPE(datatype), OP(op), COMM(comm));
}
FORWARDED(scan, SCAN)
/* Gather, Scatter, Allgather, Alltoall: the same arguments, with a root or without. */
#define ROOTED(lower, UPPER, Name)                                                                                 \
  BINDING(lower)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcount, Fint *recvtype, \
                 Fint *root, Fint *comm, Fint *ierr) {                                                            \
    *ierr = fortran_split.Name(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), *recvcount,         \
                               TYPE(recvtype), *root, COMM(comm));                                                \
  }                                                                                                               \
  FORWARDED(lower, UPPER)
#define ALL(lower, UPPER, Name)                                                                                    \
  BINDING(lower)(void *sendbuf, Fint *sendcount, Fint *sendtype, void *recvbuf, Fint *recvcount, Fint *recvtype, \
                 Fint *comm, Fint *ierr) {                                                                        \
    *ierr = fortran_split.Name(buffer(sendbuf), *sendcount, TYPE(sendtype), buffer(recvbuf), *recvcount,         \
                               TYPE(recvtype), COMM(comm));                                                       \
  }                                                                                                               \
  FORWARDED(lower, UPPER)
ROOTED(gather, GATHER, Gather)
ROOTED(scatter, SCATTER, Scatter)
ALL(allgather, ALLGATHER, Allgather)
ALL(alltoall, ALLTOALL, Alltoall)
