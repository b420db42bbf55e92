#include "runtime/compressors.h"

namespace stasis::rt {
namespace {

// Constant-initialized: no constructor, no relocation run at the process's start beyond the
// pointers' own.
constinit const Compressors kCompressors = {
    &ZSTD_createCCtx_advanced,   &ZSTD_CCtx_setParameter,
    &ZSTD_compress2,             &ZSTD_isError,
    &LZ4_compress_fast_extState, &LZ4_sizeofState,
};

}  // namespace

const Compressors* compressors() { return &kCompressors; }

}  // namespace stasis::rt
