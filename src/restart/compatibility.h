// What would make a restart fail after `stasis restart` has replaced itself, checked while a clear
// message is still possible: CPU state the machine lacks, another kernel's vdso, memory where
// the loader must run, mapped files that changed or are gone, descriptors that cannot come back.
#pragma once
#include <set>
#include <string>

#include "image/reader.h"
#include "restart/loader_protocol.h"
#include "restart/vdso_proxy.h"

namespace stasis::restart {

// Throws stasis::Error naming the image and what to do about it. `recreated`: the files restart
// has just written again with their bytes as of the checkpoint (recreate_named_shm_files).
// Returns the plan that redirects the image's vdso to `own_vdso` (this kernel's; `active` 0 when
// they are the same), made here once and handed to the loader feed (RestoreContext::vdso_plans).
StasisVdsoProxy check_restartable(const image::Image& img, const std::set<std::string>& recreated,
                                  const KernelVdso& own_vdso);

}  // namespace stasis::restart
