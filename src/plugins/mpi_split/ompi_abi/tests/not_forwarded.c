/* not_forwarded: built with Open MPI's own mpicc, run through Stasis's Open MPI front. Checks
 * the functions the front answers itself (front_local.c: Fortran handles round trip and are
 * mpif.h's numbers for predefined objects, addresses,
 * error strings, the version), says "before" on stdout, then calls MPI_Add_error_class (with the
 * argument "object": MPI_Bcast of MPI_WCHAR, an Open MPI object without a split-mode equivalent), which the front does not forward yet: the front
 * must end the job with a line naming the function (never a crash, never a wrong answer). It
 * prints "after" only if the call came back, which would be the defect. Also checks that the
 * front is the library that answered MPI_Send (dladdr) and prints its path on stderr. Its build asserts
 * the front's error classes (../error_classes.def) against Open MPI's mpi.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* The front's table of error classes holds Open MPI's values: this mpi.h's. */
#define X(name, ompi_value, text) _Static_assert(MPI_##name == ompi_value, "error_classes.def: MPI_" #name);
#include "../error_classes.def"
#undef X

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
  MPI_Comm copy;
  MPI_Comm_dup(MPI_COMM_WORLD, &copy);
  double x = 0;
  MPI_Aint address = 0;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0, version = 0, subversion = 0;
  MPI_Get_address(&x, &address);
  MPI_Error_string(MPI_ERR_COMM, text, &length);
  MPI_Get_version(&version, &subversion);
  if (MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) != MPI_COMM_WORLD || MPI_Comm_f2c(MPI_Comm_c2f(copy)) != copy ||
      MPI_Comm_c2f(copy) == MPI_Comm_c2f(MPI_COMM_WORLD) || MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) != MPI_DOUBLE ||
      MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) != MPI_SUM || address != (MPI_Aint)&x ||
      /* the predefined objects' numbers are mpif.h's, as in Open MPI: Fortran and C agree */
      MPI_Comm_c2f(MPI_COMM_WORLD) != 0 || MPI_Comm_f2c(2) != MPI_COMM_NULL || MPI_Op_c2f(MPI_SUM) != 3 ||
      strncmp(text, "MPI_ERR_COMM: ", 14) != 0 || length != (int)strlen(text) || version != 3 || subversion != 1) {
    fprintf(stderr, "rank %d: a function the front answers itself answered wrong\n", rank);
    return 3;
  }
  MPI_Comm_free(&copy);
  printf("before rank %d\n", rank);
  fflush(stdout);
  int out[4] = {rank, rank, rank, rank};
  if (argc > 1 && strcmp(argv[1], "object") == 0)
    MPI_Bcast(out, 1, MPI_WCHAR, 0, MPI_COMM_WORLD); /* a predefined object without an equivalent */
  else {
    int error_class;
    MPI_Add_error_class(&error_class); /* no split-mode equivalent planned */
  }
  printf("after rank %d\n", rank);
  MPI_Finalize();
  return 0;
}
