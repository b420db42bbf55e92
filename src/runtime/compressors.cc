#include "runtime/compressors.h"

#include <dlfcn.h>

namespace stasis::rt {
namespace {

constinit Compressors g_compressors = {};
constinit bool g_loaded = false;

template <typename Fn>
bool resolve(void* library, Fn& out, const char* name) {
  out = reinterpret_cast<Fn>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

bool load_compressors(LogLine& error) {
  if (g_loaded) return true;
  void* zstd = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  void* lz4 = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
  Compressors c = {};
  decltype(&LZ4_sizeofState) lz4_sizeof_state = nullptr;
  bool ok = zstd && lz4 && resolve(zstd, c.zstd_create_cctx_advanced, "ZSTD_createCCtx_advanced") &&
            resolve(zstd, c.zstd_cctx_set_parameter, "ZSTD_CCtx_setParameter") &&
            resolve(zstd, c.zstd_compress2, "ZSTD_compress2") &&
            resolve(zstd, c.zstd_is_error, "ZSTD_isError") &&
            resolve(lz4, c.lz4_compress_fast_ext_state, "LZ4_compress_fast_extState") &&
            resolve(lz4, lz4_sizeof_state, "LZ4_sizeofState");
  if (!ok) {
    error << "cannot load " << (!zstd ? "libzstd.so.1" : !lz4 ? "liblz4.so.1" : "the compressors' functions")
          << "; only uncompressed checkpoints are possible";
    return false;
  }
  c.lz4_state_size = lz4_sizeof_state();
  g_compressors = c;
  g_loaded = true;
  return true;
}

const Compressors* compressors() { return g_loaded ? &g_compressors : nullptr; }

}  // namespace stasis::rt
