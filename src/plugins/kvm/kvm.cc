// KVM (checkpoint side): a descriptor for /dev/kvm, a VM or a vCPU is refused, naming KVM.
// The VM's state (memory slots, vCPU registers, irqchip, clock) lives in the kernel behind those
// descriptors, where no user-space read of memory or /proc reaches it; reopening /dev/kvm at
// restart, as a plain device, would give QEMU an empty VM: a silent wrong restart.
#include <sys/sysmacros.h>

#include "plugins/kvm/kvm.h"

namespace stasis::rt {

namespace {
constexpr unsigned kKvmMajor = 10, kKvmMinor = 232;  // misc device "kvm" (devices.txt)

// Which KVM object the descriptor is, or nullptr: /dev/kvm (by its device number, whatever path
// it was opened by), anon_inode:kvm-vm, anon_inode:kvm-vcpu:N.
const char* kvm_object(const FdProbe& probe) {
  if (S_ISCHR(probe.st.st_mode) && major(probe.st.st_rdev) == kKvmMajor &&
      minor(probe.st.st_rdev) == kKvmMinor)
    return "the KVM device";
  if (str_starts(probe.link, "anon_inode:kvm-vm")) return "a KVM virtual machine";
  if (str_starts(probe.link, "anon_inode:kvm-vcpu")) return "a KVM vCPU";
  if (str_starts(probe.link, "anon_inode:kvm-")) return "a KVM object";
  return nullptr;
}
}  // namespace

int capture_kvm_fd(const FdProbe& probe, StasisFdRecord&, FdDataList&, LogLine& error) {
  const char* what = kvm_object(probe);
  if (!what) return 0;
  error << "descriptor " << probe.fd << " (" << probe.link << ") is " << what
        << ": Stasis cannot save a KVM virtual machine's state, which the kernel holds; not "
           "checkpointing (a QEMU guest under TCG, -accel tcg, can be checkpointed)";
  return -1;
}

}  // namespace stasis::rt
