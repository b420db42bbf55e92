/* The Fortran front's split-layer table and its fatal end (fortran_split.h), and the stubs of
 * every other function libmpi_mpifh.so.40 exports (fortran_not_forwarded.def): present, so a
 * program loads, and ending the job with a line naming the function when called. */
#define _GNU_SOURCE
#include "fortran_split.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

FortranSplit fortran_split;
static int split_up;

void fortran_mark_up(int up) { split_up = up; }

/* A binding's C name (ompi_bcast_f, its __func__) as the program wrote the call: MPI_BCAST. */
static const char *as_called(const char *function, char *name, size_t size) {
  size_t length = strlen(function);
  if (length < 8 || strncmp(function, "ompi_", 5) != 0 || strcmp(function + length - 2, "_f") != 0 ||
      length - 7 + 5 > size)
    return function;
  memcpy(name, "MPI_", 4);
  for (size_t i = 5; i < length - 2; i++) name[i - 1] = (char)toupper((unsigned char)function[i]);
  name[length - 3] = '\0';
  return name;
}

void fortran_fatal(const char *function, const char *what) {
  char line[512], name[64];
  int length = snprintf(line, sizeof line, "stasis ompi_abi: %s: %s\n", as_called(function, name, sizeof name), what);
  if (length > 0) (void)!write(2, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
  int finalized = 1;
  if (fortran_split.Finalized) fortran_split.Finalized(&finalized);
  if (!finalized && split_up) fortran_split.Abort(MPI_COMM_WORLD, MPI_ERR_OTHER);
  _exit(1);
}

/* Runs when the program's libraries start, after libstasis_mpi.so's (a dependency of this one).
 * NOLOAD: it is loaded; the reference taken is given back, it stays. */
__attribute__((constructor)) static void resolve_split_layer(void) {
  void *library = dlopen("libstasis_mpi.so", RTLD_NOW | RTLD_NOLOAD);
  if (!library) fortran_fatal("libmpi_mpifh.so.40", "libstasis_mpi.so is not loaded");
#define RESOLVE(name)                                                                          \
  if (!(*(void **)&fortran_split.name = dlsym(library, "MPI_" #name)))                         \
    fortran_fatal("MPI_" #name, "not found in libstasis_mpi.so");
  FORTRAN_SPLIT_FUNCTIONS(RESOLVE)
#undef RESOLVE
  dlclose(library);
}

#define X(name)                                                                                       \
  __attribute__((visibility("default"))) void name(void);                                             \
  void name(void) {                                                                                   \
    fortran_fatal(#name, "not forwarded by Stasis's Fortran front yet (src/plugins/mpi_split/ompi_abi/fortran/README.md)"); \
  }
#include "fortran_not_forwarded.def"
#undef X
