/* The predefined MPI objects of Stasis's MPI interface, one list each, in the order of their
 * virtual ids. abi/mpi.h numbers them for the program; the lower half (lower_half.c) maps each
 * to the library's own object with the same list, so the two can never disagree. Index 0 of
 * every kind is its null handle. */
#ifndef STASIS_MPI_PREDEFINED_H
#define STASIS_MPI_PREDEFINED_H

/* The kinds of handles, the second byte of a virtual id. */
enum StasisMpiKind {
  STASIS_MPI_KIND_COMM = 1,
  STASIS_MPI_KIND_DATATYPE = 2,
  STASIS_MPI_KIND_OP = 3,
  STASIS_MPI_KIND_GROUP = 4,
  STASIS_MPI_KIND_REQUEST = 5,
  STASIS_MPI_KIND_WIN = 6, /* mpirma: windows (upper_rma.c keeps their table) */
  STASIS_MPI_KIND_ERRHANDLER = 7, /* the predefined error handlers (upper_errhandlers.c) */
  STASIS_MPI_KIND_INFO = 8,       /* info objects (upper_info.c keeps their table) */
};

#define STASIS_MPI_PREDEFINED_COMMS(X) X(COMM_NULL) X(COMM_WORLD) X(COMM_SELF)

#define STASIS_MPI_PREDEFINED_DATATYPES(X)                                                         \
  X(DATATYPE_NULL) X(CHAR) X(SIGNED_CHAR) X(UNSIGNED_CHAR) X(BYTE) X(SHORT) X(UNSIGNED_SHORT)      \
  X(INT) X(UNSIGNED) X(LONG) X(UNSIGNED_LONG) X(LONG_LONG) X(UNSIGNED_LONG_LONG) X(FLOAT)          \
  X(DOUBLE) X(LONG_DOUBLE) X(INT8_T) X(INT16_T) X(INT32_T) X(INT64_T) X(UINT8_T) X(UINT16_T)       \
  X(UINT32_T) X(UINT64_T) X(C_BOOL) X(FLOAT_INT) X(DOUBLE_INT) X(LONG_INT) X(2INT)          \
  X(PACKED)

#define STASIS_MPI_PREDEFINED_OPS(X)                                                               \
  X(OP_NULL) X(MAX) X(MIN) X(SUM) X(PROD) X(LAND) X(BAND) X(LOR) X(BOR) X(LXOR) X(BXOR)            \
  X(MAXLOC) X(MINLOC) X(REPLACE) X(NO_OP)

#define STASIS_MPI_PREDEFINED_GROUPS(X) X(GROUP_NULL) X(GROUP_EMPTY)

#define STASIS_MPI_PREDEFINED_REQUESTS(X) X(REQUEST_NULL)

#define STASIS_MPI_PREDEFINED_WINS(X) X(WIN_NULL) /* mpirma */
/* Error handlers: the predefined ones only (MPI_Comm_create_errhandler is not offered). */
#define STASIS_MPI_PREDEFINED_ERRHANDLERS(X) X(ERRHANDLER_NULL) X(ERRORS_ARE_FATAL) X(ERRORS_RETURN)
/* Info objects live in the upper half alone (upper_info.c): MPI_INFO_ENV is an empty one. */
#define STASIS_MPI_PREDEFINED_INFOS(X) X(INFO_NULL) X(INFO_ENV)
/* Matched messages (MPI_Message, upper_mprobe.c) are no virtual ids of the tables: a message
 * matched by MPI_Mprobe is held by the upper half itself. Its handle is this tag | its slot; slot
 * 0 is MPI_MESSAGE_NULL, 1 MPI_MESSAGE_NO_PROC. */
#define STASIS_MPI_MESSAGE_TAG 0x4D000000
#define STASIS_MPI_MESSAGE_SLOTS 1024

#endif
