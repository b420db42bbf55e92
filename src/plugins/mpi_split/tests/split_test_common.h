/* What the split mode's test programs share: loud checks that end the rank with status 2. */
#ifndef STASIS_SPLIT_TEST_COMMON_H
#define STASIS_SPLIT_TEST_COMMON_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
      exit(2);                                                                    \
    }                                                                             \
  } while (0)
#define MPI_OK(call) CHECK((call) == MPI_SUCCESS)

#endif
