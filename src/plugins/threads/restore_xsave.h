// Threads, restart side: can this CPU hold the saved threads' XSAVE state (xsave_frame.h)?
#pragma once
#include "image/reader.h"

namespace stasis::restore {

// Throws stasis::Error naming the image and the components when the threads of `img` hold state
// in an XSAVE component this CPU does not enable, or that it places elsewhere. An image without
// a CPU_STATE record (before version 7) needs every feature its header's xcr0 names.
void check_xsave_state(const image::Image& img);

// The names of the XSAVE features in `bits`, for messages ("AVX, AVX-512-opmask").
std::string xsave_feature_names(uint64_t bits);

}  // namespace stasis::restore
