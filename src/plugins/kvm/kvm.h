// KVM virtual machines, checkpoint side (runtime, kvm.cc): for now every KVM descriptor is
// refused at once, naming KVM (README.md says what a plugin would have to save).
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_kvm_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
}  // namespace stasis::rt
