// KVM virtual machines, `stasis restart` side (restore_kvm.cc). A VM belongs to the memory of
// the process that made it, so `stasis restart` cannot make it for the program (it execs the
// loader after): it checks each saved state and places a memfd holding it at the descriptor's
// number; the restarted runtime (recreate.cc) builds the VM from it there.
#pragma once
#include "plugins/files/restore_kinds.h"

namespace stasis::restore {
void check_kvm(const image::Image& img, const StasisFdRecord& rec);
int open_kvm_state(const image::Image& img, const StasisFdRecord& rec);
void describe_kvm(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state);
}  // namespace stasis::restore
