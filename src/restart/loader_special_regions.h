// Regions the restart loader does not map itself: a kind of state brings them back its own way
// (the ipc kind attaches System V segments again; the kvm kind reserves kvm_run areas). Each kind's step is a header of static
// functions on raw system calls in its folder, included here: the loader uses no libc. One line
// per kind; loader.c names none.
#pragma once
#include "plugins/ipc/loader_attach.h"
#include "plugins/kvm/loader_reserve.h"
#include "restart/loader_protocol.h"

// 1 when a kind claims `region`: *addr is where it is now (or -errno), *failure is set when the
// plan cannot be followed. 0: an ordinary region, the loader maps it.
static inline int stasis_map_special_region(const StasisRestartInfo* info, const StasisLoaderRegion* region,
                                            long* addr, const char** failure) {
  if (stasis_ipc_claims_region(region)) {
    *addr = stasis_ipc_attach_region(info, region, failure);
    return 1;
  }
  if (stasis_kvm_claims_region(region)) {
    *addr = stasis_kvm_reserve_region(region);
    return 1;
  }
  return 0;
}
