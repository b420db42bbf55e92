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

// Every count in a state within its table (the runtime would read past it otherwise).
void check_counts(const image::Image& img, const StasisFdRecord& rec, const std::vector<char>& bytes) {
  auto over = [&](const char* what, uint64_t count, uint64_t most) {
    if (count > most)
      throw Error(fmt::format("{}: the saved state of KVM descriptor {} has {} {}, more than the {} it can hold "
                              "(damaged)", img.path(), rec.fd, count, what, most));
  };
  if (rec.kind == STASIS_FD_KVM_VM) {
    const auto* vm = reinterpret_cast<const StasisKvmVmState*>(bytes.data());
    const StasisKvmVmWiring& w = vm->wiring;
    over("memory slots", vm->slot_count, STASIS_KVM_MAX_SLOTS);
    over("enabled capabilities", w.cap_count, STASIS_KVM_MAX_CAPS);
    over("GSI routes", w.routing.nr, STASIS_KVM_MAX_ROUTES);
    over("ioeventfds", w.ioeventfd_count, STASIS_KVM_MAX_IOEVENTFDS);
    over("irqfds", w.irqfd_count, STASIS_KVM_MAX_IRQFDS);
    over("coalesced MMIO zones", w.coalesced_count, STASIS_KVM_MAX_COALESCED);
    for (const auto& range : w.msr_filter.ranges) over("MSRs in a filter range", range.nmsrs, 8 * STASIS_KVM_MSR_BITMAP_BYTES);
    return;
  }
  const auto* vcpu = reinterpret_cast<const StasisKvmVcpuState*>(bytes.data());
  over("enabled capabilities", vcpu->wiring.cap_count, STASIS_KVM_MAX_VCPU_CAPS);
  over("kvm_run mappings", vcpu->mapping_count, STASIS_KVM_MAX_RUN_MAPS);
  over("CPUID entries", vcpu->cpuid.nent, STASIS_KVM_MAX_CPUID);
  over("MSRs", vcpu->msrs.nmsrs, STASIS_KVM_MAX_MSRS);
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
  check_counts(img, rec, bytes);
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
    const StasisKvmVmWiring& w = vm->wiring;
    auto& caps = state["enabled_caps"] = nlohmann::json::array();
    for (uint32_t i = 0; i < w.cap_count; i++) caps.push_back(w.caps[i].cap);
    state["gsi_routes"] = w.routing_set ? static_cast<int64_t>(w.routing.nr) : -1;
    state["irqfds"] = w.irqfd_count;
    state["ioeventfds"] = w.ioeventfd_count;
    state["coalesced_zones"] = w.coalesced_count;
    state["msr_filter"] = w.msr_filter.set != 0;
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
  state["enabled_caps"] = vcpu->wiring.cap_count;
  state["mce_cap"] = vcpu->wiring.have_mce ? static_cast<int64_t>(vcpu->wiring.mce_cap) : -1;
  state["kvm_signal_mask"] = vcpu->wiring.have_signal_mask != 0;
  state["pending_read"] = vcpu->pending_read != 0;
  state["run_exit_reason"] = reinterpret_cast<const kvm_run*>(vcpu->run)->exit_reason;
}

}  // namespace stasis::restore
