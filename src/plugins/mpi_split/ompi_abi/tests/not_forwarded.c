/* not_forwarded: built with Open MPI's own mpicc, run through Stasis's Open MPI front. Says
 * "before" on stdout, then calls MPI_Alltoall, which the front does not forward yet: the front
 * must end the job with a line naming the function (never a crash, never a wrong answer). It
 * prints "after" only if the call came back, which would be the defect. Also checks that the
 * front is the library that answered MPI_Send (dladdr) and prints its path on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Dl_info info;
  if (!dladdr((void *)MPI_Send, &info) || !info.dli_fname || !strstr(info.dli_fname, "/ompi_abi/libmpi.so.40")) {
    fprintf(stderr, "rank %d: MPI_Send is %s's, not the front's\n", rank, info.dli_fname ? info.dli_fname : "nobody");
    return 3;
  }
  fprintf(stderr, "rank %d: MPI through %s\n", rank, info.dli_fname);
  printf("before rank %d\n", rank);
  fflush(stdout);
  int out[4] = {rank, rank, rank, rank}, in[4];
  MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
  printf("after rank %d\n", rank);
  MPI_Finalize();
  return 0;
}
