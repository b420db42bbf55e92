/* Finds and loads the lower half (lower_half.c built for one MPI library) into this process.
 *
 * Which library: STASIS_MPI_LOWER names the lower half's file; otherwise the launcher tells
 * (Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH's Hydra PMI_RANK or PMI_FD) and the file is
 * stasis_mpi_lower_<impl>.so beside libstasis_mpi.so; a rank started without a launcher takes
 * the first of openmpi, mpich that is there.
 *
 * How: dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so the lower half and the library it links bind their
 * MPI_* names to the library's own functions, never to the upper half's wrappers of the same
 * names (README.md: why not dlmopen).
 *
 * Or, with STASIS_MPI_LOWER_MODE=program, the lower-half program (stasis-mpi-lower-IMPL beside
 * libstasis_mpi.so, or the file STASIS_MPI_LOWER names) is started inside this process and hands
 * its interface back (lower_program_start.c): the way a restarted upper half gets a fresh one.
 *
 * Or the program was started as the upper half by the lower-half program (lower_program.c),
 * which put its interface's address in STASIS_MPI_LOWER_TABLE and its thread pointer in
 * STASIS_MPI_LOWER_TLS: then nothing is loaded, and each call switches to that TLS (lower_tls.h). */
#define _GNU_SOURCE
#include "lower_half_loader.h"

#include "lower_program_start.h"
#include "lower_tls.h"

#include <dlfcn.h>
#include <sys/auxv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *launcher_implementation(void) {
  /* After a restart, the new launcher's (the environment still holds the old one's variables). */
  const char *restarted_under = getenv("STASIS_MPI_LAUNCHER");
  if (restarted_under && (strcmp(restarted_under, "openmpi") == 0 || strcmp(restarted_under, "mpich") == 0))
    return restarted_under;
  if (getenv("OMPI_COMM_WORLD_SIZE")) return "openmpi";
  if (getenv("PMI_RANK") || getenv("PMI_FD")) return "mpich";
  return NULL;
}

/* DIRECTORY/stasis_mpi_lower_IMPL.so, or DIRECTORY/stasis-mpi-lower-IMPL for the program, into
 * path; -1 when it does not fit. */
static int lower_half_path(char *path, size_t size, const char *directory, const char *implementation, int program) {
  int length = snprintf(path, size, program ? "%s/stasis-mpi-lower-%s" : "%s/stasis_mpi_lower_%s.so", directory,
                        implementation);
  return length > 0 && (size_t)length < size ? 0 : -1;
}

/* The interface the lower-half program handed over, or NULL when none did. */
static const StasisMpiLower *lower_half_program(char *error, size_t error_size, int *failed) {
  const char *table = getenv("STASIS_MPI_LOWER_TABLE"), *tls = getenv("STASIS_MPI_LOWER_TLS");
  if (!table || !tls) return NULL;
  char *end_table = NULL, *end_tls = NULL;
  long table_pid = strtol(table, &end_table, 10), tls_pid = strtol(tls, &end_tls, 10);
  if (*end_table != ':' || *end_tls != ':') {
    snprintf(error, error_size, "STASIS_MPI_LOWER_TABLE=%s STASIS_MPI_LOWER_TLS=%s: not PID:ADDRESS", table, tls);
    *failed = 1;
    return NULL;
  }
  /* Inherited from the lower-half program of another process (this one is its child): not ours. */
  if (table_pid != (long)getpid() || tls_pid != (long)getpid()) return NULL;
  unsigned long long table_address = strtoull(end_table + 1, &end_table, 16);
  unsigned long long tls_base = strtoull(end_tls + 1, &end_tls, 16);
  if (!table_address || *end_table || !tls_base || *end_tls) {
    snprintf(error, error_size, "STASIS_MPI_LOWER_TABLE=%s STASIS_MPI_LOWER_TLS=%s: not two addresses", table, tls);
    *failed = 1;
    return NULL;
  }
  const StasisMpiLower *lower = (const StasisMpiLower *)(uintptr_t)table_address;
  if (lower->interface_version != STASIS_MPI_LOWER_INTERFACE_VERSION) {
    snprintf(error, error_size, "the lower-half program speaks interface version %u, this upper half %u",
             lower->interface_version, STASIS_MPI_LOWER_INTERFACE_VERSION);
    *failed = 1;
    return NULL;
  }
#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif
  stasis_mpi_fsgsbase = (getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) != 0;
  stasis_mpi_lower_tls = tls_base;
  return lower;
}

const StasisMpiLower *stasis_mpi_load_lower_half(char *error, size_t error_size) {
  int failed = 0;
  const StasisMpiLower *handed = lower_half_program(error, error_size, &failed);
  if (handed || failed) return handed;
  char path[4096];
  const char *mode = getenv("STASIS_MPI_LOWER_MODE");
  int program = mode && strcmp(mode, "program") == 0;
  if (mode && *mode && !program && strcmp(mode, "library") != 0) {
    snprintf(error, error_size, "STASIS_MPI_LOWER_MODE=%s: not library or program", mode);
    return NULL;
  }
  const char *chosen = getenv("STASIS_MPI_LOWER");
  if (chosen && *chosen) {
    snprintf(path, sizeof path, "%s", chosen);
  } else {
    Dl_info self;
    if (!dladdr((void *)stasis_mpi_load_lower_half, &self) || !self.dli_fname) {
      snprintf(error, error_size, "cannot tell where libstasis_mpi.so is (dladdr failed); set STASIS_MPI_LOWER");
      return NULL;
    }
    char directory[4096];
    snprintf(directory, sizeof directory, "%s", self.dli_fname);
    char *slash = strrchr(directory, '/');
    if (slash) *slash = '\0';
    else snprintf(directory, sizeof directory, ".");
    const char *implementation = launcher_implementation();
    if (implementation) {
      if (lower_half_path(path, sizeof path, directory, implementation, program) != 0) {
        snprintf(error, error_size, "the directory of libstasis_mpi.so is too long: %s", directory);
        return NULL;
      }
    } else {
      const char *candidates[] = {"openmpi", "mpich"};
      path[0] = '\0';
      for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (lower_half_path(path, sizeof path, directory, candidates[i], program) == 0 && access(path, R_OK) == 0) break;
        else path[0] = '\0';
      if (!path[0]) {
        snprintf(error, error_size, "no launcher named its MPI and no lower half is in %s; set STASIS_MPI_LOWER",
                 directory);
        return NULL;
      }
    }
  }
  if (program) return stasis_mpi_start_lower_program(path, error, error_size);
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!library) {
    snprintf(error, error_size, "cannot load the lower half %s: %s", path, dlerror());
    return NULL;
  }
  StasisMpiLowerInterfaceFn interface = (StasisMpiLowerInterfaceFn)dlsym(library, STASIS_MPI_LOWER_INTERFACE_SYMBOL);
  const StasisMpiLower *lower = interface ? interface() : NULL;
  if (!lower) {
    snprintf(error, error_size, "%s is not a lower half: no %s", path, STASIS_MPI_LOWER_INTERFACE_SYMBOL);
    return NULL;
  }
  if (lower->interface_version != STASIS_MPI_LOWER_INTERFACE_VERSION) {
    snprintf(error, error_size, "%s speaks interface version %u, this upper half %u: rebuild them together", path,
             lower->interface_version, STASIS_MPI_LOWER_INTERFACE_VERSION);
    return NULL;
  }
  return lower;
}
