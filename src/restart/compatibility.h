// What would make a restart fail after `stasis restart` has replaced itself, checked while a clear
// message is still possible: CPU state the machine lacks, another kernel's vdso, memory where
// the loader must run, mapped files that changed or are gone, descriptors that cannot come back.
#pragma once
#include <set>
#include <string>

#include "image/reader.h"

namespace stasis::restart {

// Throws stasis::Error naming the image and what to do about it. `recreated`: the files restart
// has just written again with their bytes as of the checkpoint (recreate_named_shm_files).
void check_restartable(const image::Image& img, const std::set<std::string>& recreated);

}  // namespace stasis::restart
