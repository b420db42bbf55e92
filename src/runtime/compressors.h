// zstd and lz4 for the image writer, linked statically into the runtime with hidden symbols: a
// process loads no library for them at its start (dlopen of libzstd and liblz4 cost about 330 us
// of CPU at every process's start; docs/performance.md), and the program's own zstd or lz4, if
// it has one, is neither used nor disturbed.
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
  decltype(&LZ4_sizeofState) lz4_sizeof_state;  // the library's, whatever its build's LZ4_MEMORY_USAGE
};

// Never null: the compressors are part of the runtime.
const Compressors* compressors();

}  // namespace stasis::rt
