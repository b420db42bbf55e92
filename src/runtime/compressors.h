// zstd and lz4 for the image writer, loaded with dlopen when the runtime starts in a process (not
// linked, so the runtime's own start does not depend on them; a fork child inherits them).
#pragma once
#define ZSTD_STATIC_LINKING_ONLY
#include <lz4.h>
#include <zstd.h>

#include "runtime/rt.h"

namespace stasis::rt {

struct Compressors {
  decltype(&ZSTD_createCCtx_advanced) zstd_create_cctx_advanced;
  decltype(&ZSTD_CCtx_setParameter) zstd_cctx_set_parameter;
  decltype(&ZSTD_compress2) zstd_compress2;
  decltype(&ZSTD_isError) zstd_is_error;
  decltype(&LZ4_compress_fast_extState) lz4_compress_fast_ext_state;
  int lz4_state_size;
};

// In the runtime's constructor, before the program runs. False (with `error`) when a library is
// missing; checkpoints that ask for it then fail.
bool load_compressors(LogLine& error);
// nullptr until loaded.
const Compressors* compressors();

}  // namespace stasis::rt
