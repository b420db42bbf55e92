// Checkpoint and restored-thread halves of the XSAVE frame handling (xsave_frame.h says why).
#include "plugins/threads/xsave_frame.h"

#include <ucontext.h>

#include "runtime/rt.h"

namespace stasis::rt {

using namespace xsave;

namespace {
// Bytes of architectural state at the start of component i's place of `size` bytes: CPUID may
// give a larger place (BNDCSR: 16 of 64, PKRU: 4 of 8) whose rest XSAVE never writes, so it
// holds whatever the stack held before the frame.
uint32_t state_bytes(uint32_t component, uint32_t size) {
  const uint32_t state = component == 4 ? 16 : component == kPkruComponent ? 4 : size;
  return state < size ? state : size;
}

bool all_zero(const unsigned char* p, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}
}  // namespace

// A component counts as in use when XSTATE_BV says so and its bytes differ from its initial
// state, which is all zeros for every component past SSE: CPUs and emulators may mark a component
// in use that holds nothing (QEMU's TCG marks every one), and glibc leaves AVX-512 registers
// holding data. PKRU at Linux's default counts as unused too (kDefaultPkru).
uint64_t frame_xfeatures_in_use(const ucontext_t* uc, const StasisCpuStateRecord& layout) {
  const auto* area = reinterpret_cast<const unsigned char*>(uc->uc_mcontext.fpregs);
  if (!area) return kLegacyFeatures;
  const auto* sw = reinterpret_cast<const FrameSoftwareBytes*>(area + kSoftwareBytesAt);
  if (sw->magic1 != kFrameMagic1) return kLegacyFeatures;
  const uint64_t marked = *reinterpret_cast<const uint64_t*>(area + kHeaderAt) & sw->xfeatures;
  uint64_t in_use = kLegacyFeatures;
  for (uint32_t i = 2; i < STASIS_XSAVE_COMPONENTS; i++) {
    if (!(marked & (1ull << i))) continue;
    const uint32_t at = layout.component_offset[i], size = layout.component_size[i];
    // A component this CPU does not place inside the frame: keep it, unknown, as in use.
    if (at < kLegacyAndHeaderSize || size == 0 || at + size > sw->xstate_size) {
      in_use |= 1ull << i;
      continue;
    }
    if (all_zero(area + at, state_bytes(i, size))) continue;
    if (i == kPkruComponent && *reinterpret_cast<const uint32_t*>(area + at) == kDefaultPkru) continue;
    in_use |= 1ull << i;
  }
  return in_use;
}

void fit_frame_to_this_cpu(ucontext_t* uc) {
  auto* area = reinterpret_cast<unsigned char*>(uc->uc_mcontext.fpregs);
  if (!area) return;
  auto* sw = reinterpret_cast<FrameSoftwareBytes*>(area + kSoftwareBytesAt);
  if (sw->magic1 != kFrameMagic1) return;
  const uint64_t xcr0 = this_cpu_xcr0();
  if ((sw->xfeatures & ~xcr0) == 0) return;  // this CPU holds every component the frame has
  // The frame came from a CPU with components this one lacks; the restart checked that the
  // threads held none of them in use (restore_xsave.cc). Drop them, and end the area after the
  // last component kept: a frame larger than the kernel's own is read as x87 and SSE only.
  auto* xstate_bv = reinterpret_cast<uint64_t*>(area + kHeaderAt);
  *xstate_bv &= xcr0;
  sw->xfeatures &= xcr0;
  uint32_t end = kLegacyAndHeaderSize;
  for (uint32_t i = 2; i < STASIS_XSAVE_COMPONENTS; i++) {
    if (!(sw->xfeatures & (1ull << i))) continue;
    uint32_t offset, size;
    component_place(i, &offset, &size);
    if (offset + size > end) end = offset + size;
  }
  if (end > sw->xstate_size) {
    // The restart compared the layouts, so this is a bug: the kernel would restore x87 and SSE
    // only, and the program would go on with other vector registers. End it, saying why.
    LogLine error;
    error << "restart: thread " << sys_gettid() << "'s saved XSAVE area (" << sw->xstate_size
          << " bytes) cannot hold this CPU's layout of its components (" << end << " bytes)";
    error.emit_restart_failure();
    STASIS_SYS1(SYS_exit_group, 70);
  }
  sw->xstate_size = end;
  sw->extended_size = end + 4;
  *reinterpret_cast<uint32_t*>(area + end) = kFrameMagic2;
}

}  // namespace stasis::rt
