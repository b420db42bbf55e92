/* split_ring: an MPI program that uses every function of the split mode's first slice, built twice:
 * against Stasis's abi/mpi.h (linked with libstasis_mpi.so: virtual handles, a lower half holding
 * the real library) and against a library's own mpi.h. Both builds must print the same lines.
 * usage: mpirun -np R split_ring [STEPS=20] [DELAY_MS=0] [REMAKE_AT=0]
 * Per step: a ring exchange of a block (Isend/Irecv/Waitall) on a duplicate of MPI_COMM_WORLD, a
 * strided column sent with a vector datatype (Send/Recv, Get_count), a row communicator from
 * Comm_split (Allreduce, Bcast), and a Reduce and a Barrier on the world; rank 0 prints
 * "step N ..." with checksums of everything received. Also per step: an MPI_Allreduce of a struct
 * datatype (MPI_Type_create_struct) with a non-commutative user operation (MPI_Op_create), which
 * checks that it is handed the program's datatype, and a Bcast on a communicator made from
 * MPI_Group_incl of the first and last ranks (Group_translate_ranks, Group_compare checked), and
 * a word from the next rank completed by MPI_Testall, so a
 * restart makes the operation, the struct and the group again. Attributes: a keyval whose copy
 * function passes the value on and whose delete function counts, its value set on the ring's
 * communicator (copied to a duplicate, deleted with it) and on the column datatype, and read back
 * at the end (after any restart), MPI_COMM_NULL_COPY_FN's attribute not copied, MPI_TAG_UB, one on
 * MPI_COMM_SELF deleted by MPI_Finalize; rank 0's "done ranks" line says how many copies and
 * deletes its functions saw. Part "mpinfo" (what NWChem's Global Arrays call): MPI_ERRORS_RETURN
 * set on the ring, so a send to a rank that does not exist returns an error every step (a restart
 * that did not set it again would end the job there), of the class this mpi.h numbers MPI_ERR_RANK (or
 * MPI_ERR_OTHER in split mode), which MPI_Error_class and MPI_Error_string agree with; a block of a matrix sent as a subarray type
 * and words picked by an indexed-block type, their extents checked; an info object's keys and
 * values checked every step; MPI_Query_thread. The output depends only on the arguments
 * and the number of ranks. On stderr, the upper half's build says what it ran through. With
 * REMAKE_AT > 0, the upper half's build makes every communicator and datatype again from its
 * replay log before that step (as a restart does), goes on with the new objects under the same
 * ids, and says so on stderr. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "split_test_common.h"

enum { WORDS = 1024, COLUMNS = 8, ROWS = 16 };

/* Says on stderr whether this process runs as a split process, and how: a lower half loaded
 * into the program (one libc) or the program started by the lower-half program (two libcs). */
static void report_halves(int rank) {
#ifdef STASIS_MPI_SPLIT
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[512];
  int library = 0, program = 0, libcs = 0;
  while (maps && fgets(line, sizeof line, maps)) {
    if (strstr(line, "stasis_mpi_lower_")) library = 1;
    if (strstr(line, "stasis-mpi-lower-")) program = 1;
    /* Each copy of libc maps its file from offset 0 once (UCX patches libc's code, which splits
     * the executable part into several mappings). */
    if (strstr(line, "/libc.so.6") && strstr(line, " 00000000 ")) libcs++;
  }
  if (maps) fclose(maps);
  fprintf(stderr, "rank %d: upper half, MPI_COMM_WORLD=0x%x, lower half %s, %d libc%s\n", rank,
          (unsigned)MPI_COMM_WORLD, program ? "mapped (program)" : library ? "mapped (library)" : "MISSING", libcs,
          libcs == 1 ? "" : "s");
#else
  (void)rank;
#endif
}

/* Whether `code`, from a send to a rank that does not exist, is an error of the class this mpi.h
 * names for it: MPI_ERR_RANK from a library itself, MPI_ERR_OTHER from the split layer (which
 * reports any failure of the library underneath so). A build with a library's own mpi.h (run
 * natively, or through the Open MPI front) also asks MPI_Error_class and MPI_Error_string, whose
 * text names the class in Open MPI's and MPICH's words. */
static int nowhere_error_checked(int code) {
#ifdef STASIS_MPI_SPLIT
  return code == MPI_ERR_OTHER;
#else
  int error_class = -1, length = -1;
  char text[MPI_MAX_ERROR_STRING] = "";
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS || MPI_Error_string(error_class, text, &length) != MPI_SUCCESS)
    return 0;
  if (error_class != MPI_ERR_RANK && error_class != MPI_ERR_OTHER) {
    fprintf(stderr, "a send to no rank: error class %d (\"%s\"), not MPI_ERR_RANK (%d) or MPI_ERR_OTHER (%d)\n",
            error_class, text, MPI_ERR_RANK, MPI_ERR_OTHER);
    return 0;
  }
  return length == (int)strlen(text) && strcasestr(text, error_class == MPI_ERR_RANK ? "rank" : "other") != NULL;
#endif
}

/* Makes the objects again from the replay log (upper half's build only). Their ids stay the
 * same: the rest of the program does not know. */
static void remake_objects(int rank) {
#ifdef STASIS_MPI_SPLIT
  int remade = 0;
  MPI_OK(STASIS_MPI_Remake_objects(&remade));
  /* ring, row, lonely (rank 0 only), column, tagged, chain, block, picked and ends (first and last
   * rank) are held. */
  int size = 1;
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (remade != 7 + (rank == 0) + (rank == 0 || rank == size - 1)) fprintf(stderr, "rank %d remade %d\n", rank, remade);
  CHECK(remade == 7 + (rank == 0) + (rank == 0 || rank == size - 1));
  fprintf(stderr, "rank %d: remade %d objects from the replay log\n", rank, remade);
#else
  (void)rank;
#endif
}

/* An affine map x -> x * scale + shift (mod 2^64) and a count: the struct datatype's members,
 * with a hole (pad) left out. Composing maps is associative but not commutative. */
typedef struct Tagged {
  uint64_t scale;
  int32_t count;
  int32_t pad;
  uint64_t shift;
} Tagged;
static MPI_Datatype tagged_type;

/* inout = in, then inout (declared non-commutative: the library keeps rank order). */
static void chain(void *in, void *inout, int *len, MPI_Datatype *type) {
  CHECK(*type == tagged_type); /* the program's own handle, whatever the library passed */
  Tagged *a = in, *b = inout;
  for (int i = 0; i < *len; i++) {
    b[i].shift = a[i].shift * b[i].scale + b[i].shift;
    b[i].scale = a[i].scale * b[i].scale;
    b[i].count = a[i].count + b[i].count;
  }
}

/* The attributes' functions: the copies and deletes they saw, and the value they were given. */
static int attribute_copies, attribute_deletes;
static long attribute_mark = 0x5eed;
static int copy_mark(MPI_Comm comm, int keyval, void *extra_state, void *in, void *out, int *flag) {
  (void)comm, (void)keyval;
  CHECK(extra_state == &attribute_mark && in == &attribute_mark);
  attribute_copies++;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}
static int delete_mark(MPI_Comm comm, int keyval, void *value, void *extra_state) {
  (void)comm, (void)keyval;
  CHECK(value == &attribute_mark && extra_state == &attribute_mark);
  attribute_deletes++;
  return MPI_SUCCESS;
}
/* MPI_COMM_SELF's attributes are deleted at the start of MPI_Finalize. */
static int self_deletes;
static int delete_self_mark(MPI_Comm comm, int keyval, void *value, void *extra_state) {
  (void)comm, (void)keyval, (void)extra_state;
  CHECK(value == &attribute_mark);
  self_deletes++;
  return MPI_SUCCESS;
}
static int delete_type_mark(MPI_Datatype type, int keyval, void *value, void *extra_state) {
  (void)type, (void)keyval, (void)extra_state;
  CHECK(value == &attribute_mark);
  attribute_deletes++;
  return MPI_SUCCESS;
}

int main(int argc, char **argv) {
  int rank = 0, size = 1;
  MPI_OK(MPI_Init(&argc, &argv));
  setvbuf(stdout, NULL, _IOLBF, 0);
  long steps = argc > 1 ? atol(argv[1]) : 20, delay = argc > 2 ? atol(argv[2]) : 0;
  long remake_at = argc > 3 ? atol(argv[3]) : 0;
  MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  report_halves(rank);

  MPI_Comm ring, row, lonely;
  MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &ring));
  MPI_OK(MPI_Comm_split(ring, rank % 2, -rank, &row)); /* reversed order inside each row */
  /* Only rank 0 gets a communicator; the others take part and get MPI_COMM_NULL. */
  MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &lonely));
  CHECK((rank == 0) == (lonely != MPI_COMM_NULL));
  int row_rank = 0, row_size = 0, group_rank = 0, group_size = 0;
  MPI_OK(MPI_Comm_rank(row, &row_rank));
  MPI_OK(MPI_Comm_size(row, &row_size));
  MPI_Group row_group;
  MPI_OK(MPI_Comm_group(row, &row_group));
  MPI_OK(MPI_Group_size(row_group, &group_size));
  MPI_OK(MPI_Group_rank(row_group, &group_rank));
  CHECK(group_size == row_size && group_rank == row_rank);
  MPI_OK(MPI_Group_free(&row_group));
  CHECK(row_group == MPI_GROUP_NULL);

  /* A column of a ROWS x COLUMNS matrix of doubles: a vector type built on a contiguous pair. */
  MPI_Datatype pair, column;
  MPI_OK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
  MPI_OK(MPI_Type_vector(ROWS, 1, COLUMNS / 2, pair, &column));
  MPI_OK(MPI_Type_commit(&column));
  MPI_OK(MPI_Type_free(&pair)); /* the column keeps what it needs */
  int column_size = 0;
  MPI_OK(MPI_Type_size(column, &column_size));
  CHECK(column_size == ROWS * 2 * (int)sizeof(double));

  /* Attributes: the ring's (copied to a duplicate and deleted with it), the column's, and one of
   * MPI_COMM_NULL_COPY_FN that a duplicate does not get. */
  int ring_key, column_key, null_key, flag = 0;
  void *value = NULL;
  MPI_OK(MPI_Comm_create_keyval(copy_mark, delete_mark, &ring_key, &attribute_mark));
  MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &null_key, NULL));
  MPI_OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, delete_type_mark, &column_key, NULL));
  MPI_OK(MPI_Comm_set_attr(ring, ring_key, &attribute_mark));
  MPI_OK(MPI_Comm_set_attr(ring, null_key, &attribute_mark));
  MPI_OK(MPI_Type_set_attr(column, column_key, &attribute_mark));
  MPI_Comm twin;
  MPI_OK(MPI_Comm_dup(ring, &twin));
  MPI_OK(MPI_Comm_get_attr(twin, ring_key, &value, &flag));
  CHECK(flag && value == &attribute_mark);
  MPI_OK(MPI_Comm_get_attr(twin, null_key, &value, &flag));
  CHECK(!flag);
  MPI_OK(MPI_Comm_free(&twin));
  MPI_OK(MPI_Comm_delete_attr(ring, null_key));
  MPI_OK(MPI_Comm_free_keyval(&null_key));
  CHECK(null_key == MPI_KEYVAL_INVALID);
  int *tag_ub = NULL;
  MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
  CHECK(flag && *tag_ub >= 32767);

  /* The struct (the pad left out: a hole) and a user operation on it. */
  int tagged_lengths[3] = {1, 1, 1};
  MPI_Aint tagged_displacements[3] = {offsetof(Tagged, scale), offsetof(Tagged, count), offsetof(Tagged, shift)};
  MPI_Datatype tagged_members[3] = {MPI_UINT64_T, MPI_INT, MPI_UINT64_T};
  MPI_OK(MPI_Type_create_struct(3, tagged_lengths, tagged_displacements, tagged_members, &tagged_type));
  MPI_OK(MPI_Type_commit(&tagged_type));
  MPI_Op chain_op;
  MPI_OK(MPI_Op_create(chain, 0, &chain_op));
  /* The first and last ranks, last first: a group from ranks, and a communicator from it. */
  MPI_Group world_group, ends_group;
  MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  int ends[2] = {size - 1, 0}, in_world[2] = {-1, -1};
  MPI_OK(MPI_Group_incl(world_group, size > 1 ? 2 : 1, ends, &ends_group));
  MPI_OK(MPI_Group_translate_ranks(ends_group, size > 1 ? 2 : 1, (int[]){0, 1}, world_group, in_world));
  CHECK(in_world[0] == size - 1 && (size == 1 || in_world[1] == 0));
  int comparison = -1;
  MPI_OK(MPI_Group_compare(ends_group, world_group, &comparison));
  CHECK(comparison == (size <= 2 ? (size == 2 ? MPI_SIMILAR : MPI_IDENT) : MPI_UNEQUAL));
  MPI_Comm ends_comm;
  MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, ends_group, &ends_comm));
  CHECK((ends_comm != MPI_COMM_NULL) == (rank == 0 || rank == size - 1));
  MPI_OK(MPI_Group_free(&ends_group));
  MPI_OK(MPI_Group_free(&world_group));

  /* Part "mpinfo". Errors on the ring come back to the program. */
  int provided = -1;
  MPI_OK(MPI_Query_thread(&provided));
  CHECK(provided == MPI_THREAD_SINGLE);
  MPI_OK(MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN));
  /* A 4 x 2 block of a ROWS x COLUMNS matrix of doubles from row 2, column 3. */
  MPI_Datatype block, picked;
  MPI_OK(MPI_Type_create_subarray(2, (int[]){ROWS, COLUMNS}, (int[]){4, 2}, (int[]){2, 3}, MPI_ORDER_C, MPI_DOUBLE,
                                  &block));
  MPI_OK(MPI_Type_commit(&block));
  MPI_Aint lb = -1, extent = -1;
  MPI_OK(MPI_Type_get_extent(block, &lb, &extent));
  CHECK(lb == 0 && extent == ROWS * COLUMNS * (MPI_Aint)sizeof(double));
  MPI_OK(MPI_Type_get_true_extent(block, &lb, &extent));
  CHECK(lb == (2 * COLUMNS + 3) * (MPI_Aint)sizeof(double) && extent == (3 * COLUMNS + 2) * (MPI_Aint)sizeof(double));
  /* Three pairs of words at 0, 5 and 11. */
  MPI_OK(MPI_Type_create_indexed_block(3, 2, (int[]){0, 5, 11}, MPI_UINT64_T, &picked));
  MPI_OK(MPI_Type_commit(&picked));
  MPI_OK(MPI_Type_get_true_extent(picked, &lb, &extent));
  CHECK(lb == 0 && extent == 13 * (MPI_Aint)sizeof(uint64_t));
  MPI_Info info, copy;
  char info_value[MPI_MAX_INFO_VAL + 1], info_key[MPI_MAX_INFO_KEY + 1];
  int info_flag = 0, keys = 0, length = 0;
  MPI_OK(MPI_Info_create(&info));
  MPI_OK(MPI_Info_set(info, "alloc_shm", "false"));
  MPI_OK(MPI_Info_set(info, "same_size", "true"));
  MPI_OK(MPI_Info_set(info, "alloc_shm", "true")); /* replaces */
  MPI_OK(MPI_Info_dup(info, &copy));
  MPI_OK(MPI_Info_delete(copy, "alloc_shm"));
  MPI_OK(MPI_Info_get_nkeys(copy, &keys));
  CHECK(keys == 1);
  MPI_OK(MPI_Info_free(&copy));
  CHECK(copy == MPI_INFO_NULL);

  uint64_t *mine = malloc(WORDS * sizeof *mine), *theirs = malloc(WORDS * sizeof *theirs);
  double matrix[ROWS][COLUMNS], received[ROWS][COLUMNS];
  CHECK(mine && theirs);
  for (int i = 0; i < WORDS; i++) mine[i] = mix((uint64_t)rank * WORDS + i);
  int next = (rank + 1) % size, previous = (rank + size - 1) % size;

  for (long step = 1; step <= steps; step++) {
    if (step == remake_at) remake_objects(rank);
    MPI_Request requests[2];
    MPI_Status statuses[2];
    MPI_OK(MPI_Irecv(theirs, WORDS, MPI_UINT64_T, previous, (int)step, ring, &requests[0]));
    MPI_OK(MPI_Isend(mine, WORDS, MPI_UINT64_T, next, (int)step, ring, &requests[1]));
    MPI_OK(MPI_Waitall(2, requests, statuses));
    CHECK(requests[0] == MPI_REQUEST_NULL && requests[1] == MPI_REQUEST_NULL);
    int count = 0;
    MPI_OK(MPI_Get_count(&statuses[0], MPI_UINT64_T, &count));
    CHECK(count == WORDS && statuses[0].MPI_SOURCE == previous && statuses[0].MPI_TAG == (int)step);
    uint64_t ring_sum = 0;
    for (int i = 0; i < WORDS; i++) {
      mine[i] = mix(mine[i] ^ theirs[(i + step) % WORDS]);
      ring_sum += theirs[i] >> 4;
    }

    /* Every rank sends column `step % COLUMNS / 2` (a pair of doubles per row) to the next. */
    for (int r = 0; r < ROWS; r++)
      for (int c = 0; c < COLUMNS; c++) matrix[r][c] = (double)(mine[(r * COLUMNS + c) % WORDS] % 1000003) / 7.0;
    memset(received, 0, sizeof received);
    int pair_column = (int)(step % (COLUMNS / 2)) * 2;
    MPI_Status status;
    if (rank % 2 == 0) {
      MPI_OK(MPI_Send(&matrix[0][pair_column], 1, column, next, 99, MPI_COMM_WORLD));
      MPI_OK(MPI_Recv(&received[0][pair_column], 1, column, previous, 99, MPI_COMM_WORLD, &status));
    } else {
      MPI_OK(MPI_Recv(&received[0][pair_column], 1, column, previous, 99, MPI_COMM_WORLD, &status));
      MPI_OK(MPI_Send(&matrix[0][pair_column], 1, column, next, 99, MPI_COMM_WORLD));
    }
    MPI_OK(MPI_Get_count(&status, column, &count));
    CHECK(count == 1);
    MPI_OK(MPI_Get_count(&status, MPI_DOUBLE, &count));
    CHECK(count == ROWS * 2);
    double column_sum = 0;
    for (int r = 0; r < ROWS; r++) column_sum += received[r][pair_column] + 2 * received[r][pair_column + 1];

    /* The row: the first in it broadcasts a word, everyone sums one (in place). */
    uint64_t word = row_rank == 0 ? mine[step % WORDS] : 0, row_total = mine[0] & 0xffff;
    MPI_OK(MPI_Bcast(&word, 1, MPI_UINT64_T, 0, row));
    MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &row_total, 1, MPI_UINT64_T, MPI_SUM, row));
    uint64_t local[2] = {ring_sum ^ word, row_total}, global[2] = {0, 0};
    MPI_OK(MPI_Reduce(local, global, 2, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD));
    double column_total = 0;
    MPI_OK(MPI_Allreduce(&column_sum, &column_total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    if (lonely != MPI_COMM_NULL) MPI_OK(MPI_Barrier(lonely));
    Tagged tagged[2] = {{mine[1] | 1, 1, 0, mine[2]}, {mine[4] | 1, rank, 0, (uint64_t)step}}, chained[2];
    MPI_OK(MPI_Allreduce(tagged, chained, 2, tagged_type, chain_op, MPI_COMM_WORLD));
    uint64_t ends_word = rank == size - 1 ? mine[3] : 0;
    if (ends_comm != MPI_COMM_NULL) MPI_OK(MPI_Bcast(&ends_word, 1, MPI_UINT64_T, 0, ends_comm));
    MPI_OK(MPI_Bcast(&ends_word, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD)); /* rank 0 is an end */
    /* A word back from the next rank, completed by MPI_Testall: all or none. */
    MPI_Request pair[2];
    MPI_Status pair_statuses[2];
    uint64_t back = 0, sent = mine[5];
    MPI_OK(MPI_Irecv(&back, 1, MPI_UINT64_T, next, 7, MPI_COMM_WORLD, &pair[0]));
    MPI_OK(MPI_Isend(&sent, 1, MPI_UINT64_T, previous, 7, MPI_COMM_WORLD, &pair[1]));
    for (int all = 0; !all;) {
      MPI_OK(MPI_Testall(2, pair, &all, pair_statuses));
      CHECK(all || (pair[0] != MPI_REQUEST_NULL && pair[1] != MPI_REQUEST_NULL));
    }
    CHECK(pair[0] == MPI_REQUEST_NULL && pair[1] == MPI_REQUEST_NULL && pair_statuses[0].MPI_SOURCE == next);
    /* Part "mpinfo": the errors come back, the block and the picked words arrive, the info holds. */
    MPI_Request nowhere = MPI_REQUEST_NULL;
    CHECK(nowhere_error_checked(MPI_Isend(&sent, 1, MPI_UINT64_T, size /* no such rank */, 5, ring, &nowhere)));
    double block_in[4][2];
    uint64_t picked_in[6];
    MPI_OK(MPI_Sendrecv(matrix, 1, block, next, 11, block_in, 8, MPI_DOUBLE, previous, 11, ring, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Sendrecv(mine, 1, picked, next, 12, picked_in, 6, MPI_UINT64_T, previous, 12, ring, MPI_STATUS_IGNORE));
    double block_sum = 0;
    for (int r = 0; r < 4; r++) block_sum += block_in[r][0] + 3 * block_in[r][1];
    uint64_t picked_xor = picked_in[0] ^ picked_in[1] ^ picked_in[2] ^ picked_in[3] ^ picked_in[4] ^ picked_in[5];
    double block_total = 0;
    uint64_t picked_total = 0;
    MPI_OK(MPI_Allreduce(&block_sum, &block_total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    MPI_OK(MPI_Allreduce(&picked_xor, &picked_total, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD));
    MPI_OK(MPI_Info_get_nkeys(info, &keys));
    MPI_OK(MPI_Info_get_nthkey(info, 1, info_key));
    MPI_OK(MPI_Info_get_valuelen(info, "alloc_shm", &length, &info_flag));
    CHECK(keys == 2 && strcmp(info_key, "same_size") == 0 && info_flag && length == 4);
    MPI_OK(MPI_Info_get(info, "alloc_shm", MPI_MAX_INFO_VAL, info_value, &info_flag));
    CHECK(info_flag && strcmp(info_value, "true") == 0);
    MPI_OK(MPI_Info_get(info, "no_locks", MPI_MAX_INFO_VAL, info_value, &info_flag));
    CHECK(!info_flag);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
      printf("step %ld ring %016llx row %016llx column %.3f chain %016llx %016llx %d %016llx %d ends %016llx back %016llx block %.3f picked %016llx\n", step,
             (unsigned long long)global[0], (unsigned long long)global[1], column_total,
             (unsigned long long)chained[0].scale, (unsigned long long)chained[0].shift, chained[0].count,
             (unsigned long long)chained[1].shift, chained[1].count, (unsigned long long)ends_word,
             (unsigned long long)back, block_total, (unsigned long long)picked_total);
    sleep_ms(delay);
  }

  /* The attributes set before any checkpoint, after any restart. */
  MPI_OK(MPI_Comm_get_attr(ring, ring_key, &value, &flag));
  CHECK(flag && value == &attribute_mark);
  MPI_OK(MPI_Type_get_attr(column, column_key, &value, &flag));
  CHECK(flag && value == &attribute_mark);
  MPI_OK(MPI_Comm_free_keyval(&ring_key)); /* its attribute on the ring stays until the ring goes */
  MPI_OK(MPI_Type_free_keyval(&column_key));
  MPI_OK(MPI_Type_free(&column));
  MPI_OK(MPI_Type_free(&tagged_type));
  MPI_OK(MPI_Type_free(&block));
  MPI_OK(MPI_Type_free(&picked));
  MPI_OK(MPI_Info_free(&info));
  MPI_OK(MPI_Op_free(&chain_op));
  CHECK(chain_op == MPI_OP_NULL);
  if (ends_comm != MPI_COMM_NULL) MPI_OK(MPI_Comm_free(&ends_comm));
  if (lonely != MPI_COMM_NULL) MPI_OK(MPI_Comm_free(&lonely));
  MPI_OK(MPI_Comm_free(&row));
  MPI_OK(MPI_Comm_free(&ring));
  CHECK(ring == MPI_COMM_NULL && column == MPI_DATATYPE_NULL);
  if (rank == 0) printf("done ranks %d attributes copied %d deleted %d\n", size, attribute_copies, attribute_deletes);
  free(mine);
  free(theirs);
  int self_key;
  MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_self_mark, &self_key, NULL));
  MPI_OK(MPI_Comm_set_attr(MPI_COMM_SELF, self_key, &attribute_mark));
  MPI_OK(MPI_Finalize());
  CHECK(self_deletes == 1);
  return 0;
}
