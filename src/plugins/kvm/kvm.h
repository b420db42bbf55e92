// KVM virtual machines, checkpoint side (runtime, kvm.cc): the capture table's row `kvm`.
// Restart side: recreate.cc (the restarted runtime) and restore_kvm.h (`stasis restart`).
#pragma once
#include "plugins/files/capture.h"

namespace stasis::rt {
int capture_kvm_fd(const FdProbe& probe, StasisFdRecord& r, FdDataList& data, LogLine& error);
// A vCPU's kvm_run area: no pages saved (they are in the vCPU's state).
bool claim_kvm_run_mapping(const Mapping& m, StasisRegionRecord* r);
}  // namespace stasis::rt
