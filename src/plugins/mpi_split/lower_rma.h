/* The lower half's one-sided communication (lower_rma.c), for lower_half.c's table. */
#ifndef STASIS_MPI_LOWER_RMA_H
#define STASIS_MPI_LOWER_RMA_H

#include "lower_half_api.h"

__attribute__((visibility("hidden"))) int lower_win_create(void *base, long size, int disp_unit,
                                                           StasisMpiRealHandle comm, StasisMpiRealHandle *win,
                                                           int *model);
__attribute__((visibility("hidden"))) int lower_win_free(StasisMpiRealHandle *win);
__attribute__((visibility("hidden"))) int lower_win_epoch(int kind, int lock_type, int target, int assert,
                                                          StasisMpiRealHandle win);
__attribute__((visibility("hidden"))) int lower_win_access(const StasisMpiLowerAccess *access);
__attribute__((visibility("hidden"))) int lower_win_allocate_shared(long size, int disp_unit, StasisMpiRealHandle comm,
                                                                    void *baseptr, StasisMpiRealHandle *win);
__attribute__((visibility("hidden"))) int lower_win_shared_query(StasisMpiRealHandle win, int rank, long *size,
                                                                 int *disp_unit, void *baseptr);
__attribute__((visibility("hidden"))) int lower_win_create_dynamic(StasisMpiRealHandle comm, StasisMpiRealHandle *win);
__attribute__((visibility("hidden"))) int lower_win_attach(StasisMpiRealHandle win, void *base, long size);
__attribute__((visibility("hidden"))) int lower_win_detach(StasisMpiRealHandle win, const void *base);
#endif
