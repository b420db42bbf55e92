// KVM at restart, in `stasis restart` (restore_kvm.h): each VM and vCPU descriptor becomes a
// memfd holding its saved state, which the restarted runtime replaces with the real object.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "plugins/kvm/records.h"
#include "plugins/kvm/restore_kvm.h"

namespace stasis::restore {
namespace {

struct Expected {
  uint32_t tag;
  size_t size;
  uint64_t magic;
};

Expected expected_state(const StasisFdRecord& rec) {
  if (rec.kind == STASIS_FD_KVM_VM) return {STASIS_FD_DATA_KVM_VM_STATE, sizeof(StasisKvmVmState), STASIS_KVM_VM_MAGIC};
  return {STASIS_FD_DATA_KVM_VCPU_STATE, sizeof(StasisKvmVcpuState), STASIS_KVM_VCPU_MAGIC};
}

// The saved state of `rec`, checked: the size and magic this build writes.
std::vector<char> saved_state(const image::Image& img, const StasisFdRecord& rec) {
  const Expected want = expected_state(rec);
  if (!img.has_fd_data(rec.fd, want.tag))
    throw Error(fmt::format("{}: KVM descriptor {} has no saved state", img.path(), rec.fd));
  std::vector<char> bytes = img.fd_data(rec.fd, want.tag);
  uint64_t magic = 0;
  if (bytes.size() >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
  if (bytes.size() != want.size || magic != want.magic)
    throw Error(fmt::format("{}: the saved state of KVM descriptor {} is {} bytes with magic {:#x}; this build "
                            "reads {} bytes with magic {:#x} (damaged, or from another version)",
                            img.path(), rec.fd, bytes.size(), magic, want.size, want.magic));
  return bytes;
}

}  // namespace

void check_kvm(const image::Image& img, const StasisFdRecord& rec) {
  saved_state(img, rec);
  if (access("/dev/kvm", R_OK | W_OK) != 0)
    throw Error(fmt::format("{}: descriptor {} is a KVM {}, and /dev/kvm cannot be opened here: {}", img.path(),
                            rec.fd, rec.kind == STASIS_FD_KVM_VM ? "virtual machine" : "vCPU", std::strerror(errno)));
}

int open_kvm_state(const image::Image& img, const StasisFdRecord& rec) {
  std::vector<char> bytes = saved_state(img, rec);
  int fd = memfd_create(rec.kind == STASIS_FD_KVM_VM ? "stasis-kvm-vm-state" : "stasis-kvm-vcpu-state", MFD_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot make a memfd for KVM descriptor {}: {}", rec.fd, std::strerror(errno)));
  if (write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    int saved = errno;
    close(fd);
    throw Error(fmt::format("cannot write the state of KVM descriptor {}: {}", rec.fd, std::strerror(saved)));
  }
  return fd;
}

void describe_kvm(const image::Image& img, const StasisFdRecord& rec, nlohmann::json& state) {
  const auto ids = kind_data_of<StasisKvmData>(rec);
  std::vector<char> bytes = saved_state(img, rec);
  state["vm_fd"] = ids.vm_fd;
  if (rec.kind == STASIS_FD_KVM_VM) {
    const auto* vm = reinterpret_cast<const StasisKvmVmState*>(bytes.data());
    state["type"] = vm->type;
    state["irqchip"] = vm->irqchip != 0;
    state["pit"] = vm->pit != 0;
    state["clock_ns"] = vm->clock.clock;
    auto& slots = state["memory_slots"] = nlohmann::json::array();
    for (uint32_t i = 0; i < vm->slot_count && i < STASIS_KVM_MAX_SLOTS; i++)
      slots.push_back({{"slot", vm->slots[i].slot}, {"guest_phys_addr", vm->slots[i].guest_phys_addr},
                       {"size", vm->slots[i].memory_size}, {"userspace_addr", vm->slots[i].userspace_addr}});
    return;
  }
  const auto* vcpu = reinterpret_cast<const StasisKvmVcpuState*>(bytes.data());
  state["vcpu_id"] = ids.vcpu_id;
  state["rip"] = vcpu->regs.rip;
  state["mp_state"] = vcpu->mp_state.mp_state;
  state["tsc_khz"] = vcpu->tsc_khz;
  state["fpu"] = vcpu->have_xsave ? "xsave" : "legacy";
  state["msrs"] = vcpu->msrs.nmsrs;
  state["cpuid_entries"] = vcpu->cpuid.nent;
  state["run_exit_reason"] = reinterpret_cast<const kvm_run*>(vcpu->run)->exit_reason;
}

}  // namespace stasis::restore
