// Preloaded by x11.openarena into both of its runs: srand() always seeds 1, so that the effects a
// program draws at random (ioquake3's smoke, sparks and gibs, from libc's rand() that it seeds
// from /dev/urandom) are the same in every run and two runs' frames can be compared.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

void srand(unsigned seed) {
  (void)seed;
  void (*libc_srand)(unsigned) = (void (*)(unsigned))dlsym(RTLD_NEXT, "srand");
  if (libc_srand) libc_srand(1);
}
