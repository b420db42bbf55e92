// The KVM kind's step in the restart loader (restart/loader_special_regions.h): a vCPU's kvm_run
// area is not mapped from the image; the range is only reserved (inaccessible) so that nothing
// lands there before the restarted runtime maps the new vCPU over it (recreate.cc). No libc.
#pragma once
#include <sys/mman.h>
#include <sys/syscall.h>

#include "common/raw_syscall.h"
#include "restart/loader_protocol.h"

static inline int stasis_kvm_claims_region(const StasisLoaderRegion* region) {
  return region->kind == STASIS_REGION_KVM_RUN;
}

static inline long stasis_kvm_reserve_region(const StasisLoaderRegion* region) {
  return STASIS_SYS6(SYS_mmap, region->start, region->end - region->start, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}
