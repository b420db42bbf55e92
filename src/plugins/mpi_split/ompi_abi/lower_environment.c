/* The lower half's LD_LIBRARY_PATH without the Open MPI front's folder (README.md): `stasis
 * launch --mpi` puts that folder first so that the program's libmpi.so.40 is the front, and the
 * lower-half program, which loads the real libmpi.so.40, must not find the front instead. Part
 * of libstasis_mpi.so; runs when a lower half starts, at a restart while the program's threads
 * are stopped: no allocation. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi_abi/lower_environment.h"

const char *stasis_mpi_lower_environment_variable(const char *variable) {
  static const char prefix[] = "LD_LIBRARY_PATH=";
  static char kept[8192];
  const char *front = getenv("STASIS_MPI_OMPI_ABI_DIR");
  if (!front || !*front || strncmp(variable, prefix, sizeof prefix - 1) != 0) return variable;
  size_t front_length = strlen(front), used = sizeof prefix - 1;
  memcpy(kept, prefix, used);
  for (const char *entry = variable + used; *entry;) {
    size_t length = strcspn(entry, ":");
    if (!(length == front_length && memcmp(entry, front, length) == 0) && length > 0) {
      if (used + length + 2 > sizeof kept) {
        static const char said[] = "stasis mpi_split: LD_LIBRARY_PATH is over 8 KiB, the lower half keeps the Open MPI "
                                   "front's folder in it and will fail to start\n";
        (void)!write(2, said, sizeof said - 1);
        return variable;
      }
      if (used > sizeof prefix - 1) kept[used++] = ':';
      memcpy(kept + used, entry, length);
      used += length;
    }
    entry += length + (entry[length] == ':');
  }
  kept[used] = '\0';
  return used > sizeof prefix - 1 ? kept : NULL;
}
