// The XSAVE area of a saved thread's signal frame: what a restart on another CPU needs of it.
//
// A suspended thread's registers, FPU and vector state included, stay in the kernel's signal
// frame on its stack (suspend.cc); rt_sigreturn after a restart hands that area to XRSTOR. Two
// CPUs differ in which XSAVE components they have (AVX-512, MPX, PKRU, AMX) and so in how large
// the area is. What a restart needs is the state the threads hold in use (XSTATE_BV), at the same
// offsets, not every feature the saving CPU had: checkpoint side (xsave_frame.cc) records that in
// the image (StasisCpuStateRecord); restart side (restore_xsave.cc) refuses what this CPU cannot
// hold; the restored thread (fit_frame_to_this_cpu) rewrites its frame to fit this CPU, since the
// kernel restores only x87 and SSE state, silently, from a frame larger than its own.
// Header-only parts use no libc: they run inside the checkpointed program.
#pragma once

#include <stdint.h>

#include "image/format.h"

namespace stasis::xsave {

constexpr uint32_t kFrameMagic1 = 0x46505853;  // FP_XSTATE_MAGIC1: the frame has an XSAVE area
constexpr uint32_t kFrameMagic2 = 0x46505845;  // FP_XSTATE_MAGIC2: just after the area
constexpr uint32_t kSoftwareBytesAt = 464;     // struct _fpx_sw_bytes in the FXSAVE area
constexpr uint32_t kHeaderAt = 512;            // the XSAVE header (XSTATE_BV first)
constexpr uint32_t kLegacyAndHeaderSize = 576;  // FXSAVE area + XSAVE header
constexpr uint64_t kLegacyFeatures = 3;         // x87, SSE: every x86-64 CPU has them
constexpr int kPkruComponent = 9;
// Linux's PKRU for a new process (init_pkru_value): access to key 0 only. A thread holding it
// uses no protection key, so a CPU without PKU loses nothing by dropping it.
constexpr uint32_t kDefaultPkru = 0x55555554;

// struct _fpx_sw_bytes (asm/sigcontext.h): what the kernel wrote about the area in the frame.
struct FrameSoftwareBytes {
  uint32_t magic1;
  uint32_t extended_size;  // area + the 4 bytes of magic2
  uint64_t xfeatures;      // components the frame holds
  uint32_t xstate_size;    // offset of magic2
  uint32_t padding[7];
};

inline uint64_t this_cpu_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Offset and size of XSAVE component `i` (>= 2) in the standard format, on this CPU.
inline void component_place(uint32_t i, uint32_t* offset, uint32_t* size) {
  uint32_t a = 0xd, b, c = i, d;
  __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
  *offset = b;
  *size = a;
}

// This CPU's layout of the components its XCR0 enables.
inline void describe_this_cpu(StasisCpuStateRecord* rec) {
  const uint64_t xcr0 = this_cpu_xcr0();
  for (uint32_t i = 2; i < STASIS_XSAVE_COMPONENTS; i++)
    if (xcr0 & (1ull << i)) component_place(i, &rec->component_offset[i], &rec->component_size[i]);
}

}  // namespace stasis::xsave
