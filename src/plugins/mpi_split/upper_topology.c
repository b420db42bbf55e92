/* Cartesian topologies in the upper half (README.md, Cartesian topologies).
 *
 * A Cartesian communicator is made with MPI_Comm_split (ranks kept in order: the standard lets an
 * implementation ignore `reorder`), so the replay log already re-makes it at a restart, under any
 * library, with no new record and no new lower-half function. Its grid (dims, periods) lives here,
 * in upper-half static storage saved with the program, keyed by the communicator's virtual id,
 * which a restart keeps. Every query (Cart_get, _rank, _coords, _shift, Topo_test) is answered
 * from it, never by the library, so the answers are the same before and after a restart under
 * another library. Cart_sub is a split again (color: the coordinates dropped, key: those kept). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "abi/mpi.h"
#include "lower_tls.h"
#include "upper_state.h"

enum { CART_CAPACITY = 256, CART_MAX_DIMS = 8 };

typedef struct CartGrid {
  int comm; /* the communicator's virtual id; 0: a free slot */
  int ndims;
  int dims[CART_MAX_DIMS];
  int periods[CART_MAX_DIMS];
} CartGrid;

static CartGrid grids[CART_CAPACITY];

static CartGrid *grid_of(int comm) {
  if (comm == 0) return NULL;
  for (int i = 0; i < CART_CAPACITY; i++)
    if (grids[i].comm == comm) return &grids[i];
  return NULL;
}

/* A slot for a new grid, NULL when all are taken. */
static CartGrid *take_grid(void) {
  for (int i = 0; i < CART_CAPACITY; i++)
    if (grids[i].comm == 0) return &grids[i];
  return NULL;
}

/* The table is written in safe regions: under MPI_THREAD_MULTIPLE they are taken in turns
 * (lower_tls.h). A slot is reserved (comm -1) before the grid's communicator is made. */
void stasis_mpi_topology_comm_freed(int comm) {
  stasis_mpi_safe_point_enter("MPI_Comm_free");
  CartGrid *grid = grid_of(comm);
  if (grid) memset(grid, 0, sizeof *grid);
  stasis_mpi_safe_point_leave();
}

int stasis_mpi_topology_comm_dup(int from, int made) {
  int rc = MPI_SUCCESS;
  stasis_mpi_safe_point_enter("MPI_Comm_dup");
  CartGrid *grid = grid_of(from), *copy = grid ? take_grid() : NULL;
  if (copy) {
    *copy = *grid;
    copy->comm = made;
  } else if (grid) {
    complain("MPI_Comm_dup", "too many Cartesian communicators for the split layer's table");
    rc = MPI_ERR_INTERN;
  }
  stasis_mpi_safe_point_leave();
  return rc;
}

/* The grid of a live Cartesian communicator, or NULL after saying why. */
static CartGrid *cart_of(const char *function, int comm) {
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_real(&handles.comms, comm, &real) != 0) {
    not_live(function, "communicator", comm, MPI_ERR_COMM);
    return NULL;
  }
  CartGrid *grid = grid_of(comm);
  if (!grid) complain(function, "the communicator has no Cartesian topology");
  return grid;
}

static int grid_size(int ndims, const int *dims) {
  long long size = 1;
  for (int d = 0; d < ndims; d++) {
    if (dims[d] <= 0) return -1;
    size *= dims[d];
    if (size > 1 << 30) return -1;
  }
  return (int)size;
}

/* Row-major, as the standard numbers a grid's ranks. */
static int rank_of(const CartGrid *grid, const int *coords) {
  int rank = 0;
  for (int d = 0; d < grid->ndims; d++) rank = rank * grid->dims[d] + coords[d];
  return rank;
}

static void coords_of(const CartGrid *grid, int rank, int *coords) {
  for (int d = grid->ndims - 1; d >= 0; d--) {
    coords[d] = rank % grid->dims[d];
    rank /= grid->dims[d];
  }
}

/* Makes the communicator of a grid with MPI_Comm_split over `comm`: ranks below `members` get it
 * with color `color` (their rank order kept by `key`), the rest MPI_COMM_NULL. */
static int make_grid_comm(const char *function, MPI_Comm comm, int color, int key, int ndims, const int *dims,
                          const int *periods, MPI_Comm *made) {
  stasis_mpi_safe_point_enter(function);
  CartGrid *grid = take_grid();
  if (grid) grid->comm = -1; /* reserved */
  stasis_mpi_safe_point_leave();
  if (!grid) {
    complain(function, "too many Cartesian communicators for the split layer's table");
    return MPI_ERR_INTERN;
  }
  int rc = MPI_Comm_split(comm, color, key, made);
  stasis_mpi_safe_point_enter(function);
  if (rc != MPI_SUCCESS || *made == MPI_COMM_NULL) {
    grid->comm = 0;
  } else {
    grid->comm = *made;
    grid->ndims = ndims;
    for (int d = 0; d < ndims; d++) {
      grid->dims[d] = dims[d];
      grid->periods[d] = periods[d] != 0;
    }
  }
  stasis_mpi_safe_point_leave();
  return rc;
}

API int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                        MPI_Comm *comm_cart) {
  (void)reorder; /* ranks stay in order: allowed, and what makes the grid the same at a restart */
  NEED_LOWER("MPI_Cart_create");
  if (ndims < 0 || ndims > CART_MAX_DIMS) {
    complain("MPI_Cart_create", "ndims is negative or above the split layer's 8");
    return MPI_ERR_ARG;
  }
  int members = grid_size(ndims, dims), rank, size;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS) return MPI_ERR_COMM;
  if (members < 0 || members > size) {
    complain("MPI_Cart_create", "the grid has a dimension below 1 or more ranks than the communicator");
    return MPI_ERR_ARG;
  }
  return make_grid_comm("MPI_Cart_create", comm, rank < members ? 0 : MPI_UNDEFINED, rank, ndims, dims, periods,
                        comm_cart);
}

API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  NEED_LOWER("MPI_Cart_sub");
  CartGrid *grid = cart_of("MPI_Cart_sub", comm);
  if (!grid) return MPI_ERR_TOPOLOGY;
  int rank, coords[CART_MAX_DIMS], dims[CART_MAX_DIMS], periods[CART_MAX_DIMS], kept = 0, color = 0, key = 0;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return MPI_ERR_COMM;
  coords_of(grid, rank, coords);
  for (int d = 0; d < grid->ndims; d++) {
    if (remain_dims[d]) {
      key = key * grid->dims[d] + coords[d];
      dims[kept] = grid->dims[d];
      periods[kept++] = grid->periods[d];
    } else {
      color = color * grid->dims[d] + coords[d];
    }
  }
  return make_grid_comm("MPI_Cart_sub", comm, color, key, kept, dims, periods, newcomm);
}

API int MPI_Cartdim_get(MPI_Comm comm, int *ndims) {
  CartGrid *grid = cart_of("MPI_Cartdim_get", comm);
  if (!grid) return MPI_ERR_TOPOLOGY;
  *ndims = grid->ndims;
  return MPI_SUCCESS;
}

API int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
  NEED_LOWER("MPI_Cart_get");
  CartGrid *grid = cart_of("MPI_Cart_get", comm);
  if (!grid) return MPI_ERR_TOPOLOGY;
  int rank, mine[CART_MAX_DIMS];
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return MPI_ERR_COMM;
  coords_of(grid, rank, mine);
  for (int d = 0; d < grid->ndims && d < maxdims; d++) {
    dims[d] = grid->dims[d];
    periods[d] = grid->periods[d];
    coords[d] = mine[d];
  }
  return MPI_SUCCESS;
}

API int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank) {
  CartGrid *grid = cart_of("MPI_Cart_rank", comm);
  if (!grid) return MPI_ERR_TOPOLOGY;
  int wrapped[CART_MAX_DIMS];
  for (int d = 0; d < grid->ndims; d++) {
    int c = coords[d], n = grid->dims[d];
    if (grid->periods[d]) c = ((c % n) + n) % n;
    else if (c < 0 || c >= n) {
      complain("MPI_Cart_rank", "a coordinate lies outside a dimension that is not periodic");
      return MPI_ERR_ARG;
    }
    wrapped[d] = c;
  }
  *rank = rank_of(grid, wrapped);
  return MPI_SUCCESS;
}

API int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
  CartGrid *grid = cart_of("MPI_Cart_coords", comm);
  if (!grid) return MPI_ERR_TOPOLOGY;
  if (rank < 0 || rank >= grid_size(grid->ndims, grid->dims)) {
    complain("MPI_Cart_coords", "the rank is not in the grid");
    return MPI_ERR_RANK;
  }
  int all[CART_MAX_DIMS];
  coords_of(grid, rank, all);
  for (int d = 0; d < grid->ndims && d < maxdims; d++) coords[d] = all[d];
  return MPI_SUCCESS;
}

/* The rank `step` places from `coords` along `direction`, MPI_PROC_NULL off a non-periodic edge. */
static int neighbour(const CartGrid *grid, const int *coords, int direction, int step) {
  int moved[CART_MAX_DIMS];
  memcpy(moved, coords, sizeof moved);
  int n = grid->dims[direction], c = coords[direction] + step;
  if (grid->periods[direction]) c = ((c % n) + n) % n;
  else if (c < 0 || c >= n) return MPI_PROC_NULL;
  moved[direction] = c;
  return rank_of(grid, moved);
}

API int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest) {
  NEED_LOWER("MPI_Cart_shift");
  CartGrid *grid = cart_of("MPI_Cart_shift", comm);
  if (!grid) return MPI_ERR_TOPOLOGY;
  if (direction < 0 || direction >= grid->ndims) {
    complain("MPI_Cart_shift", "the direction is not a dimension of the grid");
    return MPI_ERR_ARG;
  }
  int rank, coords[CART_MAX_DIMS] = {0};
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return MPI_ERR_COMM;
  coords_of(grid, rank, coords);
  *rank_source = neighbour(grid, coords, direction, -disp);
  *rank_dest = neighbour(grid, coords, direction, disp);
  return MPI_SUCCESS;
}

API int MPI_Topo_test(MPI_Comm comm, int *status) {
  StasisMpiRealHandle real;
  if (stasis_mpi_ids_real(&handles.comms, comm, &real) != 0)
    return not_live("MPI_Topo_test", "communicator", comm, MPI_ERR_COMM);
  *status = grid_of(comm) ? MPI_CART : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

/* The standard's balanced factorisation: each prime factor of nnodes, largest first, goes to the
 * free dimension with the smallest product so far; the free dimensions then in decreasing order
 * (what Open MPI and MPICH both give). Local: no library needed. */
API int MPI_Dims_create(int nnodes, int ndims, int dims[]) {
  if (nnodes < 1 || ndims < 0) {
    complain("MPI_Dims_create", "nnodes below 1 or ndims negative");
    return MPI_ERR_ARG;
  }
  int fixed = 1, free_count = 0;
  for (int d = 0; d < ndims; d++) {
    if (dims[d] < 0) {
      complain("MPI_Dims_create", "a dimension is negative");
      return MPI_ERR_DIMS;
    }
    if (dims[d] > 0) fixed *= dims[d];
    else free_count++;
  }
  if (nnodes % fixed != 0) {
    complain("MPI_Dims_create", "nnodes is not a multiple of the dimensions given");
    return MPI_ERR_DIMS;
  }
  int rest = nnodes / fixed;
  if (free_count == 0) return rest == 1 ? MPI_SUCCESS : MPI_ERR_DIMS;
  int product[CART_MAX_DIMS * 4];
  if (free_count > (int)(sizeof product / sizeof product[0])) return MPI_ERR_DIMS;
  for (int i = 0; i < free_count; i++) product[i] = 1;
  int factors[32], factor_count = 0;
  for (int p = 2; rest > 1 && factor_count < 32; p++) {
    if ((long long)p * p > rest) p = rest;
    while (rest % p == 0 && factor_count < 32) {
      factors[factor_count++] = p;
      rest /= p;
    }
  }
  for (int f = factor_count - 1; f >= 0; f--) {
    int smallest = 0;
    for (int i = 1; i < free_count; i++)
      if (product[i] < product[smallest]) smallest = i;
    product[smallest] *= factors[f];
  }
  for (int i = 0; i < free_count; i++) /* decreasing: a few elements, insertion sort */
    for (int j = i; j > 0 && product[j] > product[j - 1]; j--) {
      int t = product[j];
      product[j] = product[j - 1];
      product[j - 1] = t;
    }
  for (int d = 0, i = 0; d < ndims; d++)
    if (dims[d] == 0) dims[d] = product[i++];
  return MPI_SUCCESS;
}

/* Both libraries' MPI_Wtime read CLOCK_MONOTONIC on Linux (Open MPI 4.1's MPI_Wtick asks the same
 * clock_getres), so its resolution is theirs, whichever lower half runs now. */
API double MPI_Wtick(void) {
  struct timespec resolution;
  if (clock_getres(CLOCK_MONOTONIC, &resolution) != 0) return 1e-6;
  return (double)resolution.tv_sec + (double)resolution.tv_nsec * 1e-9;
}
