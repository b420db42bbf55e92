// Restart under another kernel: the plan that lets a program keep calling the vdso it was
// started with (see StasisVdsoProxy in loader_protocol.h for what the loader does with it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "image/reader.h"
#include "restart/loader_protocol.h"

namespace stasis::restart {

// One function a vdso exports (names without their symbol version: clock_gettime and
// __vdso_clock_gettime are two names of one entry).
struct VdsoFunction {
  std::string name;
  uint64_t offset = 0;  // from the vdso's first byte
  uint64_t size = 0;
};

// The functions of a vdso image (an ELF shared object as the kernel maps it). Throws an Error
// naming `what` if the bytes are not a vdso this parser understands.
std::vector<VdsoFunction> vdso_functions(const unsigned char* bytes, size_t len, const std::string& what);

// The kernel's vvar/vdso mappings in this process, as /proc/self/maps shows them.
struct KernelVdso {
  struct Mapping {
    std::string name;
    uint64_t start = 0, end = 0;
  };
  std::vector<Mapping> mappings;  // [vvar], [vvar_vclock], [vdso], in address order
  uint64_t vdso_start = 0, vdso_end = 0;
  uint64_t checksum = 0;          // XXH3-64 of the vdso's bytes
  uint64_t span() const;          // from the lowest mapping's start to the highest's end
};
KernelVdso own_kernel_vdso();

// Whether `img` may run on this kernel's vdso as it is (same bytes and layout: the loader moves
// the new mappings to the saved addresses, as before).
bool same_vdso(const image::Image& img, const KernelVdso& own);

// The proxy for `img` on this kernel: patches for every function the saved vdso exports and a
// free place for the kernel's own mappings. Throws an Error naming the image and the reason when
// the program cannot be restarted on this kernel (no saved vdso bytes: an image from before the
// VDSO record; a function the new kernel lacks and that has no system call to stand for it).
StasisVdsoProxy plan_vdso_proxy(const image::Image& img, const KernelVdso& own);

// The lowest address >= 64 KiB, below `below`, where `len` bytes touch none of `taken` (sorted or
// not; [start, end) pairs). 0 if there is none.
uint64_t free_range_below(const std::vector<std::pair<uint64_t, uint64_t>>& taken, uint64_t len,
                          uint64_t below);

}  // namespace stasis::restart
