/* The Open MPI ABI front (README.md): what its two halves share. handles.c includes Stasis's
 * abi/mpi.h (virtual ids, the split layer's functions); front.c defines MPI_* with Open MPI's
 * types and must not see abi/mpi.h, so the handles here are plain ints (virtual ids) and the
 * split layer's functions are reached through one table of pointers. */
#ifndef STASIS_OMPI_ABI_H
#define STASIS_OMPI_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef STASIS_ABI_MPI_H
/* The split layer's status, the same struct as abi/mpi.h's (the same tag and members: compatible
 * types across the two files) and the same layout as Open MPI's (handles.c asserts it), so a
 * program's status goes through untouched. */
typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int stasis_cancelled;
  long long stasis_bytes;
} MPI_Status;/* Whether MPI is up (between a forwarded MPI_Init and MPI_Finalize): what ompi_abi_fatal ends. */
void ompi_abi_mark_up(int up) __attribute__((visibility("hidden")));

#endif

/* What every handle the front gives the program points at: a predefined object (a data symbol
 * of Open MPI's size, handles.c) or a slot of a made object. vid 0: a predefined object of Open
 * MPI's that has no split-mode equivalent (named by `name`). */
typedef struct OmpiAbiObject {
  uint32_t magic;
  int32_t vid;
  const char *name;
} OmpiAbiObject;
#define OMPI_ABI_MAGIC 0x5354414eu

/* Open MPI's error classes that the front returns itself (mpi.h of Open MPI 4.1; error_classes.def,
 * whose values tests/not_forwarded.c asserts against Open MPI's mpi.h). The split layer numbers its
 * classes otherwise (abi/mpi.h): every code it returns goes through CLASS. */
#define OMPI_ABI_SUCCESS 0
#define OMPI_ABI_ERR_ARG 13
#define OMPI_ABI_ERR_OTHER 16
#define OMPI_ABI_ERR_UNSUPPORTED_OPERATION 52

/* Open MPI's class for the split layer's code (error_classes.def); MPI_ERR_OTHER for a code the
 * table lacks, never the code itself. */
int ompi_abi_error_class(int split_code) __attribute__((visibility("hidden")));
/* The split layer's class for Open MPI's (a program's callback answering the split layer). */
int ompi_abi_split_error_class(int ompi_code) __attribute__((visibility("hidden")));
/* Open MPI's text for one of its classes the table holds; NULL for any other code. */
const char *ompi_abi_error_text(int ompi_code) __attribute__((visibility("hidden")));
/* The MPI_ERROR fields of the first `count` statuses into Open MPI's numbering (none for
 * MPI_STATUS(ES)_IGNORE, a NULL pointer in Open MPI, or a count of 0 or less). */
void ompi_abi_status_classes(void *statuses, int count) __attribute__((visibility("hidden")));

typedef OmpiAbiObject *OmpiAbiHandle;

/* The handle's virtual id. A handle the front cannot translate (NULL, something it did not give
 * out, an object of Open MPI's without an equivalent) ends the job as Open MPI's default error
 * handler would, after a line naming `function` and the fault: never a wrong object. */
int ompi_abi_vid(const char *function, const void *handle) __attribute__((visibility("hidden")));
/* The handle the program gets for a virtual id the split layer handed out: the predefined
 * object's address, or the slot of that kind and index (its id written into it). An id the
 * front has no place for ends the job the same way. */
OmpiAbiHandle ompi_abi_handle(const char *function, int vid) __attribute__((visibility("hidden")));
/* The handle for a Fortran handle (a virtual id) that must be of `kind` (enum StasisMpiKind):
 * one of another kind or none ends the job as ompi_abi_handle does. */
OmpiAbiHandle ompi_abi_handle_of(const char *function, int vid, int kind) __attribute__((visibility("hidden")));
/* Ends the job (the split layer's MPI_Abort once MPI is up, else exit status 1) after the line
 * "stasis ompi_abi: FUNCTION: WHAT" on stderr. */
__attribute__((noreturn)) void ompi_abi_fatal(const char *function, const char *what)
    __attribute__((visibility("hidden")));

/* The split layer's function `name` ("MPI_Send"), asked of libstasis_mpi.so itself: this
 * library's MPI_* come first in the global scope. Ends the job naming it when missing. */
void *ompi_abi_split_function(const char *name) __attribute__((visibility("hidden")));
/* Fills `table.name` (a member typed like the function) from ompi_abi_split_function. */
#define OMPI_ABI_RESOLVE(table, name) (*(void **)&(table).name = ompi_abi_split_function("MPI_" #name))

/* What the front*.c wrappers share: a handle's id and an id's handle, named by the calling
 * function for the message of a handle that cannot be translated. */
#define VID(handle) ompi_abi_vid(__func__, handle)
#define HANDLE(vid) ompi_abi_handle(__func__, vid)
/* What a front function returns for the split layer's code: Open MPI's class (every wrapper's
 * return goes through it, and THROUGH, MAKES and WITH_REQUEST_IDS below). */
#define CLASS(split_call) ompi_abi_error_class(split_call)
/* Runs `call`, which fills statuses, then converts the MPI_ERROR of the first `count` of them
 * (`count` read after the call: a Waitsome's *outcount); the split layer's code, for CLASS. */
#define STATUSES_FILLED(statuses, count, call)      \
  ({                                                \
    int split_code = (call);                        \
    ompi_abi_status_classes((statuses), (count));   \
    split_code;                                     \
  })

/* Runs `call` with *vid_of_handle's id in `vid` and writes the handle of the id it leaves back
 * (a free sets MPI_*_NULL, a wait MPI_REQUEST_NULL, a commit keeps it). */
#define THROUGH(handle_pointer, call)        \
  do {                                       \
    int vid = VID(*(handle_pointer));        \
    int rc = CLASS(call);                    \
    *(handle_pointer) = HANDLE(vid);         \
    return rc;                               \
  } while (0)
/* Runs `call`, which makes an object whose id it leaves in `made`; its handle on success. */
#define MAKES(out, call)                     \
  do {                                       \
    int made = 0;                            \
    int rc = CLASS(call);                    \
    if (rc == OMPI_ABI_SUCCESS) *(out) = HANDLE(made); \
    return rc;                               \
  } while (0)

/* The program's request handles as ids and back around `call` on them (`ids`), in every
 * front*.c that takes an array of requests: on the stack for the usual few, else on the heap. */
#define WITH_REQUEST_IDS(count, requests, call)                                                        \
  do {                                                                                                 \
    if ((count) < 0) return OMPI_ABI_ERR_ARG;                                                          \
    int on_stack[64], *ids = (count) <= 64 ? on_stack : malloc((size_t)(count) * sizeof *ids);         \
    if (!ids) ompi_abi_fatal(__func__, "no memory for the requests' ids");                             \
    for (int i = 0; i < (count); i++) ids[i] = ompi_abi_vid(__func__, requests[i]);                    \
    int rc = CLASS(call);                                                                              \
    for (int i = 0; i < (count); i++) requests[i] = ompi_abi_handle(__func__, ids[i]);                 \
    if (ids != on_stack) free(ids);                                                                    \
    return rc;                                                                                         \
  } while (0)

/* The split layer's functions (abi/mpi.h's, in libstasis_mpi.so), resolved once by handles.c. */
typedef struct OmpiAbiSplit {
  int (*Init)(int *, char ***);
  int (*Init_thread)(int *, char ***, int, int *);
  int (*Initialized)(int *);
  int (*Finalized)(int *);
  int (*Finalize)(void);
  int (*Abort)(int, int);
  double (*Wtime)(void);
  int (*Get_processor_name)(char *, int *);
  int (*Get_library_version)(char *, int *);
  int (*Comm_rank)(int, int *);
  int (*Comm_size)(int, int *);
  int (*Comm_dup)(int, int *);
  int (*Comm_split)(int, int, int, int *);
  int (*Comm_free)(int *);
  int (*Comm_group)(int, int *);
  int (*Group_size)(int, int *);
  int (*Group_rank)(int, int *);
  int (*Group_free)(int *);
  int (*Type_contiguous)(int, int, int *);
  int (*Type_vector)(int, int, int, int, int *);
  int (*Type_commit)(int *);
  int (*Type_free)(int *);
  int (*Type_size)(int, int *);
  int (*Get_count)(const MPI_Status *, int, int *);
  int (*Send)(const void *, int, int, int, int, int);
  int (*Recv)(void *, int, int, int, int, int, MPI_Status *);
  int (*Sendrecv)(const void *, int, int, int, int, void *, int, int, int, int, int, MPI_Status *);
  int (*Isend)(const void *, int, int, int, int, int, int *);
  int (*Irecv)(void *, int, int, int, int, int, int *);
  int (*Wait)(int *, MPI_Status *);
  int (*Waitall)(int, int[], MPI_Status[]);
  int (*Barrier)(int);
  int (*Bcast)(void *, int, int, int, int);
  int (*Allreduce)(const void *, void *, int, int, int, int);
  int (*Reduce)(const void *, void *, int, int, int, int, int);
} OmpiAbiSplit;
extern OmpiAbiSplit ompi_abi_split __attribute__((visibility("hidden")));

/* Whether MPI is up (between a forwarded MPI_Init and MPI_Finalize): what ompi_abi_fatal ends. */
void ompi_abi_mark_up(int up) __attribute__((visibility("hidden")));

#endif
